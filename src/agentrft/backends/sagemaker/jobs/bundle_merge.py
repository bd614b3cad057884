"""What goes into a bundle besides the copied code: the plugins' `BundleOptions`
declarations (hook `agentrft_bundle_options`) collected and merged into one install plan,
and requirements read for the runtime's platform (Linux ARM64, CPython 3.11) rather than
this machine's."""

from __future__ import annotations

import importlib.metadata as md
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentrft.bundle_options import BundleOptions

#: Marker environment of the runtime, for choosing which requirements apply.
TARGET_MARKERS = {
    "python_version": "3.11",
    "python_full_version": "3.11.0",
    "sys_platform": "linux",
    "platform_system": "Linux",
    "platform_machine": "aarch64",
    "os_name": "posix",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
}


#: glibc of manylinux2014; `BundleOptions.platforms` opts into newer ones.
BASE_GLIBC_MINOR = 17


MANYLINUX_RE = re.compile(r"^manylinux(?:2014|_2_(?P<minor>[0-9]+))_(?P<arch>[a-z0-9_]+)$")


HOOK = "agentrft_bundle_options"


class BundleError(RuntimeError):
    """The bundle cannot be built; the message names the cause and the fix."""


@dataclass
class LocalDistribution:
    """An installed distribution copied into the bundle as-is."""

    name: str
    version: str
    packages: list[Path]
    dist_info: dict[str, str]
    requires: list[str]

    @property
    def dist_info_dir(self) -> str:
        return f"{self.name.replace('-', '_')}-{self.version}.dist-info"


@dataclass(frozen=True)
class DeclaredOptions:
    """One plugin's `BundleOptions`, with where they come from (for errors and --dry-run)."""

    plugin: str
    distribution: str
    options: BundleOptions

    @property
    def source(self) -> str:
        return f"plugin {self.plugin!r} (distribution {self.distribution})"


@dataclass(frozen=True)
class NoDepsRequirement:
    """A requirement installed with `--no-deps`, and the dependencies kept for it."""

    requirement: str
    kept: tuple[str, ...]
    declared_by: tuple[str, ...]


def collect_bundle_options(plugins: Any, tasks: Sequence[str]) -> list[DeclaredOptions]:
    """Call `agentrft_bundle_options(tasks=...)` of each plugin that provides one of `tasks`
    (an `agentrft.plugins.Plugins`), with the names of its own tasks among them."""
    provided = plugins.tasks_collection().items
    out = []
    for impl in getattr(plugins.hook, HOOK).get_hookimpls():
        dist = plugins.distributions.get(impl.plugin_name, "-")

        def same_source(p: Any, impl: Any = impl, dist: str = dist) -> bool:
            return p.distribution == dist if dist != "-" else p.plugin == impl.plugin_name

        mine = [t for t in tasks if t in provided and same_source(provided[t])]
        if not mine:
            continue  # a plugin not in this bundle
        where = f"plugin {impl.plugin_name!r}" + (f" (distribution {dist})" if dist != "-" else "")
        kwargs = {"tasks": list(mine)}
        try:
            declared = impl.function(*(kwargs[a] for a in impl.argnames))
        except Exception as exc:
            raise BundleError(
                f"{where}: its {HOOK} hook raised {type(exc).__name__}: {exc}; fix the "
                "plugin's declaration (docs/sagemaker-runtime.md)"
            ) from None
        if declared is None:
            continue
        if not isinstance(declared, BundleOptions):
            raise BundleError(
                f"{where}: its {HOOK} hook returned {shown(declared)}; return "
                "agentrft.BundleOptions(...) or None"
            )
        name = dist if dist != "-" else impl.plugin_name
        out.append(DeclaredOptions(impl.plugin_name, name, declared))
    return out


@dataclass
class _NoDepsEntry:
    """One no-deps requirement while the declarations are merged."""

    name: str
    requirements: list[str] = field(default_factory=list)
    kept: dict[str, str] = field(default_factory=dict)  # name -> requirement string
    by: list[str] = field(default_factory=list)  # the declaring plugins, for messages
    dists: set[str] = field(default_factory=set)  # their normalised distribution names


@dataclass
class MergedOptions:
    requirements: list[str] = field(default_factory=list)
    #: normalised name -> the no-deps requirement
    no_deps: dict[str, NoDepsRequirement] = field(default_factory=dict)
    platforms: dict[str, tuple[str, ...]] = field(default_factory=dict)


def merge_options(
    local: Sequence[LocalDistribution], options: Sequence[DeclaredOptions]
) -> MergedOptions:
    """Check each declaration against the installed metadata and merge them: the union
    of no-deps requirements (and of what each keeps), of extra requirements and of
    platforms. A requirement one plugin installs without its dependencies while another
    bundled distribution needs it with them is a conflict."""
    by_name = {normalise(d.name): d for d in local}
    merged = MergedOptions()
    no_deps: dict[str, _NoDepsEntry] = {}
    for d in options:
        owner = by_name.get(normalise(d.distribution))
        if owner is None:
            raise BundleError(f"{d.source} declares BundleOptions but is not in this bundle")
        own = {normalise(req_name(r)): r for r in owner.requires}
        for name, keep in d.options.no_deps.items():
            key = normalise(name)
            if key in by_name:
                raise BundleError(
                    f"{d.source}: BundleOptions.no_deps names {name!r}, which the bundle "
                    "copies from this machine (it is not installed by pip); drop it"
                )
            if key not in own:
                raise BundleError(
                    f"{d.source}: BundleOptions.no_deps names {name!r}, which "
                    f"{owner.name} does not require on the runtime (it requires: "
                    f"{', '.join(req_name(r) for r in owner.requires) or 'nothing'}); "
                    "name one of its requirements, or list it under requirements"
                )
            entry = no_deps.setdefault(key, _NoDepsEntry(name))
            entry.requirements.append(own[key])
            entry.by.append(d.source)
            entry.dists.add(normalise(owner.name))
            deps = _dependencies_of(d, name)
            for kept_name in keep:
                req = deps.get(normalise(kept_name))
                if req is None:
                    raise BundleError(
                        f"{d.source}: BundleOptions.no_deps[{name!r}] keeps {kept_name!r}, "
                        f"which {name} {md.version(name)} does not require on the runtime "
                        f"(it requires: {', '.join(sorted(deps.values(), key=str.lower))}); "
                        "list it under requirements=(...) with a version instead"
                    )
                entry.kept[req_name(req)] = req
        for line in d.options.requirements:
            for req in _checked_requirement(d, line):
                if normalise(req_name(req)) in by_name:
                    raise BundleError(
                        f"{d.source}: BundleOptions.requirements entry {line!r} is copied "
                        "from this machine into the bundle, not installed by pip; drop it"
                    )
                merged.requirements.append(req)
        for tag in d.options.platforms:
            _check_declared_platform(d, tag)
            merged.platforms[tag] = (*merged.platforms.get(tag, ()), d.source)
    for key, entry in no_deps.items():
        needs = [
            dist.name
            for dist in local
            if key in {normalise(req_name(r)) for r in dist.requires}
            and normalise(dist.name) not in entry.dists
        ]
        if needs:
            raise BundleError(
                f"{' and '.join(entry.by)} installs {entry.name} without its "
                f"dependencies, but {', '.join(needs)} (in the same bundle) requires it with "
                f"them; declare the same no_deps in {needs[0]}'s BundleOptions (keeping what "
                "its tasks import), or deploy these tasks to separate runtimes"
            )
        kept = sorted(entry.kept, key=str.lower)
        merged.requirements += [entry.kept[k] for k in kept]
        merged.no_deps[key] = NoDepsRequirement(
            requirement=_joined(entry.requirements),
            kept=tuple(kept),
            declared_by=tuple(entry.by),
        )
    merged.platforms = dict(sorted(merged.platforms.items(), key=lambda kv: glibc_minor(kv[0])))
    return merged


def runtime_requirements(requires: Iterable[str], extras: Iterable[str] = ()) -> list[str]:
    """The requirement strings that apply on the runtime (markers evaluated for it)."""
    from packaging.requirements import Requirement

    out = []
    for line in requires:
        req = Requirement(line)
        if req.marker is not None:
            envs = [{**TARGET_MARKERS, "extra": e} for e in ("", *extras)]
            if not any(req.marker.evaluate(env) for env in envs):
                continue
        req.marker = None
        out.append(str(req))
    return out


def _dependencies_of(d: DeclaredOptions, name: str) -> dict[str, str]:
    """The runtime requirements of installed distribution `name`, by normalised name."""
    try:
        requires = md.distribution(name).requires or []
    except md.PackageNotFoundError:
        raise BundleError(
            f"{d.source}: BundleOptions.no_deps names {name!r}, which is not installed here; "
            "install the plugin with its dependencies so its pins can be read"
        ) from None
    return {normalise(req_name(r)): r for r in runtime_requirements(requires)}


def _checked_requirement(d: DeclaredOptions, line: str) -> list[str]:
    from packaging.requirements import InvalidRequirement

    try:
        return runtime_requirements([line])
    except InvalidRequirement as exc:
        raise BundleError(
            f"{d.source}: BundleOptions.requirements entry {line!r} is not a requirement "
            f"(PEP 508, e.g. 'numpy==1.26.4'): {str(exc).splitlines()[0]}"
        ) from None


def _check_declared_platform(d: DeclaredOptions, tag: str) -> None:
    m = MANYLINUX_RE.match(tag)
    if m is None or m["arch"] != "aarch64" or m["minor"] is None:
        raise BundleError(
            f"{d.source}: BundleOptions.platforms entry {tag!r} is not a newer manylinux tag "
            "for the runtime (Linux ARM64, glibc): use e.g. 'manylinux_2_28_aarch64'"
        )
    if int(m["minor"]) <= BASE_GLIBC_MINOR:
        raise BundleError(
            f"{d.source}: BundleOptions.platforms entry {tag!r} is already accepted "
            "(manylinux2014 is glibc 2.17); drop it"
        )


def glibc_minor(tag: str) -> int:
    m = MANYLINUX_RE.match(tag)
    return int(m["minor"]) if m and m["minor"] else BASE_GLIBC_MINOR


def _joined(requirements: list[str]) -> str:
    """One requirement from several spellings of it (pip refuses a name given twice)."""
    from packaging.requirements import Requirement

    reqs = [Requirement(r) for r in requirements]
    first = reqs[0]
    for other in reqs[1:]:
        first.specifier &= other.specifier
        first.extras |= other.extras
    return str(first)


def one_per_name(requirements: Iterable[str]) -> list[str]:
    """Sorted, each name once with every specifier it was given (pip's resolver takes the
    intersection either way; one entry reads better in --dry-run)."""
    by_name: dict[str, list[str]] = {}
    for r in requirements:
        by_name.setdefault(normalise(req_name(r)), []).append(r)
    return sorted((_joined(list(dict.fromkeys(rs))) for rs in by_name.values()), key=str.lower)


def shown(obj: Any) -> str:
    text = repr(obj)
    return text if len(text) <= 80 else text[:60] + "..."


def req_name(requirement: str) -> str:
    from packaging.requirements import Requirement

    return Requirement(requirement).name


def normalise(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")
