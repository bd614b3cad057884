"""`agentrft new-task NAME --from-mcp SPEC`: the placeholders of the MCP task template, made
from a live server's tool listing (templates/new_task_mcp/).

SPEC is a command line (a stdio server, split as a shell would) or an http(s) URL (a
streamable-HTTP server; `headers` are used to list the tools and never written: the
generated task reads them from an environment variable)."""

from __future__ import annotations

import asyncio
import json
import shlex
import sys
from typing import Any

from agentrft.mcp.connection import MCPConnection, require_mcp
from agentrft.mcp.servers import HTTPServer, MCPServerSpec, StdioServer
from agentrft.scaffold import ScaffoldError, TaskNames

__all__ = ["server_spec", "template_values"]

#: A placeholder argument of each JSON type, for the expert stub's first call.
_PLACEHOLDERS: dict[str, Any] = {
    "string": "TODO",
    "integer": 0,
    "number": 0,
    "boolean": False,
    "array": [],
    "object": {},
}


def server_spec(spec: str, name: str, headers: dict[str, str] | None = None) -> MCPServerSpec:
    """The server `--from-mcp SPEC` names, called `name`."""
    if spec.startswith(("http://", "https://")):
        return HTTPServer(name=name, url=spec, headers=headers or {})
    try:
        argv = shlex.split(spec)
    except ValueError as exc:
        raise ScaffoldError(f"--from-mcp {spec!r}: not a command line ({exc})") from None
    if not argv:
        raise ScaffoldError("--from-mcp needs a command line or an http(s) URL")
    return StdioServer(name=name, command=argv[0], args=tuple(argv[1:]))


def list_tools(server: MCPServerSpec) -> list[Any]:
    """The server's tools; `ScaffoldError` naming the server and why when it cannot say."""
    try:
        require_mcp()
    except ImportError as exc:
        raise ScaffoldError(str(exc)) from None

    async def go() -> list[Any]:
        conn = await MCPConnection.open(server)
        try:
            return list(conn.tools)
        finally:
            await conn.close()

    try:
        tools = asyncio.run(go())
    except Exception as exc:
        raise ScaffoldError(f"--from-mcp: could not list the server's tools: {exc}") from None
    if not tools:
        raise ScaffoldError("--from-mcp: the server lists no tools; there is nothing to wire")
    return tools


def template_values(
    names: TaskNames, server: MCPServerSpec, tools: list[Any], *, judged: bool = False
) -> dict[str, str]:
    """The MCP template's placeholders for `server` and its listed `tools`; `judged`: a
    rubric judge decides success (judge.py)."""
    first = next((t for t in tools if not (t.input_schema or {}).get("required")), tools[0])
    args = {
        k: _PLACEHOLDERS.get((v or {}).get("type", "string"), "TODO")
        for k, v in ((first.input_schema or {}).get("properties") or {}).items()
        if k in ((first.input_schema or {}).get("required") or [])
    }
    http = isinstance(server, HTTPServer)
    stdlib = ["json", "os"] if http else ["json", "sys"] if _uses_sys(server) else ["json"]
    return {
        "judged": repr(judged),
        "name_upper": names.name.upper(),
        "server_imports": "".join(f"import {m}\n" for m in stdlib),
        "server_class": "HTTPServer" if http else "StdioServer",
        "mcp_import": "from agentrft.mcp import HTTPServer, MCPEnvironment"
        if http
        else "from agentrft.mcp import MCPEnvironment, StdioServer",
        "server_name": server.name,
        "server_code": _server_code(names, server),
        "server_notes": _server_notes(names, server),
        "tool_names": "\n".join(f"    {json.dumps(t.name)}," for t in tools),
        "tool_list": "\n".join(f"- `{t.name}`: {_summary(t.description)}" for t in tools),
        "first_call": f"{json.dumps(first.name)}, {_py(args)}",
        "first_call_doc": f"{first.name} with {json.dumps(args)}".replace('"', "'"),
        "first_request": f"TODO: a request of your users (the stub expert calls {first.name})",
    }


def _uses_sys(server: MCPServerSpec) -> bool:
    return isinstance(server, StdioServer) and server.command == sys.executable


def _py(value: Any) -> str:
    """`value` as a Python literal in the quotes ruff's formatter keeps (double)."""
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)}: {_py(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        inner = ", ".join(_py(v) for v in value)
        return (
            f"({inner},)"
            if isinstance(value, tuple) and len(value) == 1
            else (f"({inner})" if isinstance(value, tuple) else f"[{inner}]")
        )
    return json.dumps(value)


def _summary(text: str | None) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else "(no description)"
    return line.replace('"""', "'''").replace("\\", "/")[:160]


def _headers_env(names: TaskNames) -> str:
    return f"{names.name.upper()}_MCP_HEADERS"


def _server_code(names: TaskNames, server: MCPServerSpec) -> str:
    if isinstance(server, HTTPServer):
        return (
            "HTTPServer(\n"
            f"    name={json.dumps(server.name)},\n"
            f"    url={json.dumps(server.url)},\n"
            "    # A JSON object of headers (an Authorization token): never written in code.\n"
            f'    headers=json.loads(os.environ.get({json.dumps(_headers_env(names))}, "{{}}")),\n'
            "    hidden_tools=(),\n"
            ")"
        )
    assert isinstance(server, StdioServer)
    command = "sys.executable" if _uses_sys(server) else json.dumps(server.command)
    args = _py(tuple(server.args))
    if len(args) > 80:  # one per line, as the formatter would lay it out
        args = "(\n" + "".join(f"        {json.dumps(a)},\n" for a in server.args) + "    )"
    return (
        "StdioServer(\n"
        f"    name={json.dumps(server.name)},\n"
        f"    command={command},\n"
        f"    args={args},\n"
        "    hidden_tools=(),\n"
        ")"
    )


def _server_notes(names: TaskNames, server: MCPServerSpec) -> str:
    if isinstance(server, HTTPServer):
        return (
            f"The server is reached at {server.url}. Its headers come from the environment "
            f"variable `{_headers_env(names)}` (a JSON object, e.g. "
            '`{"Authorization": "Bearer ..."}`), so no secret is written in the code.'
        )
    line = shlex.join([server.command, *server.args])
    return (
        f"Each episode starts the server as `{line}` (as given to the scaffold: a relative "
        "path is relative to where the task runs)."
    )
