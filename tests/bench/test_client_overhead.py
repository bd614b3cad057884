"""The default policy client's cost, as ratios (never times), so that a dependency update
that slows it fails here: bench/rollouts.py at 64 episodes in flight, the default transport
against the agent loop alone and against the openai SDK's transport on the same machine in
the same run.

Measured on 2 AMD EPYC cores (docs/concepts.md): the default does ~36-46% of the agent
loop's own turns/s at zero latency and ~3x the SDK's; its wall time at 20 ms a turn is
~2.9x the ideal against the SDK's ~11x. The bars below sit well inside those, to hold on a
busy CI machine. (Issue goal not yet met: >= 50% of the loop and <= 1.2x the ideal.)
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "rollouts.py"


def test_the_default_client_stays_cheap_against_the_loop_and_the_sdk(tmp_path: Path) -> None:
    out = tmp_path / "rollouts.json"
    args = ["--transport", "default,sdk", "--episodes", "64", "--turns", "5", "--b-turns", "5",
            "--concurrency", "64", "--latency-ms", "20", "--repeat", "3",
            "--max-others", "inf", "--extra-runs", "0", "--json", str(out)]  # fmt: skip
    run = subprocess.run([sys.executable, str(BENCH), *args], capture_output=True, text=True,
                         timeout=600, cwd=BENCH.parent)  # fmt: skip
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    figures = json.loads(out.read_text())
    default, sdk = figures["transports"]["default"], figures["transports"]["sdk"]
    loop = figures["loop_turns_per_s"]
    report = json.dumps(figures, indent=1)
    assert default["zero_latency_turns_per_s"] >= 0.2 * loop, report
    assert default["zero_latency_turns_per_s"] >= 1.8 * sdk["zero_latency_turns_per_s"], report
    assert default["vs_ideal"]["5"] * 2 <= sdk["vs_ideal"]["5"], report
