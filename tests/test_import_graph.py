"""The import graph has no circles and the core names no backend.

Every import counts, module level, inside a function or under `TYPE_CHECKING`: an import
moved into a function hides a loop from Python's import machinery, not from a reader. The
graph is grimp's (the engine of import-linter), built from the installed packages' source.
"""

from __future__ import annotations

import importlib.util

import grimp
import pytest

#: Packages whose graphs must be acyclic: the core and every plugin installed in this venv.
PACKAGES = [
    name
    for name in (
        "agentrft",
        "agentrft_wordle",
        "agentrft_expense_report",
        "agentrft_ticket_triage",
        "agentrft_reward_example",
        "agentrft_textarena",
        "agentrft_bfcl",
        "agentrft_tau2",
    )
    if importlib.util.find_spec(name) is not None
]


def cycle_edges(graph: grimp.ImportGraph) -> list[tuple[str, str]]:
    """Every direct import A -> B for which B also reaches A: the arrows on a circle."""
    return [
        (importer, imported)
        for importer in sorted(graph.modules)
        for imported in sorted(graph.find_modules_directly_imported_by(importer))
        if graph.chain_exists(importer=imported, imported=importer)
    ]


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_circles(package: str) -> None:
    graph = grimp.build_graph(package, cache_dir=None)
    edges = cycle_edges(graph)
    assert not edges, "imports on a circle (importer -> imported): " + ", ".join(
        f"{a} -> {b}" for a, b in edges
    )


def test_the_check_sees_a_circle() -> None:
    """The check itself: a graph with a loop through a function-level import is caught."""
    graph = grimp.ImportGraph()
    for module in ("pkg", "pkg.config", "pkg.plugins", "pkg.backend"):
        graph.add_module(module)
    graph.add_import(importer="pkg.config", imported="pkg.plugins")
    graph.add_import(importer="pkg.plugins", imported="pkg.backend")
    graph.add_import(importer="pkg.backend", imported="pkg.config")
    assert len(cycle_edges(graph)) == 3


def test_core_imports_no_backend() -> None:
    """Backends plug into the core through entry points; the core never names one."""
    graph = grimp.build_graph("agentrft", cache_dir=None)
    wrong = [
        f"{module} -> {imported}"
        for module in sorted(graph.modules)
        if not module.startswith("agentrft.backends")
        for imported in graph.find_modules_directly_imported_by(module)
        if imported.startswith("agentrft.backends")
    ]
    assert not wrong, "core modules import a backend: " + ", ".join(wrong)


def test_backends_import_each_other_not() -> None:
    """The local and SageMaker backends share only the core."""
    graph = grimp.build_graph("agentrft", cache_dir=None)
    pairs = [("agentrft.backends.local", "agentrft.backends.sagemaker")]
    for a, b in pairs:
        for x, y in ((a, b), (b, a)):
            assert not graph.chain_exists(importer=x, imported=y, as_packages=True), (
                f"{x} imports {y}"
            )


#: The local backend's parts, highest first: each may import only those below it.
LOCAL_LAYERS = ("run", "algo", "inference", "models")
#: Leaf modules under them all, which any part may read: the `local` section, the hardware.
LOCAL_LEAVES = ("settings", "devices")


def test_local_backend_layers() -> None:
    """run > algo > inference > models: no part of the local engine imports one above it."""
    graph = grimp.build_graph("agentrft", cache_dir=None)
    prefix = "agentrft.backends.local."

    def part(module: str) -> str | None:
        rest = module.removeprefix(prefix).split(".")
        return rest[0] if module.startswith(prefix) and rest[0] in LOCAL_LAYERS else None

    wrong = []
    for module in sorted(graph.modules):
        here = part(module)
        if here is None:
            continue
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            there = part(imported)
            leaf = imported.removeprefix(prefix) in LOCAL_LEAVES
            if imported.startswith(prefix) and there is None and not leaf:
                wrong.append(f"{module} -> {imported} (outside the layers)")
            elif there is not None and LOCAL_LAYERS.index(there) < LOCAL_LAYERS.index(here):
                wrong.append(f"{module} -> {imported}")
    assert not wrong, "imports up the local backend's layers: " + ", ".join(wrong)
    for leaf in LOCAL_LEAVES:  # a leaf stays one: it imports no other part of the backend
        inside = [m for m in graph.find_modules_directly_imported_by(prefix + leaf)
                  if m.startswith(prefix)]  # fmt: skip
        assert not inside, f"{prefix + leaf} imports {inside}"
