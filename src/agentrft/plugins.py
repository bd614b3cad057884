"""Plugin discovery: one pluggy `PluginManager` over the `agentrft` entry-point group.

A plugin that fails to import is reported (distribution, entry point, error) and skipped;
the others still load. Tasks, rewards and backends are looked up by name with errors that
list what is installed.
"""

from __future__ import annotations

import difflib
import importlib.metadata as md
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, cast

import pluggy

from agentrft import hookspecs
from agentrft.hookspecs import PROJECT

ENTRY_POINT_GROUP = "agentrft"


class PluginError(LookupError):
    """A task, reward or backend name is unknown, or a plugin broke its contract."""


@dataclass
class BrokenPlugin:
    distribution: str
    entry_point: str
    value: str
    error: str

    def explain(self) -> str:
        return (
            f"plugin {self.entry_point!r} (entry point {self.value!r} in distribution "
            f"{self.distribution!r}) failed to load: {self.error}. Reinstall or fix that "
            f"package, or uninstall it: pip uninstall {self.distribution}"
        )


class Plugins:
    """The loaded plugins and what they provide."""

    def __init__(
        self,
        pm: pluggy.PluginManager,
        broken: list[BrokenPlugin],
        distributions: dict[str, str] | None = None,
    ) -> None:
        self.pm = pm
        self.broken = broken
        #: Registered plugin name -> the distribution that provided it (entry points only).
        self.distributions = distributions or {}

    def task_sources(self) -> dict[str, str]:
        """Task name -> the distribution (or plugin name) that provides it."""
        out: dict[str, str] = {}
        for impl in reversed(self.pm.hook.agentrft_tasks.get_hookimpls()):
            source = self.distributions.get(impl.plugin_name, impl.plugin_name)
            provided = cast("list[type]", impl.function() or [])
            for cls in provided:
                out.setdefault(getattr(cls, "name", ""), source)
        return out

    @property
    def hook(self) -> Any:
        return self.pm.hook

    # -- tasks -----------------------------------------------------------------------
    def task_classes(self) -> dict[str, type]:
        found: dict[str, type] = {}
        for batch in self.pm.hook.agentrft_tasks():
            for cls in batch or []:
                name = getattr(cls, "name", "")
                if not name:
                    raise PluginError(f"task class {cls.__qualname__} has no `name`")
                found.setdefault(name, cls)
        return dict(sorted(found.items()))

    def task(self, name: str) -> Any:
        """A fresh instance of task `name`."""
        classes = self.task_classes()
        if name not in classes:
            raise PluginError(_unknown("task", name, list(classes), self.broken))
        return classes[name]()

    # -- rewards ---------------------------------------------------------------------
    def rewards(self) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for batch in self.pm.hook.agentrft_rewards():
            found.update(batch or {})
        return dict(sorted(found.items()))

    def reward(self, name: str, task_name: str | None = None) -> Any:
        rewards = self.rewards()
        if name not in rewards:
            raise PluginError(_unknown("reward", name, list(rewards), self.broken))
        fn = rewards[name]
        allowed = getattr(fn, "tasks", None)
        if task_name and allowed and task_name not in allowed:
            raise PluginError(
                f"reward {name!r} applies to tasks {sorted(allowed)}, not {task_name!r}"
            )
        return fn

    # -- backends --------------------------------------------------------------------
    def backend_classes(self) -> dict[str, type]:
        found: dict[str, type] = {}
        for batch in self.pm.hook.agentrft_backends():
            for cls in batch or []:
                found.setdefault(cls.name, cls)
        return dict(sorted(found.items()))

    def backend(self, name: str) -> Any:
        classes = self.backend_classes()
        if name not in classes:
            hint = ""
            if name in KNOWN_BACKEND_EXTRAS:
                hint = f" Install it with: pip install 'agentrft[{KNOWN_BACKEND_EXTRAS[name]}]'"
            raise PluginError(_unknown("backend", name, list(classes), self.broken) + hint)
        return classes[name]()


#: Extras that bring the built-in backends' dependencies.
KNOWN_BACKEND_EXTRAS = {"local": "local", "sagemaker": "sagemaker"}


def _unknown(kind: str, name: str, installed: list[str], broken: list[BrokenPlugin]) -> str:
    # A name is an identifier; a 5,000-character one (a mistyped config) is not echoed whole.
    shown = repr(name) if len(name) <= 80 else f"{name[:60]!r}... ({len(name):,} characters)"
    msg = f"{kind} {shown} not found; installed: {', '.join(installed) or 'none'}"
    close = difflib.get_close_matches(name[:200], installed, n=1)
    if close:
        msg += f". Did you mean {close[0]!r}?"
    if broken:
        msg += ". Plugins that failed to load: " + "; ".join(b.explain() for b in broken)
    return msg


def load_plugins(extra: list[Any] | None = None, entry_points: bool = True) -> Plugins:
    """Build a `PluginManager`, register entry points (and `extra` plugin objects)."""
    pm = pluggy.PluginManager(PROJECT)
    pm.add_hookspecs(hookspecs)
    broken: list[BrokenPlugin] = []
    distributions: dict[str, str] = {}
    if entry_points:
        for ep in sorted(md.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
            dist = ep.dist.name if ep.dist is not None else "?"
            try:
                obj = ep.load()
                if pm.is_registered(obj):
                    continue
                pm.register(obj, name=ep.name)
                distributions[ep.name] = dist
            except Exception as exc:  # one broken plugin must not hide the others
                broken.append(BrokenPlugin(dist, ep.name, ep.value, f"{type(exc).__name__}: {exc}"))
    for obj in extra or []:
        pm.register(obj)
    return Plugins(pm, broken, distributions)


_override: Plugins | None = None


@lru_cache(maxsize=1)
def _default_plugins() -> Plugins:
    return load_plugins()


def get_plugins() -> Plugins:
    """The process-wide plugin set (loaded once; `use_plugins` swaps it, e.g. in tests)."""
    if _override is not None:
        return _override
    return _default_plugins()


# Kept so callers can still force a reload of the entry points.
get_plugins.cache_clear = _default_plugins.cache_clear  # type: ignore[attr-defined]


@contextmanager
def use_plugins(plugins: Plugins) -> Iterator[Plugins]:
    """Make `get_plugins()` return `plugins` inside the block (tests, embedding apps)::

    with use_plugins(load_plugins(extra=[MyPlugin], entry_points=False)):
        ...
    """
    global _override
    previous = _override
    _override = plugins
    try:
        yield plugins
    finally:
        _override = previous
