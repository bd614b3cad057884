"""Log records are scrubbed before they are printed: the CLI's stderr handler and the
runtime app's handlers carry `agentrft.redact.ScrubFilter`.

The secrets: a URL's password, a bearer token and an AWS access key id, put where a real
warning quotes them (a dataset's path and its first column's name).
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentrft.cli.app import app
from agentrft.redact import ScrubFilter

URL_PASSWORD = "urlpw-Q7m2x9v4"
BEARER = "tok-9a8b7c6d5e4f3a2b"
AWS_KEY_ID = "AKIAQ3EXAMPLE7SECRT1"
SECRETS = (URL_PASSWORD, BEARER, AWS_KEY_ID)


@pytest.fixture
def agentrft_logger() -> Iterator[logging.Logger]:
    """The `agentrft` logger, its level, handlers and propagation restored afterwards."""
    logger = logging.getLogger("agentrft")
    saved = (logger.level, list(logger.handlers), logger.propagate)
    yield logger
    logger.setLevel(saved[0])
    logger.handlers[:] = saved[1]
    logger.propagate = saved[2]


def _dataset(tmp_path: Path, first_column: str) -> Path:
    folder = tmp_path / AWS_KEY_ID
    folder.mkdir()
    path = folder / "rows.jsonl"
    path.write_text(json.dumps({first_column: json.dumps({"secret": 3, "low": 1, "high": 9})}))
    return path


@pytest.mark.parametrize(
    "first_column", [f"http://agent:{URL_PASSWORD}@proxy/v1", f"Bearer {BEARER}"]
)
def test_a_cli_warning_is_printed_scrubbed(
    tmp_path: Path, tiny_plugins: Any, agentrft_logger: logging.Logger, first_column: str
) -> None:
    # `dataset check` warns that it uses the first column, naming the file and the column.
    path = _dataset(tmp_path, first_column)
    result = CliRunner().invoke(
        app, ["dataset", "check", str(path), "--task", "find_number"], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    (warning,) = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert "has no 'prompt' column; using its first column" in warning
    # (stdout echoes the path the user typed; that is the command's report, not a log line)
    assert not any(s in result.stderr for s in SECRETS), result.stderr
    assert f"{tmp_path}/***/rows.jsonl" in warning  # the AWS key id in the path
    assert ("agent:***@proxy" in warning) or ("Bearer ***" in warning)


def test_verbose_shows_info_lines_for_that_command_only(
    tiny_plugins: Any, agentrft_logger: logging.Logger, capsys: pytest.CaptureFixture[str]
) -> None:
    log = logging.getLogger("agentrft.test")
    assert CliRunner().invoke(app, ["-v", "tasks"]).exit_code == 0
    assert agentrft_logger.getEffectiveLevel() == logging.INFO
    log.info("token=%s", "sk-abcdefghijklmnop1234")  # the args are scrubbed too
    assert capsys.readouterr().err == "info agentrft.test: token=***\n"
    assert CliRunner().invoke(app, ["-vv", "tasks"]).exit_code == 0
    assert agentrft_logger.getEffectiveLevel() == logging.DEBUG
    assert CliRunner().invoke(app, ["tasks"]).exit_code == 0
    assert agentrft_logger.getEffectiveLevel() == logging.WARNING
    log.info("not shown")
    log.warning("shown")
    assert capsys.readouterr().err == "warning: shown\n"


def test_the_filter_scrubs_message_args_and_traceback() -> None:
    record = logging.LogRecord("x", logging.WARNING, __file__, 1, "calling %s", None, None)
    record.args = (f"http://agent:{URL_PASSWORD}@proxy/v1",)
    try:
        raise RuntimeError(f"the server said Authorization: Bearer {BEARER} for {AWS_KEY_ID}")
    except RuntimeError:
        import sys

        record.exc_info = sys.exc_info()
    assert ScrubFilter().filter(record)
    text = logging.Formatter().format(record)
    assert "calling http://agent:***@proxy/v1" in text
    assert "RuntimeError: the server said Authorization: Bearer *** for ***" in text
    assert not any(s in text for s in SECRETS), text
    # A record whose args do not fit its format is still written (and scrubbed).
    bad = logging.LogRecord("x", logging.WARNING, __file__, 1, "%d items", (AWS_KEY_ID,), None)
    assert ScrubFilter().filter(bad) and AWS_KEY_ID not in bad.getMessage()


def test_the_runtime_apps_handlers_scrub(agentrft_logger: logging.Logger) -> None:
    pytest.importorskip("bedrock_agentcore")
    from agentrft.backends.sagemaker.runtime import main as runtime_main

    agentrft_logger.handlers.clear()  # as in a fresh runtime process
    runtime_main._configure_logging()
    runtime_main.load_app("wordle")  # gives bedrock_agentcore.app its own handler
    runtime_main._scrub_log_handlers()
    ours, theirs = logging.getLogger("agentrft"), logging.getLogger("bedrock_agentcore.app")
    assert len(ours.handlers) == 1 and len(theirs.handlers) == 1
    pairs = [
        (logging.getLogger("agentrft.runtime"), ours.handlers[0]),
        (theirs, theirs.handlers[0]),
    ]
    for logger, handler in pairs:
        assert isinstance(handler, logging.StreamHandler)
        stream = io.StringIO()
        old = handler.setStream(stream)
        try:
            logger.warning("policy at http://agent:%s@proxy/v1 as %s", URL_PASSWORD, AWS_KEY_ID)
        finally:
            handler.setStream(old)
        written = stream.getvalue()
        assert "policy at http://agent:***@proxy/v1 as ***" in written, written
        assert not any(s in written for s in SECRETS)
