"""The flags installed backends add to `agentrft train` and `agentrft eval`.

A backend lists them (`Backend.cli_options(command)`, datasette's pattern of plugins adding
their own options); `with_backend_flags` gives a core command one typer option per distinct
flag, shown under the backend's help panel, and hands the command a `BackendFlags` that
knows which backend declared which flag. A flag given with another `--backend` than the one
declaring it is refused by name, never silently dropped.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer

from agentrft.backend import Backend, CliOption, Command
from agentrft.cli.errors import CliError, error_console

#: The annotation of each kind of value (None: not given).
_TYPES: dict[Any, Any] = {
    str: str | None,
    int: int | None,
    float: float | None,
    Path: Path | None,
    list[str]: list[str] | None,
}


@dataclass
class _Flag:
    param: str
    option: CliOption
    #: backend name -> its declaration of this flag
    owners: dict[str, CliOption] = field(default_factory=dict)


class BackendFlags:
    """The backend flags one command line gave, by the backends that declared them."""

    def __init__(self, flags: list[_Flag], given: dict[str, Any]) -> None:
        self._flags = flags
        self._given = given

    def for_backend(self, name: str | None) -> dict[str, Any]:
        """The flags of backend `name` by `CliOption.name`; a flag only other backends
        declare (any flag, when no backend was chosen), given on this command line, is an
        error naming them."""
        out: dict[str, Any] = {}
        for flag in self._flags:
            value = self._given.get(flag.param, flag.option.default)
            mine = flag.owners.get(name) if name is not None else None
            if mine is not None:
                out[mine.name] = value
            elif value != flag.option.default:
                names = sorted(flag.owners)
                owners = (
                    f"the {names[0]} backend"
                    if len(names) == 1
                    else f"the {', '.join(names[:-1])} and {names[-1]} backends"
                )
                other = f"not of {name!r}" if name is not None else "which was not chosen"
                raise CliError(
                    f"{flag.option.flags[0].split('/')[0]} is an option of {owners}, {other}; "
                    f"pass --backend {names[0]}"
                )
        return out


def collect(
    command: Command, backends: dict[str, type[Backend]], reserved: set[str]
) -> list[_Flag]:
    """One `_Flag` per distinct flag the backends declare for `command` (a flag two
    backends share is one option). A flag that clashes with a core one is left out, said."""
    flags: dict[str, _Flag] = {}
    for name, cls in sorted(backends.items()):
        try:
            options = cls.cli_options(command)
        except Exception as exc:  # one backend's bug must not take the command down
            error_console().print(f"warning: backend {name!r} could not list its flags: {exc}")
            continue
        for opt in options:
            primary = opt.flags[0].split("/")[0]
            if set(f.split("/")[0] for f in opt.flags) & reserved:
                error_console().print(
                    f"warning: backend {name!r}'s flag {primary} clashes with a core flag; "
                    "it is left out (set its config key with --set instead)"
                )
                continue
            flag = flags.get(primary)
            if flag is None:
                param = "backend_" + primary.lstrip("-").replace("-", "_")
                flag = flags[primary] = _Flag(param, opt)
            elif flag.option.type != opt.type:
                error_console().print(
                    f"warning: backends {', '.join(flag.owners)} and {name!r} declare "
                    f"{primary} with different types; {name!r}'s is left out"
                )
                continue
            flag.owners[name] = opt
    return list(flags.values())


def with_backend_flags(
    fn: Callable[..., Any], command: Command, backends: dict[str, type[Backend]]
) -> Callable[..., Any]:
    """`fn` (a typer command taking `backend_flags: BackendFlags | None`) with the backends'
    flags as extra options; `fn`'s own parameters and help stay as they are."""
    core = inspect.signature(fn, eval_str=True)
    shown = [p for n, p in core.parameters.items() if n != "backend_flags"]
    reserved = {d for p in shown for d in _declared(p)}
    flags = collect(command, backends, reserved)
    params = list(shown)
    for flag in flags:
        opt = flag.option
        panel = " / ".join(f"{b} backend" for b in sorted(flag.owners))
        kind = (
            bool
            if opt.type is bool and isinstance(opt.default, bool)
            else _TYPES.get(opt.type, bool | None if opt.type is bool else opt.type)
        )
        info = typer.Option(*opt.flags, help=opt.help, rich_help_panel=panel)
        annotation = Annotated[kind, info]  # type: ignore[valid-type]  # built at run time
        params.append(
            inspect.Parameter(
                flag.param,
                inspect.Parameter.KEYWORD_ONLY,
                default=opt.default,
                annotation=annotation,
            )
        )
    # typer reads options in signature order; keyword-only ones go last.
    params.sort(key=lambda p: p.kind == inspect.Parameter.KEYWORD_ONLY)
    names = {f.param for f in flags}

    def command_with_flags(**kwargs: Any) -> Any:
        given = {k: kwargs.pop(k) for k in list(kwargs) if k in names}
        return fn(**kwargs, backend_flags=BackendFlags(flags, given))

    command_with_flags.__signature__ = core.replace(parameters=params)  # type: ignore[attr-defined]
    command_with_flags.__doc__ = fn.__doc__
    command_with_flags.__name__ = fn.__name__
    command_with_flags.__annotations__ = {}
    return command_with_flags


def _declared(param: inspect.Parameter) -> list[str]:
    """The flag names a core parameter's typer.Option declares."""
    for extra in getattr(param.annotation, "__metadata__", ()):
        decls = getattr(extra, "param_decls", None) or ()
        default = getattr(extra, "default", None)
        names = [*decls, *([default] if isinstance(default, str) else [])]
        out = [n.split("/")[0] for n in names if isinstance(n, str) and n.startswith("-")]
        return out or ["--" + param.name.replace("_", "-")]
    return ["--" + param.name.replace("_", "-")]
