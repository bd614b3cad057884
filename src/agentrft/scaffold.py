"""`agentrft new-task`: render the packaged template into a new, installable task plugin.

The template lives in the repository's top-level `templates/new_task/`, shipped inside the
installed package as `agentrft.templates` (package data). Paths and contents use
plain `{{key}}` placeholders; in paths `__package__` and `__name__` stand for the import
package and the task name, a `.tmpl` suffix is dropped and a `dot-` prefix becomes `.`.
The whole tree is rendered into a temporary directory next to the target and moved into
place in one rename, so a failure never leaves a half-written plugin behind.
"""

from __future__ import annotations

import contextlib
import importlib.metadata as md
import importlib.util
import keyword
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

TEMPLATE = "new_task"
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_]\w*)\s*\}\}")
MAX_NAME_LENGTH = 40


class ScaffoldError(ValueError):
    """The task name or target directory is not usable; the message says what to do."""


@dataclass(frozen=True)
class TaskNames:
    """Every name the template derives from the task name `my_flow`."""

    name: str  # my_flow: the task name, entry point name and `--task` value
    package: str  # agentrft_my_flow: the import package
    dist: str  # agentrft-my-flow: the distribution (pip) name
    class_name: str  # MyFlowTask: the Task subclass
    env_class: str  # MyFlowEnv: its Environment
    title: str  # "My flow": for docs and descriptions

    @classmethod
    def of(cls, name: str) -> TaskNames:
        words = [w for w in name.split("_") if w]
        return cls(
            name=name,
            package=f"agentrft_{name}",
            dist=f"agentrft-{name.replace('_', '-')}",
            class_name="".join(w.capitalize() for w in words) + "Task",
            env_class="".join(w.capitalize() for w in words) + "Env",
            title=" ".join(words).capitalize(),
        )

    def values(self) -> dict[str, str]:
        from agentrft import __version__

        return {
            "name": self.name,
            "package": self.package,
            "dist": self.dist,
            "class_name": self.class_name,
            "env_class": self.env_class,
            "title": self.title,
            "agentrft_version": __version__,
        }


def validate_name(name: str, installed_tasks: Iterable[str] | None = None) -> TaskNames:
    """Check `name` can become a new task; raise `ScaffoldError` saying why not.

    `installed_tasks` defaults to the tasks the installed plugins provide.
    """
    example = re.sub(r"[^a-z0-9_]+", "_", name.lower()).strip("_") or "my_task"
    if not example[0].isalpha():
        example = f"task_{example}"
    if not _NAME.match(name):
        raise ScaffoldError(
            f"task name {name!r} is not valid: use lowercase letters, digits and underscores, "
            f"starting with a letter (for example {example!r})"
        )
    if keyword.iskeyword(name) or keyword.issoftkeyword(name):
        raise ScaffoldError(
            f"task name {name!r} is a Python keyword; pick another (for example {name + '_task'!r})"
        )
    if len(name) > MAX_NAME_LENGTH:
        raise ScaffoldError(
            f"task name {name!r} is {len(name)} characters long; keep it to {MAX_NAME_LENGTH}"
        )
    names = TaskNames.of(name)
    if installed_tasks is None:
        from agentrft.plugins import get_plugins

        installed_tasks = get_plugins().task_classes()
    installed = sorted(installed_tasks)
    if name in installed:
        raise ScaffoldError(
            f"a task named {name!r} is already installed (installed tasks: "
            f"{', '.join(installed)}); pick another name"
        )
    for ep in md.entry_points(group="agentrft"):
        if ep.name == name:
            dist = ep.dist.name if ep.dist is not None else "?"
            raise ScaffoldError(
                f"the plugin name {name!r} is already taken by entry point {ep.value!r} of "
                f"distribution {dist!r}; pick another name"
            )
    try:
        spec = importlib.util.find_spec(names.package)
    except (ImportError, ValueError):
        spec = None
    if spec is not None:
        where = spec.origin or ", ".join(spec.submodule_search_locations or [])
        raise ScaffoldError(
            f"a Python package {names.package!r} is already importable ({where}); pick "
            f"another name or uninstall it"
        )
    try:
        md.distribution(names.dist)
    except md.PackageNotFoundError:
        pass
    else:
        raise ScaffoldError(
            f"distribution {names.dist!r} is already installed; pick another name or "
            f"run: pip uninstall {names.dist}"
        )
    return names


def template_root(template: str = TEMPLATE) -> Traversable:
    """The template directory: the installed package's `agentrft.templates` (a wheel, an
    sdist, a current editable install), else the top-level `templates/` of the source
    checkout `agentrft` is imported from (an editable install made before templates/ moved
    out of src/, whose path entry cannot map it)."""
    root: Traversable | None = None
    with contextlib.suppress(ModuleNotFoundError):
        root = resources.files("agentrft.templates") / template
    if root is None or not root.is_dir():
        checkout = Path(__file__).resolve().parents[2] / "templates" / template
        if checkout.is_dir() and (checkout.parents[1] / "pyproject.toml").is_file():
            return checkout
        raise ScaffoldError(
            f"the new-task template is missing from the agentrft installation ({root}); "
            "reinstall agentrft"
        )
    return root


def _walk(
    node: Traversable, prefix: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], Traversable]]:
    for child in sorted(node.iterdir(), key=lambda c: c.name):
        if child.name == "__pycache__":
            continue
        if child.is_dir():
            yield from _walk(child, (*prefix, child.name))
        else:
            yield (*prefix, child.name), child


def _render_text(text: str, values: dict[str, str], source: str) -> str:
    def sub(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in values:
            raise ScaffoldError(f"template {source} uses unknown placeholder {{{{{key}}}}}")
        return values[key]

    return _PLACEHOLDER.sub(sub, text)


def _render_path(parts: tuple[str, ...], names: TaskNames) -> Path:
    out = []
    for part in parts:
        part = part.replace("__package__", names.package).replace("__name__", names.name)
        part = part.removesuffix(".tmpl")
        if part.startswith("dot-"):
            part = "." + part[len("dot-") :]
        out.append(part)
    return Path(*out)


def render_files(
    names: TaskNames, template: str = TEMPLATE, extra: dict[str, str] | None = None
) -> dict[Path, str]:
    """The rendered files of the plugin, relative path -> text (nothing is written).
    `extra` adds placeholders (the MCP template's server and tools)."""
    values = {**names.values(), **(extra or {})}
    files: dict[Path, str] = {}
    for parts, node in _walk(template_root(template)):
        source = "/".join(parts)
        files[_render_path(parts, names)] = _render_text(node.read_text("utf-8"), values, source)
    return files


def create_task(
    name: str,
    directory: str | os.PathLike[str] = ".",
    *,
    installed_tasks: Iterable[str] | None = None,
    template: str = TEMPLATE,
    extra: Callable[[TaskNames], dict[str, str]] | None = None,
) -> Path:
    """Render a new task plugin into `directory/name` from `template` (with the
    placeholders `extra(names)` adds); return that path.

    Refuses an invalid or taken name and an existing target; writes everything or nothing.
    """
    names = validate_name(name, installed_tasks)
    parent = Path(directory).expanduser()
    target = parent / name
    if target.exists() or target.is_symlink():
        raise ScaffoldError(
            f"{target} already exists; new-task never overwrites. Choose another --dir or "
            f"name, or remove that directory first"
        )
    if parent.exists() and not parent.is_dir():
        raise ScaffoldError(f"--dir {parent} is a file, not a directory")
    values = extra(names) if extra is not None else None
    # Render before touching the disk: a template bug writes nothing.
    files = render_files(names, template, values)
    parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=parent))
    try:
        for rel, text in files.items():
            path = staging / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        # One rename: the plugin appears complete or not at all. It fails if the target
        # appeared meanwhile (os.rename onto a non-empty directory is an error).
        try:
            staging.rename(target)
        except OSError as exc:
            raise ScaffoldError(f"could not create {target}: {exc.strerror or exc}") from None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target
