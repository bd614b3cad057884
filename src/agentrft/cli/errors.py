"""How the CLI reports bad input: one clear paragraph on stderr and a non-zero exit code, no
traceback. `agentrft --debug ...` (or AGENTRFT_DEBUG=1) lets exceptions through instead.
"""

import functools
import os
from collections.abc import Callable
from typing import Any, TypeVar

import click
import typer
from rich.console import Console
from rich.text import Text

from agentrft.backend import BackendError, BackendUnavailable
from agentrft.config import ConfigError
from agentrft.datasets import DatasetError
from agentrft.plugins import KNOWN_BACKEND_EXTRAS, PluginError
from agentrft.policies.resolve import PolicySpecError
from agentrft.redact import scrub_text
from agentrft.reward_check import RewardCheckError
from agentrft.task import TaskInputError

F = TypeVar("F", bound=Callable[..., Any])

#: Exit code for a missing backend or backend dependency (the message names the extra).
EXIT_UNAVAILABLE = 2

_KNOWN = (
    BackendError,
    ConfigError,
    DatasetError,
    PluginError,
    PolicySpecError,
    RewardCheckError,
    TaskInputError,
    BackendUnavailable,
    FileNotFoundError,
    IsADirectoryError,
    PermissionError,
)


class CliError(Exception):
    """Bad input found by a command; `message` is what the user reads."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def debug_from_env() -> bool:
    return os.environ.get("AGENTRFT_DEBUG", "") not in ("", "0")


class _State:
    debug: bool = debug_from_env()


state = _State()


def error_console() -> Console:
    return Console(stderr=True, highlight=False, soft_wrap=True)


def exit_code(exc: BaseException) -> int:
    if isinstance(exc, CliError):
        return exc.code
    if isinstance(exc, BackendUnavailable):
        return EXIT_UNAVAILABLE
    if isinstance(exc, PluginError) and any(
        f"agentrft[{extra}]" in str(exc) for extra in KNOWN_BACKEND_EXTRAS.values()
    ):
        return EXIT_UNAVAILABLE
    return 1


def describe(exc: BaseException) -> str:
    """The message a user reads for `exc`.

    Our own and plugins' exception classes carry messages written for users; a bare builtin
    (KeyError, TypeError, ...) escaping a command is a bug, and says so.
    """
    if isinstance(exc, OSError) and exc.filename is not None:
        return f"{exc.filename}: {exc.strerror or exc}"
    if isinstance(exc, (CliError, *_KNOWN)):
        return str(exc)
    if type(exc).__module__ != "builtins":
        return f"{exc} ({type(exc).__name__}; `agentrft --debug ...` shows the traceback)"
    return (
        f"unexpected {type(exc).__name__}: {exc}. This is a bug or an unhandled case; "
        f"rerun with `agentrft --debug ...` for the traceback"
    )


def handle_errors(fn: F) -> F:
    """Wrap a command so expected failures print one message and exit non-zero."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (typer.Exit, click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise  # typer.Exit is not click's Exit in typer >= 0.16: both mean "exit with code"
        except Exception as exc:
            if state.debug:
                raise
            # Secrets never reach the terminal (a URL's password in a connection error).
            message = scrub_text(describe(exc))
            error_console().print(Text("error: ", style="bold red") + Text(message))
            raise typer.Exit(exit_code(exc)) from None

    return wrapper  # type: ignore[return-value]
