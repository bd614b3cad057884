"""Importing the plugin (tau2, litellm) and playing scored episodes opens no connection:
litellm's price-table fetch is off, tau2's langfuse and redis cache are off."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = r"""
import socket, json
attempts = []
real = socket.socket.connect
def connect(self, address):
    attempts.append(repr(address))
    raise OSError("network blocked by the test")
socket.socket.connect = connect
socket.create_connection = lambda address, *a, **k: connect(None, address)

import agentrft_tau2.plugin  # the entry point, as `agentrft tasks` loads it
from agentrft import run_sync, run_episodes
from agentrft_tau2.task import AirlineTask, MockTask

for task in (AirlineTask(), MockTask()):
    rows = [r["prompt"] for r in task.make_dataset("validation", 2, 0)]
    trajs = run_sync(run_episodes(task, rows, task.expert()))
    assert all(t.reward.outcome == "solved" for t in trajs), [t.reward for t in trajs]
print(json.dumps(attempts))
"""


def test_import_and_episodes_open_no_connection() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"
