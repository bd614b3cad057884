"""The code bundle an AgentCore runtime runs: agentrft, the task's plugin, their dependencies.

AgentCore runs a code zip on Linux ARM64 with a managed CPython (`PYTHON_3_11`), so:
- agentrft and the plugin are copied from where they are installed here (editable source
  trees included), with their dist-info, so entry-point discovery finds the task there too;
- third-party dependencies are installed by pip for the runtime's platform
  (`--platform manylinux2014_aarch64 --only-binary=:all: --python-version 3.11`), never
  from this machine's site-packages (their compiled parts are for the wrong CPU);
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


@dataclass
class BundlePlan:
    """Everything `build_bundle` will do, printable for `--dry-run`."""

    task: str
    workdir: Path
    local: list[LocalDistribution]
    requirements: list[str]
    no_deps: bool = False
    reward: str | None = None
    pip: list[str] = field(default_factory=lambda: [sys.executable, "-m", "pip"])
    #: Wheel platform for dependencies (another one only to test a bundle on this machine).
    platform: str = TARGET_PLATFORM

    @property
    def stage(self) -> Path:
        return self.workdir / "bundle"

    @property
    def zip_path(self) -> Path:
        return self.workdir / f"agentrft-runtime-{re.sub(r'[^A-Za-z0-9_.-]', '-', self.task)}.zip"

    def pip_command(self) -> list[str]:
        return [
            *self.pip,
            "install",
            "--target",
            str(self.stage),
            "--platform",
            self.platform,
            "--python-version",
            TARGET_PYTHON_VERSION,
            "--implementation",
            TARGET_IMPLEMENTATION,
            "--only-binary=:all:",
            "--no-compile",
            "--disable-pip-version-check",
            *self.requirements,
        ]

    def describe(self) -> list[str]:
        """The build steps in words and commands."""
        steps = []
        for dist in self.local:
            where = ", ".join(str(p) for p in dist.packages)
            steps.append(f"copy {dist.name} {dist.version} from {where} (+ {dist.dist_info_dir})")
        if self.no_deps:
            steps.append("skip third-party dependencies (--no-deps: this bundle will not run)")
        else:
            command = " ".join(_quote(a) for a in self.pip_command())
            steps.append(f"install dependencies for Linux ARM64 / CPython 3.11:\n       {command}")
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
) -> BundlePlan:
    """Plan a bundle for `task` (one name, or `a,b` for a runtime serving several),
    provided by the installed `distribution` (several: one per task's plugin)."""
    local = [local_distribution("agentrft", extras=AGENTRFT_EXTRAS)]
    names = [distribution] if isinstance(distribution, str) else list(distribution)
    for name in dict.fromkeys(names):
        if _normalise(name) not in {_normalise(d.name) for d in local}:
            local.append(local_distribution(name))
    bundled = {_normalise(d.name) for d in local}
    requirements = sorted(
        {r for d in local for r in d.requires if _normalise(_req_name(r)) not in bundled},
        key=str.lower,
    )
    return BundlePlan(
        task=task,
        workdir=Path(workdir),
        local=local,
        requirements=requirements,
        no_deps=no_deps,
        reward=reward,
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
    if not plan.no_deps and plan.requirements:
        # Dependencies first: the local copies below must win over anything pip brings.
        echo("installing dependencies for Linux ARM64 (this downloads wheels)")
        result = run(plan.pip_command(), capture_output=True, text=True)
        if result.returncode != 0:
            tail = (result.stderr or result.stdout or "").strip().splitlines()[-15:]
            raise BundleError(
                "pip could not get ARM64 wheels for the runtime:\n"
                + "\n".join(tail)
                + "\nA dependency without a manylinux2014_aarch64 / CPython 3.11 wheel cannot "
                "run in AgentCore's code runtime: pin a version that has one, or drop it."
            )
    for dist in plan.local:
        echo(f"copying {dist.name} {dist.version}")
        _copy_distribution(dist, plan.stage)
    (plan.stage / ENTRY_FILE).write_text(entry_script(plan.task, plan.reward), encoding="utf-8")
    echo(f"zipping {plan.zip_path.name}")
    write_zip(plan.stage, plan.zip_path)
    return plan.zip_path


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


def _req_name(requirement: str) -> str:
    from packaging.requirements import Requirement

    return Requirement(requirement).name


def _normalise(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def _quote(arg: str) -> str:
    import shlex

    return shlex.quote(arg)
