"""The code bundle an AgentCore runtime runs: agentrft, the task's plugin, their dependencies.

AgentCore runs a code zip on Linux ARM64 with a managed CPython (`PYTHON_3_11`), so:
- agentrft and the plugin are copied from where they are installed here (editable source
  trees included), with their dist-info, so entry-point discovery finds the task there too;
- third-party dependencies are installed by pip for the runtime's platform
  (`--platform manylinux2014_aarch64 --only-binary=:all: --python-version 3.11`), never
  from this machine's site-packages (their compiled parts are for the wrong CPU);
- a plugin may declare how its dependencies are installed (`agentrft.BundleOptions`,
  hook `agentrft_bundle_options`): some without their dependencies but a kept few, extra
  requirements, wheel platforms for a newer glibc; several plugins' declarations merge;
- a generated `main.py` starts the app (`agentrft.backends.sagemaker.runtime.main`): the
  `runtime` subpackage is what runs there; `jobs` and `cli` are the control plane.

`plan_bundle` is pure (it reads installed metadata); `build_bundle` does the work.
"""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentrft.bundle_options import BundleOptions

#: The runtime AgentCore runs the bundle with [model: AgentManagedRuntimeType].
RUNTIME_PYTHON = "PYTHON_3_11"
TARGET_PYTHON_VERSION = "3.11"
TARGET_PLATFORM = "manylinux2014_aarch64"
TARGET_IMPLEMENTATION = "cp"
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
#: Extras of agentrft the runtime needs (bedrock-agentcore, starlette, uvicorn).
AGENTRFT_EXTRAS = ("sagemaker",)
ENTRY_FILE = "main.py"
#: glibc of manylinux2014; `BundleOptions.platforms` opts into newer ones.
BASE_GLIBC_MINOR = 17
_MANYLINUX_RE = re.compile(r"^manylinux(?:2014|_2_(?P<minor>[0-9]+))_(?P<arch>[a-z0-9_]+)$")
HOOK = "agentrft_bundle_options"
MB = 1024 * 1024
#: AgentCore's fixed quotas for a direct code deployment package ("250 MB" compressed,
#: "750 MB" uncompressed, not adjustable); read as MiB, as Lambda's same figures are.
MAX_ZIP_BYTES = 250 * MB
MAX_UNPACKED_BYTES = 750 * MB
# Files a dist-info keeps in the bundle (RECORD and direct_url would describe this machine).
_DIST_INFO_FILES = ("METADATA", "entry_points.txt", "top_level.txt", "WHEEL")
_SKIP_DIRS = {"__pycache__", ".pytest_cache", ".ruff_cache", ".mypy_cache"}
_SKIP_SUFFIXES = (".pyc", ".pyo")


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


@dataclass
class BundlePlan:
    """Everything `build_bundle` will do, printable for `--dry-run`."""

    task: str
    workdir: Path
    local: list[LocalDistribution]
    #: Installed with their dependencies (the plugins' requirements, the kept ones, extras).
    requirements: list[str]
    no_deps: bool = False
    reward: str | None = None
    pip: list[str] = field(default_factory=lambda: [sys.executable, "-m", "pip"])
    #: Wheel platform for dependencies (another one only to test a bundle on this machine).
    platform: str = TARGET_PLATFORM
    #: Installed with `--no-deps` after the others (plugins' `BundleOptions.no_deps`).
    no_deps_requirements: list[NoDepsRequirement] = field(default_factory=list)
    #: Newer manylinux tags the plugins opted into (as declared, for aarch64) -> by whom.
    extra_platforms: dict[str, tuple[str, ...]] = field(default_factory=dict)
    declared: list[DeclaredOptions] = field(default_factory=list)

    @property
    def stage(self) -> Path:
        return self.workdir / "bundle"

    @property
    def zip_path(self) -> Path:
        return self.workdir / f"agentrft-runtime-{re.sub(r'[^A-Za-z0-9_.-]', '-', self.task)}.zip"

    def platform_tags(self) -> list[str]:
        """`--platform` values: manylinux2014 (and its PEP 600 spelling, which pip does
        not equate), then every glibc up to the newest one a plugin opted into."""
        arch = self.platform.removeprefix("manylinux2014_")
        newest = max((_glibc_minor(t) for t in self.extra_platforms), default=BASE_GLIBC_MINOR)
        return [self.platform] + [
            f"manylinux_2_{minor}_{arch}" for minor in range(BASE_GLIBC_MINOR, newest + 1)
        ]

    def _pip_install(self, *extra: str) -> list[str]:
        platforms = [a for tag in self.platform_tags() for a in ("--platform", tag)]
        return [
            *self.pip,
            "install",
            "--target",
            str(self.stage),
            *platforms,
            "--python-version",
            TARGET_PYTHON_VERSION,
            "--implementation",
            TARGET_IMPLEMENTATION,
            "--only-binary=:all:",
            "--no-compile",
            "--disable-pip-version-check",
            *extra,
        ]

    def pip_command(self) -> list[str]:
        """The install of every requirement that comes with its dependencies."""
        return self._pip_install(*self.requirements)

    def no_deps_command(self) -> list[str] | None:
        """The install of the plugins' `no_deps` requirements (None when there are none)."""
        if not self.no_deps_requirements:
            return None
        return self._pip_install("--no-deps", *(r.requirement for r in self.no_deps_requirements))

    def pip_commands(self) -> list[list[str]]:
        """What `build_bundle` runs, in order."""
        if self.no_deps:
            return []
        main = [self.pip_command()] if self.requirements else []
        second = self.no_deps_command()
        return main + ([second] if second else [])

    def describe(self) -> list[str]:
        """The build steps in words and commands."""
        steps = []
        for dist in self.local:
            where = ", ".join(str(p) for p in dist.packages)
            steps.append(f"copy {dist.name} {dist.version} from {where} (+ {dist.dist_info_dir})")
        for d in self.declared:
            steps.append(f"{d.source} declares BundleOptions: {_summary(d.options)}")
        for tag, who in self.extra_platforms.items():
            steps.append(
                f"accept wheels up to {tag} (glibc 2.{_glibc_minor(tag)}, newer than "
                f"manylinux2014's 2.17; opted into by {', '.join(who)}) for every dependency"
            )
        if self.no_deps:
            steps.append("skip third-party dependencies (--no-deps: this bundle will not run)")
        else:
            where = _platform_words(self.platform)
            if self.requirements:
                command = " ".join(_quote(a) for a in self.pip_command())
                steps.append(f"install dependencies for {where}:\n       {command}")
            second = self.no_deps_command()
            if second:
                for r in self.no_deps_requirements:
                    kept = ", ".join(r.kept) or "none"
                    steps.append(
                        f"{r.requirement} without its dependencies (declared by "
                        f"{', '.join(r.declared_by)}; kept above: {kept})"
                    )
                command = " ".join(_quote(a) for a in second)
                steps.append(f"install them for {where} with --no-deps:\n       {command}")
        steps.append(f"write {ENTRY_FILE} (starts agentrft.backends.sagemaker.runtime.main)")
        steps.append(f"zip {self.stage} -> {self.zip_path}")
        return steps


def plan_bundle(
    task: str,
    distribution: str | Sequence[str],
    workdir: str | Path,
    *,
    no_deps: bool = False,
    reward: str | None = None,
    options: Sequence[DeclaredOptions] = (),
    platform: str = TARGET_PLATFORM,
) -> BundlePlan:
    """Plan a bundle for `task` (one name, or `a,b` for a runtime serving several),
    provided by the installed `distribution` (several: one per task's plugin), installed
    as the plugins' `options` declare (`collect_bundle_options`)."""
    local = [local_distribution("agentrft", extras=AGENTRFT_EXTRAS)]
    names = [distribution] if isinstance(distribution, str) else list(distribution)
    for name in dict.fromkeys(names):
        if _normalise(name) not in {_normalise(d.name) for d in local}:
            local.append(local_distribution(name))
    bundled = {_normalise(d.name) for d in local}
    merged = merge_options(local, options)
    skipped = bundled | set(merged.no_deps)
    wanted = [r for d in local for r in d.requires if _normalise(_req_name(r)) not in skipped]
    requirements = _one_per_name([*wanted, *merged.requirements])
    return BundlePlan(
        task=task,
        workdir=Path(workdir),
        local=local,
        requirements=requirements,
        no_deps=no_deps,
        reward=reward,
        platform=_check_platform(platform),
        no_deps_requirements=list(merged.no_deps.values()),
        extra_platforms=merged.platforms,
        declared=list(options),
    )


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
                f"{where}: its {HOOK} hook returned {_shown(declared)}; return "
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
class _Merged:
    requirements: list[str] = field(default_factory=list)
    #: normalised name -> the no-deps requirement
    no_deps: dict[str, NoDepsRequirement] = field(default_factory=dict)
    platforms: dict[str, tuple[str, ...]] = field(default_factory=dict)


def merge_options(
    local: Sequence[LocalDistribution], options: Sequence[DeclaredOptions]
) -> _Merged:
    """Check each declaration against the installed metadata and merge them: the union
    of no-deps requirements (and of what each keeps), of extra requirements and of
    platforms. A requirement one plugin installs without its dependencies while another
    bundled distribution needs it with them is a conflict."""
    by_name = {_normalise(d.name): d for d in local}
    merged = _Merged()
    no_deps: dict[str, _NoDepsEntry] = {}
    for d in options:
        owner = by_name.get(_normalise(d.distribution))
        if owner is None:
            raise BundleError(f"{d.source} declares BundleOptions but is not in this bundle")
        own = {_normalise(_req_name(r)): r for r in owner.requires}
        for name, keep in d.options.no_deps.items():
            key = _normalise(name)
            if key in by_name:
                raise BundleError(
                    f"{d.source}: BundleOptions.no_deps names {name!r}, which the bundle "
                    "copies from this machine (it is not installed by pip); drop it"
                )
            if key not in own:
                raise BundleError(
                    f"{d.source}: BundleOptions.no_deps names {name!r}, which "
                    f"{owner.name} does not require on the runtime (it requires: "
                    f"{', '.join(_req_name(r) for r in owner.requires) or 'nothing'}); "
                    "name one of its requirements, or list it under requirements"
                )
            entry = no_deps.setdefault(key, _NoDepsEntry(name))
            entry.requirements.append(own[key])
            entry.by.append(d.source)
            entry.dists.add(_normalise(owner.name))
            deps = _dependencies_of(d, name)
            for kept_name in keep:
                req = deps.get(_normalise(kept_name))
                if req is None:
                    raise BundleError(
                        f"{d.source}: BundleOptions.no_deps[{name!r}] keeps {kept_name!r}, "
                        f"which {name} {md.version(name)} does not require on the runtime "
                        f"(it requires: {', '.join(sorted(deps.values(), key=str.lower))}); "
                        "list it under requirements=(...) with a version instead"
                    )
                entry.kept[_req_name(req)] = req
        for line in d.options.requirements:
            for req in _checked_requirement(d, line):
                if _normalise(_req_name(req)) in by_name:
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
            if key in {_normalise(_req_name(r)) for r in dist.requires}
            and _normalise(dist.name) not in entry.dists
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
    merged.platforms = dict(sorted(merged.platforms.items(), key=lambda kv: _glibc_minor(kv[0])))
    return merged


def local_distribution(name: str, extras: Iterable[str] = ()) -> LocalDistribution:
    """Where an installed distribution's packages are, and what it needs on the runtime."""
    try:
        dist = md.distribution(name)
    except md.PackageNotFoundError:
        raise BundleError(
            f"distribution {name!r} is not installed here; install it (pip install -e "
            f"<its source tree>) so its task can be bundled"
        ) from None
    packages = [_package_dir(top) for top in _top_level(dist)]
    info = {f: text for f in _DIST_INFO_FILES if (text := dist.read_text(f)) is not None}
    return LocalDistribution(
        name=dist.metadata["Name"],
        version=dist.version,
        packages=packages,
        dist_info=info,
        requires=runtime_requirements(dist.requires or [], extras),
    )


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


def build_bundle(
    plan: BundlePlan,
    *,
    run: Callable[..., Any] = subprocess.run,
    echo: Callable[[str], None] = lambda _msg: None,
) -> Path:
    """Build the staged tree and the zip; returns the zip's path."""
    if plan.stage.exists():
        shutil.rmtree(plan.stage)
    plan.stage.mkdir(parents=True)
    # Dependencies first: the local copies below must win over anything pip brings; the
    # no-deps pass last, so the resolver of the first never sees their pins.
    for command in plan.pip_commands():
        echo(f"installing dependencies for {_platform_words(plan.platform)} (downloads wheels)")
        result = run(command, capture_output=True, text=True)
        if result.returncode != 0:
            tail = (result.stderr or result.stdout or "").strip().splitlines()[-15:]
            raise BundleError(
                f"pip could not get {' / '.join(plan.platform_tags()[:1])} wheels for the "
                "runtime:\n"
                + "\n".join(tail)
                + f"\nA dependency without a {plan.platform} / CPython 3.11 wheel cannot "
                "run in AgentCore's code runtime: pin a version that has one, or drop it; a "
                "plugin can install a heavy requirement without its dependencies, or opt into "
                "a newer manylinux, with agentrft_bundle_options (docs/sagemaker-runtime.md)."
            )
    for dist in plan.local:
        echo(f"copying {dist.name} {dist.version}")
        _copy_distribution(dist, plan.stage)
    (plan.stage / ENTRY_FILE).write_text(entry_script(plan.task, plan.reward), encoding="utf-8")
    check_unpacked_size(plan.stage)
    echo(f"zipping {plan.zip_path.name}")
    write_zip(plan.stage, plan.zip_path)
    check_zip_size(plan.zip_path)
    return plan.zip_path


def check_unpacked_size(stage: Path, limit: int = MAX_UNPACKED_BYTES) -> int:
    """The staged tree's size in bytes; a BundleError naming the largest parts above `limit`."""
    sizes: dict[str, int] = {}
    for path in stage.rglob("*"):
        if path.is_file():
            top = path.relative_to(stage).parts[0]
            sizes[top] = sizes.get(top, 0) + path.stat().st_size
    total = sum(sizes.values())
    if total > limit:
        largest = sorted(sizes.items(), key=lambda kv: -kv[1])[:5]
        parts = ", ".join(f"{k} {v / MB:.0f}" for k, v in largest)
        raise BundleError(
            f"the bundle is {total / MB:.0f} MiB unpacked, over AgentCore's {limit / MB:.0f} "
            f"MiB for a code package (largest, MiB: {parts}); a plugin can install a requirement "
            "without the dependencies its tasks never import (BundleOptions.no_deps, "
            "docs/sagemaker-runtime.md)"
        )
    return total


def check_zip_size(zip_path: Path, limit: int = MAX_ZIP_BYTES) -> int:
    size = zip_path.stat().st_size
    if size > limit:
        raise BundleError(
            f"{zip_path.name} is {size / MB:.0f} MiB, over AgentCore's {limit / MB:.0f} MiB for "
            "a zipped code package; slim the plugin's install (BundleOptions.no_deps, "
            "docs/sagemaker-runtime.md)"
        )
    return size


def entry_script(task: str, reward: str | None = None) -> str:
    """The bundle's `main.py`: the env vars set at deploy win; the baked-in task is a fallback."""
    lines = [
        f'"""AgentCore entry point generated by `agentrft deploy --task {task}`."""',
        "",
        "import os",
        "",
        f"os.environ.setdefault('AGENTRFT_TASK', {task!r})",
    ]
    if reward:
        lines.append(f"os.environ.setdefault('AGENTRFT_REWARD', {reward!r})")
    lines += [
        "",
        "from agentrft.backends.sagemaker.runtime.main import main",
        "",
        "main()",
        "",
    ]
    return "\n".join(lines)


def write_zip(stage: Path, zip_path: Path) -> None:
    """Zip `stage` with sorted entries and fixed timestamps (same tree, same bytes)."""
    zip_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = zip_path.with_name(zip_path.name + ".partial")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(p for p in stage.rglob("*") if p.is_file()):
            rel = path.relative_to(stage).as_posix()
            info = zipfile.ZipInfo(rel, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = (0o755 if path.stat().st_mode & 0o111 else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            with path.open("rb") as src, zf.open(info, "w") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
    tmp.replace(zip_path)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _copy_distribution(dist: LocalDistribution, stage: Path) -> None:
    for pkg in dist.packages:
        dest = stage / pkg.name
        if dest.exists():  # a dependency pip brought under the same name: ours wins
            shutil.rmtree(dest) if dest.is_dir() else dest.unlink()
        if pkg.is_dir():
            shutil.copytree(pkg, dest, ignore=_ignore)
        else:
            shutil.copy2(pkg, dest)
    info_dir = stage / dist.dist_info_dir
    info_dir.mkdir(exist_ok=True)
    for fname, text in dist.dist_info.items():
        (info_dir / fname).write_text(text, encoding="utf-8")
    (info_dir / "INSTALLER").write_text("agentrft-deploy\n", encoding="utf-8")


def _ignore(directory: str, names: list[str]) -> list[str]:
    return [n for n in names if n in _SKIP_DIRS or n.endswith(_SKIP_SUFFIXES)]


def _top_level(dist: md.Distribution) -> list[str]:
    text = dist.read_text("top_level.txt")
    names = [n.strip() for n in (text or "").splitlines() if n.strip()]
    if not names:
        # Editable installs may lack top_level.txt: the entry points name the packages.
        names = sorted({ep.value.split(":")[0].split(".")[0] for ep in dist.entry_points})
    if not names:
        raise BundleError(
            f"cannot tell which packages distribution {dist.metadata['Name']!r} provides "
            "(no top_level.txt, no entry points)"
        )
    return names


def _package_dir(top: str) -> Path:
    import importlib.util

    spec = importlib.util.find_spec(top)
    if spec is None:
        raise BundleError(f"package {top!r} is listed by its distribution but cannot be imported")
    if spec.submodule_search_locations:
        locations = list(spec.submodule_search_locations)
        return Path(locations[0])
    if spec.origin:
        return Path(spec.origin)
    raise BundleError(f"package {top!r} has no files on disk to bundle")


def _dependencies_of(d: DeclaredOptions, name: str) -> dict[str, str]:
    """The runtime requirements of installed distribution `name`, by normalised name."""
    try:
        requires = md.distribution(name).requires or []
    except md.PackageNotFoundError:
        raise BundleError(
            f"{d.source}: BundleOptions.no_deps names {name!r}, which is not installed here; "
            "install the plugin with its dependencies so its pins can be read"
        ) from None
    return {_normalise(_req_name(r)): r for r in runtime_requirements(requires)}


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
    m = _MANYLINUX_RE.match(tag)
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


def _check_platform(platform: str) -> str:
    if not re.fullmatch(r"manylinux2014_[a-z0-9_]+", platform):
        raise BundleError(
            f"platform {platform!r}: give manylinux2014_<arch> (e.g. manylinux2014_x86_64 to "
            "try the bundle on this machine); a newer glibc is a plugin's opt-in "
            "(BundleOptions.platforms)"
        )
    return platform


def _glibc_minor(tag: str) -> int:
    m = _MANYLINUX_RE.match(tag)
    return int(m["minor"]) if m and m["minor"] else BASE_GLIBC_MINOR


def _platform_words(platform: str) -> str:
    if platform == TARGET_PLATFORM:
        return "Linux ARM64 / CPython 3.11"
    return f"{platform} / CPython 3.11 (a test build: AgentCore runs {TARGET_PLATFORM})"


def _joined(requirements: list[str]) -> str:
    """One requirement from several spellings of it (pip refuses a name given twice)."""
    from packaging.requirements import Requirement

    reqs = [Requirement(r) for r in requirements]
    first = reqs[0]
    for other in reqs[1:]:
        first.specifier &= other.specifier
        first.extras |= other.extras
    return str(first)


def _one_per_name(requirements: Iterable[str]) -> list[str]:
    """Sorted, each name once with every specifier it was given (pip's resolver takes the
    intersection either way; one entry reads better in --dry-run)."""
    by_name: dict[str, list[str]] = {}
    for r in requirements:
        by_name.setdefault(_normalise(_req_name(r)), []).append(r)
    return sorted((_joined(list(dict.fromkeys(rs))) for rs in by_name.values()), key=str.lower)


def _summary(options: BundleOptions) -> str:
    parts = []
    for name, kept in options.no_deps.items():
        parts.append(f"{name} without its dependencies but {', '.join(kept) or 'none'}")
    if options.requirements:
        parts.append(f"also {', '.join(options.requirements)}")
    if options.platforms:
        parts.append(f"wheels up to {', '.join(options.platforms)}")
    return "; ".join(parts) or "nothing"


def _shown(obj: Any) -> str:
    text = repr(obj)
    return text if len(text) <= 80 else text[:60] + "..."


def _req_name(requirement: str) -> str:
    from packaging.requirements import Requirement

    return Requirement(requirement).name


def _normalise(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def _quote(arg: str) -> str:
    import shlex

    return shlex.quote(arg)
