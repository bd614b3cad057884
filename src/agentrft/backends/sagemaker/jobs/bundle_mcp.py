"""The MCP servers a bundle's plugins declare (`BundleOptions.mcp_servers`, docs/mcp.md):
checked against what AgentCore's Python-only code runtime can start, and listed for
`deploy --dry-run`."""

from __future__ import annotations

import importlib.metadata as md
import sys
from collections.abc import Sequence
from pathlib import Path

from agentrft.backends.sagemaker.jobs.bundle_merge import (
    BundleError,
    DeclaredOptions,
    LocalDistribution,
    normalise,
    req_name,
)
from agentrft.mcp.servers import HTTPServer, StdioServer

__all__ = ["check_mcp_servers", "mcp_server_lines"]


def mcp_server_lines(declared: Sequence[DeclaredOptions]) -> list[str]:
    """The MCP servers the plugins declare, and how the runtime reaches each."""
    lines = []
    for d in declared:
        for server in d.options.mcp_servers:
            if isinstance(server, HTTPServer):
                lines.append(
                    f"MCP server {server.name!r} (streamable HTTP, {server.url}), declared "
                    f"by {d.source}: not carried; the runtime must reach it"
                )
            else:
                module = server.args[1]
                lines.append(
                    f"MCP server {server.name!r} (stdio: python -m {module}), declared by "
                    f"{d.source}: carried in the bundle, started by the runtime's "
                    f"interpreter ({server.isolation} isolation)"
                )
    return lines


def check_mcp_servers(local: Sequence[LocalDistribution], requirements: Sequence[str],
                      options: Sequence[DeclaredOptions]) -> None:  # fmt: skip
    """Refuse a declared stdio server the runtime could not start: AgentCore's code runtime
    has Python only, so the server must be a module (`python -m pkg.server`) of a package
    the bundle carries (a plugin's, or a requirement's)."""
    tops = {p.name for d in local for p in d.packages}
    required = {normalise(req_name(r)) for r in requirements}
    by_package = md.packages_distributions()
    for d in options:
        for server in d.options.mcp_servers:
            if not isinstance(server, StdioServer | HTTPServer):
                raise BundleError(
                    f"{d.source}: BundleOptions.mcp_servers holds {server!r:.80}; declare "
                    "agentrft.mcp.StdioServer / HTTPServer objects"
                )
            if isinstance(server, HTTPServer):
                continue
            python = (
                Path(server.command).name.startswith("python") or server.command == sys.executable
            )
            if not python or len(server.args) < 2 or server.args[0] != "-m":
                raise BundleError(
                    f"{d.source}: MCP server {server.name!r} runs {server.command!r}; the "
                    "AgentCore runtime runs Python only, so a carried server must be a Python "
                    "module started as command=sys.executable, args=('-m', 'pkg.server'). "
                    "Serve any other server over HTTP (agentrft.mcp.HTTPServer) instead"
                )
            top = server.args[1].split(".")[0]
            owners = {normalise(x) for x in by_package.get(top, [])}
            if top not in tops and not owners & required:
                raise BundleError(
                    f"{d.source}: MCP server {server.name!r} runs module {server.args[1]!r}, "
                    f"whose package {top!r} the bundle does not carry; put the server in the "
                    "plugin's package, or require the distribution that provides it"
                )
