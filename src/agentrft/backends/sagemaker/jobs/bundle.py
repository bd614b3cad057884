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

from packaging.requirements import Requirement

from agentrft.backends.sagemaker.jobs.bundle_mcp import check_mcp_servers, mcp_server_lines
from agentrft.backends.sagemaker.jobs.bundle_merge import (
    BASE_GLIBC_MINOR,
    HOOK,
    TARGET_MARKERS,
    BundleError,
    DeclaredOptions,
    LocalDistribution,
    NoDepsRequirement,
    collect_bundle_options,
    glibc_minor,
    merge_options,
    normalise,
    one_per_name,
    req_name,
    runtime_requirements,
)
from agentrft.bundle_options import BundleOptions

__all__ = [
    "AGENTRFT_EXTRAS",
    "BASE_GLIBC_MINOR",
    "ENTRY_FILE",
    "HOOK",
    "MAX_UNPACKED_BYTES",
    "MAX_ZIP_BYTES",
    "RUNTIME_PYTHON",
    "TARGET_MARKERS",
    "TARGET_PLATFORM",
    "BundleError",
    "BundlePlan",
    "DeclaredOptions",
    "LocalDistribution",
    "NoDepsRequirement",
    "build_bundle",
    "check_unpacked_size",
    "check_zip_size",
    "collect_bundle_options",
    "entry_script",
    "local_distribution",
    "plan_bundle",
    "runtime_requirements",
    "sha256_file",
    "write_zip",
]

#: The runtime AgentCore runs the bundle with [model: AgentManagedRuntimeType].
RUNTIME_PYTHON = "PYTHON_3_11"
TARGET_PYTHON_VERSION = "3.11"
TARGET_PLATFORM = "manylinux2014_aarch64"
TARGET_IMPLEMENTATION = "cp"
#: Extras of agentrft the runtime needs (bedrock-agentcore, starlette, uvicorn).
AGENTRFT_EXTRAS = ("sagemaker",)
ENTRY_FILE = "main.py"
MB = 1024 * 1024
#: AgentCore's fixed quotas for a direct code deployment package ("250 MB" compressed,
#: "750 MB" uncompressed, not adjustable); read as MiB, as Lambda's same figures are.
MAX_ZIP_BYTES = 250 * MB
MAX_UNPACKED_BYTES = 750 * MB
# Files a dist-info keeps in the bundle (RECORD and direct_url would describe this machine).
_DIST_INFO_FILES = ("METADATA", "entry_points.txt", "top_level.txt", "WHEEL")
_SKIP_DIRS = {"__pycache__", ".pytest_cache", ".ruff_cache", ".mypy_cache"}
_SKIP_SUFFIXES = (".pyc", ".pyo")


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
        newest = max((glibc_minor(t) for t in self.extra_platforms), default=BASE_GLIBC_MINOR)
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
                f"accept wheels up to {tag} (glibc 2.{glibc_minor(tag)}, newer than "
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
        steps.extend(mcp_server_lines(self.declared))
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
    names = [distribution] if isinstance(distribution, str) else list(distribution)
    plugins = [
        local_distribution(name) for name in dict.fromkeys(names) if normalise(name) != "agentrft"
    ]
    # A plugin that requires agentrft[mcp] needs that extra's requirements on the runtime too.
    asked = {
        extra
        for d in plugins
        for r in d.requires
        if normalise(req_name(r)) == "agentrft"
        for extra in Requirement(r).extras
    }
    extras = tuple(dict.fromkeys([*AGENTRFT_EXTRAS, *sorted(asked)]))
    local = [local_distribution("agentrft", extras=extras), *plugins]
    bundled = {normalise(d.name) for d in local}
    merged = merge_options(local, options)
    skipped = bundled | set(merged.no_deps)
    wanted = [r for d in local for r in d.requires if normalise(req_name(r)) not in skipped]
    requirements = one_per_name([*wanted, *merged.requirements])
    check_mcp_servers(local, requirements, options)
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


def _check_platform(platform: str) -> str:
    if not re.fullmatch(r"manylinux2014_[a-z0-9_]+", platform):
        raise BundleError(
            f"platform {platform!r}: give manylinux2014_<arch> (e.g. manylinux2014_x86_64 to "
            "try the bundle on this machine); a newer glibc is a plugin's opt-in "
            "(BundleOptions.platforms)"
        )
    return platform


def _platform_words(platform: str) -> str:
    if platform == TARGET_PLATFORM:
        return "Linux ARM64 / CPython 3.11"
    return f"{platform} / CPython 3.11 (a test build: AgentCore runs {TARGET_PLATFORM})"


def _summary(options: BundleOptions) -> str:
    parts = []
    for name, kept in options.no_deps.items():
        parts.append(f"{name} without its dependencies but {', '.join(kept) or 'none'}")
    if options.requirements:
        parts.append(f"also {', '.join(options.requirements)}")
    if options.platforms:
        parts.append(f"wheels up to {', '.join(options.platforms)}")
    if options.mcp_servers:
        parts.append(f"MCP servers {', '.join(s.name for s in options.mcp_servers)}")
    return "; ".join(parts) or "nothing"


def _quote(arg: str) -> str:
    import shlex

    return shlex.quote(arg)
