"""The `agentrft` command line."""

from agentrft.cli.app import app, main

__all__ = ["app", "main"]
