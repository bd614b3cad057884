"""agentrft.testing's loopback helpers: a wait that returns once a port listens, and fails
clearly (not silently after its loop) when the server exits first or never listens."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from agentrft.testing import free_port, wait_for_port


def test_returns_once_the_port_listens() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        wait_for_port(s.getsockname()[1], timeout_s=5)


def test_a_server_that_exits_first_is_named_with_its_stderr() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stderr.write('no config'); sys.exit(3)"],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    with pytest.raises(RuntimeError, match=r"exited with 3 before listening .*no config"):
        wait_for_port(free_port(), timeout_s=30, process=proc)


def test_nothing_listening_is_a_timeout() -> None:
    with pytest.raises(TimeoutError, match=r"nothing listened on 127\.0\.0\.1:\d+ within 0\.3s"):
        wait_for_port(free_port(), timeout_s=0.3)
