"""Log records on stderr, scrubbed of secrets: one handler on the root logger, so records
from agentrft and from the libraries it drives (httpx, litellm, mlflow) all pass through
`agentrft.redact.ScrubFilter` before anything is printed.

Warnings and errors only, unless `-v` (agentrft's INFO) or `-vv` (agentrft's DEBUG).
"""

from __future__ import annotations

import logging
import sys
from typing import Any, TextIO

from agentrft.redact import ScrubFilter


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to `sys.stderr` as it is at each record: typer's test runner swaps it for
    every command it invokes, and a stream bound once would outlive it."""

    def __init__(self) -> None:
        super().__init__()

    @property  # type: ignore[override]
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:  # StreamHandler.__init__ assigns one
        pass


class _Formatter(logging.Formatter):
    """`warning: message`, the CLI's own style; with `-v`, the logger's name too."""

    def __init__(self, verbose: bool) -> None:
        super().__init__("%(message)s")
        self.verbose = verbose

    def format(self, record: logging.LogRecord) -> str:
        where = f" {record.name}" if self.verbose else ""
        return f"{record.levelname.lower()}{where}: {super().format(record)}"


def configure_logging(verbosity: int = 0) -> logging.Handler:
    """Install (once per process) the scrubbing stderr handler on the root logger and set
    agentrft's level for this command: WARNING, INFO (`verbosity` 1) or DEBUG (2+).
    Returns the handler."""
    root = logging.getLogger()
    handler = next((h for h in root.handlers if isinstance(h, _StderrHandler)), None)
    if handler is None:
        handler = _StderrHandler()
        handler.addFilter(ScrubFilter())
        root.addHandler(handler)
    handler.setFormatter(_Formatter(verbose=verbosity > 0))
    # NOTSET: agentrft inherits the root's level (WARNING unless the host program set one);
    # set per command, since tests run many commands in one process.
    level = {0: logging.NOTSET, 1: logging.INFO}.get(verbosity, logging.DEBUG)
    logging.getLogger("agentrft").setLevel(level)
    return handler
