"""MCP servers in a runtime bundle: a plugin declares them (`BundleOptions.mcp_servers`),
the plan carries a stdio server that is a Python module of a bundled package and refuses
one the Python-only runtime could not start, lists HTTP servers as reached, and brings the
`mcp` extra a plugin asks for with `agentrft[mcp]`."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from agentrft_inventory.task import inventory_server

from agentrft import BundleOptions
from agentrft.backends.sagemaker.jobs.bundle import (
    BundleError,
    DeclaredOptions,
    plan_bundle,
)
from agentrft.mcp import HTTPServer, StdioServer
from agentrft.mcp.connection import MCPConnection


def plan(*servers: StdioServer | HTTPServer, tmp: Path) -> list[str]:
    declared = DeclaredOptions(
        "inventory", "agentrft-inventory", BundleOptions(mcp_servers=servers)
    )
    return plan_bundle("inventory", "agentrft-inventory", tmp, options=[declared]).describe()


def test_the_inventory_dry_run_lists_its_carried_server_and_the_mcp_extra() -> None:
    agentrft = str(Path(sys.executable).with_name("agentrft"))
    r = subprocess.run([agentrft, "deploy", "--task", "inventory", "--dry-run"],
                       capture_output=True, text=True, timeout=120,
                       env={**os.environ, "COLUMNS": "400"})  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "declares BundleOptions: MCP servers inventory" in r.stdout
    assert (
        "MCP server 'inventory' (stdio: python -m agentrft_inventory.server), declared by plugin "
        "'inventory' (distribution agentrft-inventory): carried in the bundle" in r.stdout
    )
    assert "'mcp<3,>=2.3'" in r.stdout  # agentrft[mcp], which the plugin requires


def test_an_http_server_is_listed_as_reached(tmp_path: Path) -> None:
    steps = plan(inventory_server(), HTTPServer(name="desk", url="https://desk.example/mcp"),
                 tmp=tmp_path)  # fmt: skip
    assert any("MCP server 'desk' (streamable HTTP, https://desk.example/mcp)" in s and
               "the runtime must reach it" in s for s in steps)  # fmt: skip


@pytest.mark.parametrize(
    ("server", "says"),
    [
        (StdioServer(name="npm", command="npx", args=("-y", "@acme/server")), "runs Python only"),
        (StdioServer(name="script", command=sys.executable, args=("server.py",)), "runs Python only"),
        (StdioServer(name="elsewhere", command=sys.executable, args=("-m", "pytest")),
         "whose package 'pytest' the bundle does not carry"),
    ],
)  # fmt: skip
def test_a_server_the_runtime_could_not_start_is_refused(
    tmp_path: Path, server: StdioServer, says: str
) -> None:
    with pytest.raises(BundleError, match=says):
        plan(server, tmp=tmp_path)


def test_mcp_servers_must_be_server_declarations() -> None:
    with pytest.raises(TypeError, match="StdioServer / HTTPServer"):
        BundleOptions(mcp_servers=("python -m x",))


def test_a_carried_server_imports_from_this_process_path(tmp_path: Path, monkeypatch) -> None:
    """In a bundle the server's package is on the runtime's path, not installed: the server
    process gets this process's import path (the SDK's default environment has none)."""
    pkg = tmp_path / "carried_srv"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "__main__.py").write_text(textwrap.dedent("""
        from mcp.server import MCPServer
        server = MCPServer("carried")
        @server.tool()
        def ping() -> str:
            return "pong"
        server.run()
    """))  # fmt: skip
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("PYTHONPATH", raising=False)
    spec = StdioServer(name="carried", command=sys.executable, args=("-m", "carried_srv"))

    async def go() -> list[str]:
        conn = await MCPConnection.open(spec)
        try:
            return [t.name for t in conn.tools]
        finally:
            await conn.close()

    assert asyncio.run(go()) == ["ping"]
