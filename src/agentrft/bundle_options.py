"""`BundleOptions`: how a task plugin's dependencies are installed in a runtime bundle.

A backend that ships code to a remote runtime (the sagemaker backend's `agentrft deploy`
zips agentrft, the plugin and its dependencies for an AgentCore runtime on Linux ARM64)
installs the plugin's requirements there with pip, from wheels for that platform. A plugin
whose suite package pins more than its tasks import, or whose dependency only has wheels
for a newer glibc, says so by implementing the `agentrft_bundle_options` hook::

    from agentrft import BundleOptions, hookimpl

    @hookimpl
    def agentrft_bundle_options(tasks: list[str]) -> BundleOptions:
        # bfcl-eval pins torch, faiss and cloud SDKs; the multi-turn tasks import these.
        return BundleOptions(no_deps={"bfcl-eval": ["mpmath", "tree-sitter"]})

The backend checks the declaration against the installed metadata and says which plugin
is wrong and how to fix it; several plugins in one bundle are merged (docs/sagemaker-runtime.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class BundleOptions:
    """A plugin's declaration of how its runtime bundle is installed (all opt-in)."""

    #: Requirements of this plugin (by distribution name, as its metadata names them)
    #: installed with `pip install --no-deps`, each mapped to the few of ITS OWN
    #: requirements the tasks really import; those are installed with the version
    #: specifiers it declares (so they follow its pins when it is upgraded), dependencies
    #: included. A plain list of names keeps none of their dependencies.
    no_deps: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: Further requirement strings (PEP 508, e.g. "numpy==1.26.4") installed with their
    #: dependencies: what the tasks import that no kept requirement brings.
    requirements: tuple[str, ...] = ()
    #: Wheel platform tags accepted besides manylinux2014 (glibc 2.17), e.g.
    #: ("manylinux_2_28_aarch64",): a wheel built for a newer glibc may not load in the
    #: runtime (AgentCore does not document its glibc), so this is the plugin's explicit
    #: risk, taken only for a dependency that has no manylinux2014 wheel. It applies to
    #: every dependency of the bundle (pip resolves them together).
    platforms: tuple[str, ...] = ()
    #: The MCP servers the plugin's tasks use (`agentrft.mcp.StdioServer` / `HTTPServer`),
    #: so the backend can check and list them (`deploy --dry-run`): a stdio server is
    #: carried in the bundle and must be a Python module run by the runtime's interpreter
    #: (`command=sys.executable, args=("-m", "my_plugin.server")`) from a bundled package;
    #: an HTTP server is not carried, and the runtime must reach it.
    mcp_servers: tuple[Any, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "no_deps", _no_deps(self.no_deps))
        object.__setattr__(self, "requirements", _strings("requirements", self.requirements))
        object.__setattr__(self, "platforms", _strings("platforms", self.platforms))
        object.__setattr__(self, "mcp_servers", _servers(self.mcp_servers))


def _servers(value: Any) -> tuple[Any, ...]:
    # By shape, not class: agentrft.mcp sits above this module (the backend that plans a
    # bundle checks the classes).
    items = tuple(value) if isinstance(value, Iterable) else (value,)
    bad = [x for x in items if getattr(x, "transport", None) not in ("stdio", "http")]
    if bad:
        raise TypeError(
            f"BundleOptions.mcp_servers holds agentrft.mcp.StdioServer / HTTPServer objects, "
            f"got {bad[0]!r:.80}"
        )
    return items


def _strings(what: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        raise TypeError(
            f"BundleOptions.{what} is a list of strings, got the string {value!r}; "
            f"write {what}=({value!r},)"
        )
    items = tuple(value) if isinstance(value, Iterable) else (value,)
    bad = [x for x in items if not isinstance(x, str) or not x.strip()]
    if bad:
        raise TypeError(f"BundleOptions.{what} holds non-strings or blanks: {bad!r}")
    return tuple(x.strip() for x in items)


def _no_deps(value: Any) -> dict[str, tuple[str, ...]]:
    if isinstance(value, str):
        raise TypeError(
            f"BundleOptions.no_deps maps requirement names to the dependencies kept, got the "
            f"string {value!r}; write no_deps={{{value!r}: [...]}}"
        )
    if not isinstance(value, Mapping):
        value = dict.fromkeys(_strings("no_deps", value), ())
    out = {}
    for name, kept in value.items():
        if not isinstance(name, str) or not name.strip():
            raise TypeError(f"BundleOptions.no_deps keys are requirement names, got {name!r}")
        out[name.strip()] = _strings(f"no_deps[{name!r}]", kept)
    return out
