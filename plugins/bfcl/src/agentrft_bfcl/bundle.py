"""How `agentrft deploy` installs this plugin in an AgentCore runtime bundle.

bfcl-eval pins what its whole leaderboard needs: model SDKs, sentence-transformers (torch,
427 MB for aarch64) and faiss-cpu 1.11.0 (no manylinux2014 aarch64 wheel) for its memory
and web-search categories. The multi-turn tasks import far less: the list below is what
playing every entry of the plugin's tasks with the expert, scoring it and its reward samples
imports (sys.modules in the suite venv: base, long_context, miss_func and miss_param, 800
episodes), installed with bfcl-eval's own pins.
`bash scripts/bundle_check.sh bfcl` builds the bundle and plays an episode through it.
"""

from __future__ import annotations

from agentrft import BundleOptions, hookimpl

#: bfcl-eval without its dependencies, but these of them (by its metadata's names).
RUNTIME_BUNDLE = BundleOptions(
    no_deps={
        "bfcl-eval": (
            "filelock",  # bfcl_eval.utils
            "mpmath",  # the MathAPI class
            "pydantic",
            "tenacity",
            "tree_sitter",  # model_handler.utils (the decoder), with the two grammars
            "tree-sitter-java",
            "tree-sitter-javascript",
        )
    }
)


@hookimpl
def agentrft_bundle_options(tasks: list[str]) -> BundleOptions:
    """The same slim install for every task of the plugin (they share bfcl-eval's code)."""
    return RUNTIME_BUNDLE
