"""Plugin registration for the local backend (import-light: the backend imports torch lazily)."""

from __future__ import annotations

from agentrft.hookspecs import hookimpl


@hookimpl
def agentrft_backends() -> list[type]:
    from agentrft.backends.local.backend import LocalBackend

    return [LocalBackend]
