"""Plugins' `BundleOptions`: checked against installed metadata, merged, turned into pip
commands (pip stubbed). The plugins are real distributions installed into a temporary
sys.path entry (dist-info + entry points), so discovery and metadata go the real way."""

from __future__ import annotations

import sys
import textwrap
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from agentrft import BundleOptions
from agentrft.backends.sagemaker.cli import runtime as runtime_cli
from agentrft.backends.sagemaker.jobs.bundle import (
    BundleError,
    DeclaredOptions,
    build_bundle,
    collect_bundle_options,
    plan_bundle,
)
from agentrft.plugins import load_plugins, use_plugins

PLUGIN = textwrap.dedent(
    """
    from agentrft import hookimpl
    from agentrft.testing.tasks import FindNumberTask

    OPTIONS = None  # set by the tests
    SEEN = []

    class {cls}(FindNumberTask):
        name = "{task}"

    @hookimpl
    def agentrft_tasks():
        return [{cls}]

    @hookimpl
    def agentrft_bundle_options(tasks):
        SEEN.append(list(tasks))
        if isinstance(OPTIONS, Exception):
            raise OPTIONS
        return OPTIONS
    """
)


def _dist(root: Path, name: str, requires: list[str], plugin: str | None = None) -> None:
    info = root / f"{name}-1.0.dist-info"
    info.mkdir()
    lines = ["Metadata-Version: 2.1", f"Name: {name}", "Version: 1.0"]
    lines += [f"Requires-Dist: {r}" for r in requires]
    (info / "METADATA").write_text("\n".join(lines) + "\n")
    if plugin is not None:
        pkg = root / name
        pkg.mkdir()
        (pkg / "__init__.py").write_text("")
        (pkg / "plugin.py").write_text(plugin)
        (info / "top_level.txt").write_text(f"{name}\n")
        (info / "entry_points.txt").write_text(f"[agentrft]\n{name} = {name}.plugin\n")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """plugalpha (task alpha_task) and plugbeta (beta_task) both require `heavy`, whose own
    requirements are pinned; `plain` requires heavy too and declares nothing."""
    root = tmp_path_factory.mktemp("site")
    _dist(
        root,
        "heavy",
        ["torch>=2.4", "mpmath==1.3.0", "tree_sitter==0.21.3", 'cuda-stuff; extra == "gpu"'],
    )
    _dist(
        root,
        "plugalpha",
        ["agentrft>=0.1", "heavy==1.0", "small>=2"],
        PLUGIN.format(cls="Alpha", task="alpha_task"),
    )
    _dist(
        root,
        "plugbeta",
        ["agentrft>=0.1", "heavy>=0.9", 'numpy<2; platform_machine == "aarch64"'],
        PLUGIN.format(cls="Beta", task="beta_task"),
    )
    _dist(root, "plain", ["agentrft>=0.1", "heavy"], PLUGIN.format(cls="Plain", task="plain_task"))
    sys.path.insert(0, str(root))
    yield root
    sys.path.remove(str(root))
    for mod in [m for m in sys.modules if m.split(".")[0] in {"plugalpha", "plugbeta", "plain"}]:
        del sys.modules[mod]


def declare(monkeypatch: pytest.MonkeyPatch, dist: str, options: Any) -> None:
    import importlib

    module = importlib.import_module(f"{dist}.plugin")
    monkeypatch.setattr(module, "OPTIONS", options)
    monkeypatch.setattr(module, "SEEN", [])


def planned(tmp_path: Path, *dists: str, **kwargs: Any) -> Any:
    plugins = load_plugins()
    tasks = [f"{d.removeprefix('plug')}_task" for d in dists]
    options = collect_bundle_options(plugins, tasks)
    return plan_bundle(",".join(tasks), list(dists), tmp_path, options=options, **kwargs)


def after(cmd: list[str], flag: str) -> list[str]:
    return cmd[cmd.index(flag) + 1 :]


def test_no_deps_keeps_only_the_named_dependencies_with_their_own_pins(
    site: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    declare(monkeypatch, "plugalpha", BundleOptions(no_deps={"heavy": ["mpmath", "tree-sitter"]}))
    plan = planned(tmp_path, "plugalpha")
    main = after(plan.pip_command(), "--disable-pip-version-check")
    assert "mpmath==1.3.0" in main and "tree_sitter==0.21.3" in main and "small>=2" in main
    assert not [r for r in main if r.startswith(("heavy", "torch", "cuda"))]
    second = plan.no_deps_command()
    assert after(second, "--disable-pip-version-check") == ["--no-deps", "heavy==1.0"]
    assert second[second.index("--platform") + 1] == "manylinux2014_aarch64"

    calls: list[list[str]] = []

    class Done:
        returncode = 0
        stdout = stderr = ""

    def fake_pip(cmd: list[str], **kwargs: Any) -> Done:
        calls.append(cmd)
        target = Path(cmd[cmd.index("--target") + 1])
        name = "heavy" if "--no-deps" in cmd else "mpmath"
        (target / name).mkdir(parents=True, exist_ok=True)
        (target / name / "__init__.py").write_text("")
        return Done()

    names = zipfile.ZipFile(build_bundle(plan, run=fake_pip)).namelist()
    assert [("--no-deps" in c) for c in calls] == [False, True]  # the no-deps pass last
    assert {"heavy/__init__.py", "mpmath/__init__.py", "plugalpha/plugin.py"} <= set(names)


def test_a_list_of_names_keeps_no_dependency_and_requirements_add_their_own(
    site: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    declare(
        monkeypatch, "plugalpha", BundleOptions(no_deps=["heavy"], requirements=["mpmath>=1.3"])
    )
    plan = planned(tmp_path, "plugalpha")
    main = after(plan.pip_command(), "--disable-pip-version-check")
    assert "mpmath>=1.3" in main and not [r for r in main if r.startswith(("heavy", "tree"))]
    assert plan.no_deps_requirements[0].kept == ()


def test_a_newer_manylinux_is_opt_in_and_accepts_every_glibc_up_to_it(
    site: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    plan = planned(tmp_path, "plugalpha")  # nothing declared
    assert plan.platform_tags() == ["manylinux2014_aarch64", "manylinux_2_17_aarch64"]
    declare(monkeypatch, "plugalpha", BundleOptions(platforms=["manylinux_2_28_aarch64"]))
    plan = planned(tmp_path, "plugalpha")
    tags = plan.platform_tags()
    assert tags[0] == "manylinux2014_aarch64" and tags[-1] == "manylinux_2_28_aarch64"
    assert len(tags) == 1 + (28 - 17 + 1)  # 2_17 .. 2_28: pip does not expand PEP 600 tags
    flags = " ".join(plan.pip_command())
    assert "--platform manylinux_2_24_aarch64" in flags
    steps = "\n".join(plan.describe())
    assert "glibc 2.28" in steps and "plugin 'plugalpha'" in steps
    # a test build for this machine accepts the same glibc range for its own CPU
    local = planned(tmp_path, "plugalpha", platform="manylinux2014_x86_64")
    assert local.platform_tags()[-1] == "manylinux_2_28_x86_64"
    assert "a test build" in "\n".join(local.describe())
    with pytest.raises(BundleError, match="give manylinux2014_<arch>"):
        planned(tmp_path, "plugalpha", platform="manylinux_2_28_x86_64")


def test_declarations_of_several_plugins_merge(
    site: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    declare(monkeypatch, "plugalpha", BundleOptions(no_deps={"heavy": ["mpmath"]}))
    declare(
        monkeypatch,
        "plugbeta",
        BundleOptions(no_deps={"heavy": ["tree_sitter"]}, platforms=["manylinux_2_28_aarch64"]),
    )
    plan = planned(tmp_path, "plugalpha", "plugbeta")
    main = after(plan.pip_command(), "--disable-pip-version-check")
    assert "mpmath==1.3.0" in main and "tree_sitter==0.21.3" in main  # the union kept
    assert "numpy<2" in main  # beta's marker holds on aarch64
    (heavy,) = plan.no_deps_requirements
    assert heavy.requirement in ("heavy==1.0,>=0.9", "heavy>=0.9,==1.0")  # one entry, both pins
    assert len(heavy.declared_by) == 2
    assert plan.extra_platforms == {
        "manylinux_2_28_aarch64": ("plugin 'plugbeta' (distribution plugbeta)",)
    }
    # each plugin is asked about its own tasks only
    import plugalpha.plugin
    import plugbeta.plugin

    assert plugalpha.plugin.SEEN == [["alpha_task"]] and plugbeta.plugin.SEEN == [["beta_task"]]


def test_no_deps_against_a_plugin_that_needs_the_dependencies_is_a_conflict(
    site: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    declare(monkeypatch, "plugalpha", BundleOptions(no_deps={"heavy": ["mpmath"]}))
    with pytest.raises(BundleError) as err:
        planned(tmp_path, "plugalpha", "plain")
    msg = str(err.value)
    assert "plugin 'plugalpha'" in msg and "installs heavy without its dependencies" in msg
    assert "plain" in msg and "declare the same no_deps" in msg and "\n" not in msg


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (BundleOptions(no_deps=["hevy"]), "no_deps names 'hevy', which plugalpha does not require"),
        (BundleOptions(no_deps=["agentrft"]), "copies from this machine"),
        (
            BundleOptions(no_deps={"heavy": ["numpyy"]}),
            "keeps 'numpyy', which heavy 1.0 does not require",
        ),
        (BundleOptions(requirements=["numpy>>1"]), "is not a requirement (PEP 508"),
        (BundleOptions(requirements=["agentrft"]), "copied from this machine"),
        (BundleOptions(platforms=["manylinux_2_28_x86_64"]), "use e.g. 'manylinux_2_28_aarch64'"),
        (BundleOptions(platforms=["musllinux_1_2_aarch64"]), "not a newer manylinux tag"),
        (BundleOptions(platforms=["manylinux_2_17_aarch64"]), "is already accepted"),
        ({"no_deps": ["heavy"]}, "returned {'no_deps': ['heavy']}; return agentrft.BundleOptions"),
        (RuntimeError("boom"), "its agentrft_bundle_options hook raised RuntimeError: boom"),
    ],
)
def test_bad_declarations_name_the_plugin_and_the_fix(
    site: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, options: Any, expected: str
) -> None:
    declare(monkeypatch, "plugalpha", options)
    with pytest.raises(BundleError) as err:
        planned(tmp_path, "plugalpha")
    msg = str(err.value)
    assert msg.startswith("plugin 'plugalpha' (distribution plugalpha): "), msg
    assert expected in msg and "\n" not in msg


def test_bundle_options_refuse_a_string_where_a_list_goes() -> None:
    with pytest.raises(TypeError, match=r"write no_deps=\{'heavy': \[...\]\}"):
        BundleOptions(no_deps="heavy")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"write platforms=\('manylinux_2_28_aarch64',\)"):
        BundleOptions(platforms="manylinux_2_28_aarch64")  # type: ignore[arg-type]
    assert BundleOptions(no_deps=["a"]).no_deps == {"a": ()}


def test_a_plugin_outside_the_bundle_is_not_asked(
    site: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    declare(monkeypatch, "plugbeta", RuntimeError("must not be called"))
    declared = collect_bundle_options(load_plugins(), ["alpha_task"])
    assert declared == []


def deploy_cli() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def _root() -> None:
        """agentrft (test)."""

    runtime_cli.register(app)
    return app


def test_dry_run_prints_both_pip_commands_and_bad_declarations_exit_2(
    site: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    declare(
        monkeypatch,
        "plugalpha",
        BundleOptions(no_deps={"heavy": ["mpmath"]}, platforms=["manylinux_2_28_aarch64"]),
    )
    args = ["deploy", "--task", "alpha_task", "--workdir", str(tmp_path), "--dry-run"]
    with use_plugins(load_plugins()):
        result = CliRunner().invoke(deploy_cli(), args)
        assert result.exit_code == 0, result.output
        out = result.output
        assert "declares BundleOptions: heavy without its dependencies but mpmath" in out
        main_line = next(line for line in out.splitlines() if "mpmath==1.3.0" in line)
        assert "--platform manylinux_2_28_aarch64" in main_line and "heavy" not in main_line
        assert any(line.strip().endswith("--no-deps heavy==1.0") for line in out.splitlines())
        assert "glibc 2.28" in out

        declare(monkeypatch, "plugalpha", BundleOptions(no_deps=["hevy"]))
        bad = CliRunner().invoke(deploy_cli(), args)
        assert bad.exit_code == 2
        assert "error: plugin 'plugalpha'" in bad.output and "Traceback" not in bad.output

        refused = CliRunner().invoke(
            deploy_cli(), [*args[:-1], "--platform", "manylinux2014_x86_64"]
        )
        assert refused.exit_code == 2 and "add --build-only" in refused.output


def test_declared_options_know_their_source() -> None:
    d = DeclaredOptions("bfcl", "agentrft-bfcl", BundleOptions())
    assert d.source == "plugin 'bfcl' (distribution agentrft-bfcl)"


def test_a_bundle_over_agentcore_code_package_limits_is_refused(tmp_path: Path) -> None:
    from agentrft.backends.sagemaker.jobs import bundle

    stage = tmp_path / "stage"
    (stage / "big").mkdir(parents=True)
    (stage / "big" / "blob.bin").write_bytes(b"\0" * 3000)
    (stage / "small.py").write_text("x = 1\n")
    assert bundle.check_unpacked_size(stage) == 3006
    with pytest.raises(BundleError, match=r"unpacked, over AgentCore's .* \(largest, MiB: big 0"):
        bundle.check_unpacked_size(stage, limit=1000)
    zip_path = tmp_path / "b.zip"
    bundle.write_zip(stage, zip_path)
    with pytest.raises(BundleError, match="over AgentCore's 0 MiB for a zipped code package"):
        bundle.check_zip_size(zip_path, limit=10)
    assert bundle.MAX_ZIP_BYTES == 250 * 2**20 and bundle.MAX_UNPACKED_BYTES == 750 * 2**20
