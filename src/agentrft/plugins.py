"""Plugin discovery: one pluggy `PluginManager` over the `agentrft` entry-point group.

Contracts are checked where a plugin meets the core, and a plugin that breaks one is
reported (distribution, entry point, what is wrong and the fix) and skipped while the others
still load, as a plugin that fails to import is:

- every hook a plugin implements must be an agentrft hook (pluggy's `check_pending`: a
  misspelt `agentrft_taks` is an error naming the plugin, not a hook silently never called);
- `agentrft_tasks` returns `Task` subclasses with a `name` and no abstract methods left;
  `agentrft_backends` returns `Backend` subclasses; `agentrft_rewards` returns
  `NamedReward`s (or plain callables) under identifier names;
- two distributions providing the same task, backend, reward, loss or advantage name is an
  error naming both, when that name is used (nothing silently shadows the other).

Tasks, rewards and backends are looked up by name with errors that list what is installed.
"""

from __future__ import annotations

import difflib
import importlib.metadata as md
import inspect
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import pluggy

from agentrft import hookspecs
from agentrft.backend import Backend
from agentrft.hookspecs import PROJECT
from agentrft.mixture import MixtureTask, build_task
from agentrft.reward import NamedReward
from agentrft.task import Task

ENTRY_POINT_GROUP = "agentrft"


class PluginError(LookupError):
    """A task, reward or backend name is unknown, or a plugin broke its contract."""


@dataclass
class BrokenPlugin:
    """A plugin that failed to load or broke a contract; it is skipped."""

    distribution: str
    entry_point: str
    value: str
    error: str

    def explain(self) -> str:
        if self.distribution == "-":  # registered in code (tests, embedding apps)
            return f"plugin {self.entry_point!r} is broken: {self.error}"
        return (
            f"plugin {self.entry_point!r} (entry point {self.value!r} in distribution "
            f"{self.distribution!r}) failed to load: {self.error}. Reinstall or fix that "
            f"package, or uninstall it: pip uninstall {self.distribution}"
        )


@dataclass(frozen=True)
class Provided:
    """One thing a plugin provides: its name, the object, and where it comes from."""

    name: str
    obj: Any
    plugin: str
    distribution: str

    @property
    def source(self) -> str:
        if self.distribution == "-":
            return f"plugin {self.plugin!r}"
        return f"distribution {self.distribution!r} (entry point {self.plugin!r})"


@dataclass
class _Collection:
    items: dict[str, Provided] = field(default_factory=dict)
    #: name -> the error naming every distribution that provides it.
    conflicts: dict[str, str] = field(default_factory=dict)


class Plugins:
    """The loaded plugins and what they provide."""

    def __init__(
        self,
        pm: pluggy.PluginManager,
        broken: list[BrokenPlugin],
        distributions: dict[str, str] | None = None,
        values: dict[str, str] | None = None,
    ) -> None:
        self.pm = pm
        self.broken = broken
        #: Registered plugin name -> the distribution that provided it (entry points only).
        self.distributions = distributions or {}
        self._values = values or {}
        self._collections: dict[str, _Collection] = {}

    @property
    def hook(self) -> Any:
        return self.pm.hook

    # -- collecting what the hooks return, with their contracts -------------------------

    def _collect(
        self, hook_name: str, kind: str, check: Callable[[Any, Any], tuple[str, Any]]
    ) -> _Collection:
        """Call every plugin's `hook_name` (in registration order) and check each item.

        `check(key, item)` returns (name, object) or raises `PluginError` naming the fix; a
        plugin whose hook raises or returns a bad item is moved to `broken`.
        """
        if hook_name in self._collections:
            return self._collections[hook_name]
        out = _Collection()
        for impl in getattr(self.pm.hook, hook_name).get_hookimpls():  # registration order
            dist = self.distributions.get(impl.plugin_name, "-")
            try:
                batch = impl.function()
                pairs = (
                    batch.items() if isinstance(batch, dict) else [(None, x) for x in batch or []]
                )
                checked = [check(key, item) for key, item in pairs]
            except Exception as exc:
                error = str(exc) if isinstance(exc, PluginError) else f"{type(exc).__name__}: {exc}"
                self._break(impl.plugin_name, f"its {hook_name} hook: {error}")
                continue
            for name, obj in checked:
                here = Provided(name, obj, impl.plugin_name, dist)
                first = out.items.get(name)
                if first is None:
                    out.items[name] = here
                elif first.obj is not obj and name not in out.conflicts:
                    out.conflicts[name] = (
                        f"{kind} {name!r} is provided twice, by {first.source} and by "
                        f"{here.source}; uninstall one of them"
                    )
        out.items = dict(sorted(out.items.items()))
        self._collections[hook_name] = out
        return out

    def _break(self, plugin: str, error: str) -> None:
        dist = self.distributions.get(plugin, "-")
        self.broken.append(BrokenPlugin(dist, plugin, self._values.get(plugin, "-"), error))
        obj = self.pm.get_plugin(plugin)
        if obj is not None:
            self.pm.unregister(obj)
        self._collections.clear()  # what it provided earlier is gone too

    def _lookup(self, collection: _Collection, kind: str, name: str) -> Any:
        if name in collection.conflicts:
            raise PluginError(collection.conflicts[name])
        if name not in collection.items:
            raise PluginError(_unknown(kind, name, list(collection.items), self.broken))
        return collection.items[name].obj

    def conflicts(self) -> list[str]:
        """Every name two distributions provide (each an error when it is used): tasks,
        rewards, backends, and the named functions read so far."""
        found = [self.tasks_collection(), self._rewards(), self._backends()]
        found += [c for c in self._collections.values() if c not in found]
        return [msg for c in found for msg in c.conflicts.values()]

    # -- tasks ---------------------------------------------------------------------------

    def tasks_collection(self) -> _Collection:
        return self._collect("agentrft_tasks", "task", _check_task)

    def task_classes(self) -> dict[str, type[Task[Any, Any]]]:
        return {n: p.obj for n, p in self.tasks_collection().items.items()}

    def task_sources(self) -> dict[str, str]:
        """Task name -> the distribution (or plugin name) that provides it."""
        return _sources(self.tasks_collection())

    def task(self, name: str) -> Any:
        """A fresh instance of task `name`."""
        return self._lookup(self.tasks_collection(), "task", name)()

    # -- rewards -------------------------------------------------------------------------

    def _rewards(self) -> _Collection:
        return self._collect("agentrft_rewards", "reward", _check_reward)

    def rewards(self) -> dict[str, NamedReward]:
        return {n: p.obj for n, p in self._rewards().items.items()}

    def reward_sources(self) -> dict[str, str]:
        """Reward name -> the distribution (or plugin name) that provides it: what a
        runtime bundle must hold besides the task's plugin when a run names the reward."""
        return _sources(self._rewards())

    def reward(self, name: str, task_name: str | None = None) -> NamedReward:
        reward: NamedReward = self._lookup(self._rewards(), "reward", name)
        if task_name and not reward.applies_to(task_name):
            raise PluginError(
                f"reward {name!r} applies to tasks {sorted(reward.tasks or ())}, not {task_name!r}"
            )
        return reward

    # -- backends ------------------------------------------------------------------------

    def _backends(self) -> _Collection:
        return self._collect("agentrft_backends", "backend", _check_backend)

    def backend_classes(self) -> dict[str, type[Backend]]:
        return {n: p.obj for n, p in self._backends().items.items()}

    def backend(self, name: str) -> Any:
        try:
            cls = self._lookup(self._backends(), "backend", name)
        except PluginError as exc:
            if name in KNOWN_BACKEND_EXTRAS and name not in self._backends().conflicts:
                extra = KNOWN_BACKEND_EXTRAS[name]
                raise PluginError(
                    f"{exc} Install it with: pip install 'agentrft[{extra}]'"
                ) from None
            raise
        return cls()

    # -- named functions (a backend's algorithm variants, ...) --------------------------

    def named_functions(self, hook_name: str, kind: str) -> dict[str, Provided]:
        """What plugins return from a `{name: function}` hook (`kind` names what the names
        select, for messages); a name two distributions provide is an error. The hook is
        declared by whoever reads it (a backend, through `agentrft_addhooks`)."""
        collection = self._collect(hook_name, kind, _check_callable(kind))
        if collection.conflicts:
            raise PluginError("; ".join(collection.conflicts.values()))
        return collection.items


#: Extras that bring the built-in backends' dependencies.
KNOWN_BACKEND_EXTRAS = {"local": "local", "sagemaker": "sagemaker"}


def _sources(collection: _Collection) -> dict[str, str]:
    return {
        n: p.distribution if p.distribution != "-" else p.plugin
        for n, p in collection.items.items()
    }


def _check_task(key: Any, cls: Any) -> tuple[str, Any]:
    if not (isinstance(cls, type) and issubclass(cls, Task)):
        raise PluginError(
            f"it returned {_shown(cls)}, which is not a Task subclass; return the classes "
            "themselves, e.g. [MyTask] where class MyTask(agentrft.Task)"
        )
    name = getattr(cls, "name", "")
    if not isinstance(name, str) or not name.isidentifier():
        raise PluginError(
            f"task class {cls.__qualname__} needs a `name` (an identifier such as 'wordle'), "
            f"got {name!r}"
        )
    if inspect.isabstract(cls):
        missing = ", ".join(sorted(getattr(cls, "__abstractmethods__", ())))
        raise PluginError(f"task class {cls.__qualname__} does not implement {missing}")
    return name, cls


def _check_backend(key: Any, cls: Any) -> tuple[str, Any]:
    if not (isinstance(cls, type) and issubclass(cls, Backend)):
        raise PluginError(
            f"it returned {_shown(cls)}, which is not a Backend subclass; return the classes "
            "themselves, e.g. [MyBackend] where class MyBackend(agentrft.Backend)"
        )
    if not isinstance(cls.name, str) or not cls.name.isidentifier():
        raise PluginError(f"backend class {cls.__qualname__} needs a `name`, got {cls.name!r}")
    if inspect.isabstract(cls):
        missing = ", ".join(sorted(getattr(cls, "__abstractmethods__", ())))
        raise PluginError(f"backend class {cls.__qualname__} does not implement {missing}")
    return cls.name, cls


def _check_reward(key: Any, reward: Any) -> tuple[str, Any]:
    if not isinstance(key, str) or not key:
        raise PluginError(f"reward names are the dict's keys (strings), got {key!r}")
    if isinstance(reward, NamedReward):
        return key, reward
    if not callable(reward):
        raise PluginError(f"reward {key!r} is {_shown(reward)}, not a NamedReward or callable")
    legacy = [a for a in ("tasks", "tiers", "reward_samples") if hasattr(reward, a)]
    if legacy:
        raise PluginError(
            f"reward {key!r} carries {', '.join(legacy)} as function attributes; wrap it "
            f"instead: NamedReward({getattr(reward, '__name__', 'fn')}, tasks=..., tiers=..., "
            "samples=...)"
        )
    return key, NamedReward(reward)


def _check_callable(kind: str) -> Callable[[Any, Any], tuple[str, Any]]:
    def check(key: Any, fn: Any) -> tuple[str, Any]:
        if not isinstance(key, str) or not key:
            raise PluginError(f"{kind} names are the dict's keys (strings), got {key!r}")
        if not callable(fn):
            raise PluginError(f"{kind} {key!r} is {_shown(fn)}, not a function")
        return key, fn

    return check


def _shown(obj: Any) -> str:
    text = repr(obj)
    return text if len(text) <= 80 else text[:60] + "..."


def _unknown(kind: str, name: str, installed: list[str], broken: list[BrokenPlugin]) -> str:
    # A name is an identifier; a 5,000-character one (a mistyped config) is not echoed whole.
    shown = repr(name) if len(name) <= 80 else f"{name[:60]!r}... ({len(name):,} characters)"
    listed = ", ".join(installed) or "none"
    # A plugin that failed to load and carries the name is the likely cause: say that, not
    # a did-you-mean pointing at an unrelated installed name.
    key = _norm(name[:200])
    likely = [
        b for b in broken if key and key in _norm(f"{b.distribution} {b.entry_point} {b.value}")
    ]
    if likely:
        return (
            f"{kind} {shown} not found: "
            + " ".join(b.explain() for b in likely)
            + f" (installed {kind}s: {listed})"
        )
    msg = f"{kind} {shown} not found; installed: {listed}"
    close = difflib.get_close_matches(name[:200], installed, n=1)
    if close:
        msg += f". Did you mean {close[0]!r}?"
    if broken:
        msg += " Plugins that failed to load: " + "; ".join(b.explain() for b in broken)
    return msg


def _norm(text: str) -> str:
    return "".join(c for c in text.lower() if c.isalnum())


def load_plugins(extra: list[Any] | None = None, entry_points: bool = True) -> Plugins:
    """Build a `PluginManager`, register entry points (and `extra` plugin objects)."""
    pm = pluggy.PluginManager(PROJECT)
    pm.add_hookspecs(hookspecs)
    broken: list[BrokenPlugin] = []
    distributions: dict[str, str] = {}
    values: dict[str, str] = {}
    if entry_points:
        for ep in sorted(md.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
            dist = ep.dist.name if ep.dist is not None else "?"
            try:
                obj = ep.load()
                if pm.is_registered(obj):
                    continue
                pm.register(obj, name=ep.name)
                distributions[ep.name] = dist
                values[ep.name] = ep.value
            except Exception as exc:  # one broken plugin must not hide the others
                broken.append(BrokenPlugin(dist, ep.name, ep.value, f"{type(exc).__name__}: {exc}"))
    for obj in extra or []:
        pm.register(obj, name=_extra_name(pm, obj))
    # Hooks that plugins declare (a backend's own): before the check for unknown hooks.
    pm.hook.agentrft_addhooks.call_historic(kwargs={"pluginmanager": pm})
    plugins = Plugins(pm, broken, distributions, values)
    _refuse_unknown_hooks(plugins)
    return plugins


def _extra_name(pm: pluggy.PluginManager, obj: Any) -> str:
    base = getattr(obj, "__name__", None) or type(obj).__name__
    name, n = base, 1
    while pm.get_plugin(name) is not None:
        n += 1
        name = f"{base}#{n}"
    return name


def _refuse_unknown_hooks(plugins: Plugins) -> None:
    """pytest's rule: a hook implementation with no specification is a plugin bug (a typo,
    or a hook of another version). Each such plugin is moved to `broken`, named."""
    known = sorted(n for n, caller in vars(plugins.pm.hook).items() if caller.has_spec())
    while True:
        try:
            plugins.pm.check_pending()
            return
        except pluggy.PluginValidationError as exc:
            plugin = plugins.pm.get_name(exc.plugin) or "?"
            hooks = sorted(
                name
                for name, caller in vars(plugins.pm.hook).items()
                if not caller.has_spec()
                and any(i.plugin is exc.plugin for i in caller.get_hookimpls())
            )
            close = difflib.get_close_matches(hooks[0], known, n=1) if hooks else []
            hint = (
                f"; did you mean {close[0]!r}?"
                if close
                else f" (agentrft hooks: {', '.join(known)})"
            )
            what = ", ".join(repr(h) for h in hooks) or str(exc)
            plugins._break(plugin, f"it implements {what}, which is not an agentrft hook{hint}")


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


def resolve_task(
    task: str | None = None, tasks: Mapping[str, float] | None = None
) -> Task[Any, Any]:
    """The task a run plays: `task` (a name, or a `--task a=0.7,b=0.3` spec) or the
    config's `tasks` mixture; every name is looked up in the installed plugins (an
    unknown one is a `PluginError` listing the installed tasks)."""
    return build_task(task, tasks, get_plugins().task)[0]


def resolve_task_and_reward(
    task: str | None, tasks: Mapping[str, float] | None, reward: str | None
) -> tuple[Task[Any, Any], Any]:
    """`resolve_task`, and the plugin reward `reward` names for it (None: the task's own;
    a `ValueError` for a multi-task run, whose tasks each keep their own reward)."""
    plugins = get_plugins()
    return build_task(task, tasks, plugins.task, reward, plugins.reward)


def resolve_reward(name: str | None, task: Task[Any, Any]) -> Any:
    """The plugin reward `name` for the resolved `task`, or None to keep the task's own."""
    if not name:
        return None
    if isinstance(task, MixtureTask):
        raise ValueError(
            f"--reward {name}: a named reward replaces one task's reward; a multi-task run "
            f"({task.name}) plays each task with its own reward, so drop --reward"
        )
    return get_plugins().reward(name, task.name)
