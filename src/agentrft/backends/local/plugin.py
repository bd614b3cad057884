"""Plugin registration for the local backend (import-light: the backend imports torch lazily)."""

from __future__ import annotations

from typing import Any

from agentrft.hookspecs import hookimpl


@hookimpl
def agentrft_addhooks(pluginmanager: Any) -> None:
    from agentrft.backends.local import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


@hookimpl
def agentrft_backends() -> list[type]:
    from agentrft.backends.local.backend import LocalBackend

    return [LocalBackend]


@hookimpl
def agentrft_cli(app: Any) -> None:
    from agentrft.backends.local import ui

    ui.register(app)
