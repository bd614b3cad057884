"""`Registry`: the named variants of one part of the algorithm (policy losses, loss
normalizations, advantage estimators), SkyRL's pattern.

Built-in variants and a user's own code register with the decorator (`@register`); what
plugins provide through the registry's hook arrives only when `install` is called with the
loaded plugins, never as a side effect of a lookup or a check. `reset` puts the registry back
to what code registered (tests, embedding apps).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from agentrft.plugins import Plugins

F = TypeVar("F", bound=Callable[..., object])

__all__ = ["Registry"]


class Registry(Generic[F]):
    """Name -> function for one config key (`key`, e.g. `loss_fn`), filled by `register`
    in code and by plugins' `hook` on `install`."""

    def __init__(self, key: str, hook: str, decorator: str) -> None:
        self.key = key
        self.hook = hook
        #: How code adds one (named in the error for an unknown name).
        self.decorator = decorator
        self._registered: dict[str, F] = {}
        self._installed: dict[str, F] = {}

    def register(self, name: str) -> Callable[[F], F]:
        """Decorator: add `fn` under `name` (a later registration of a name replaces it)."""

        def wrap(fn: F) -> F:
            self._registered[name] = fn
            return fn

        return wrap

    def install(self, plugins: Plugins) -> None:
        """Add what `plugins` provide through `hook`. A plugin may not replace a variant
        registered in code under its name (the built-in's results would silently change):
        that is a `PluginError` naming the plugin. Installing again replaces the previous
        plugins' variants."""
        from agentrft.plugins import PluginError

        provided = plugins.named_functions(self.hook, self.key)
        for name, item in provided.items():
            if name in self._registered and self._registered[name] is not item.obj:
                raise PluginError(
                    f"{item.source} registers {self.key} {name!r}, which is already built "
                    "in; give it another name"
                )
        self._installed = {name: item.obj for name, item in provided.items()}

    def reset(self) -> None:
        """Forget what plugins installed."""
        self._installed = {}

    def names(self) -> list[str]:
        """Every registered name, sorted."""
        return sorted({**self._installed, **self._registered})

    def __contains__(self, name: object) -> bool:
        return name in self._registered or name in self._installed

    def __getitem__(self, name: str) -> F:
        if name in self._registered:
            return self._registered[name]
        if name in self._installed:
            return self._installed[name]
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __repr__(self) -> str:
        return f"Registry({self.key!r}: {', '.join(self.names())})"
