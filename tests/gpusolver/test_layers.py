"""gpusolver's layers: imports go one way, CuPy is imported in two places, no circles.

Every ``import`` of the package's source counts, those inside functions too (a lazy
import hides a circle, it does not remove it); those under ``if TYPE_CHECKING:`` do not.
"""

import ast
import itertools
from importlib import resources
from pathlib import Path

#: Lowest first; a module may import its own layer and those below it.
LAYERS = [
    {"gpusolver", "gpusolver.errors"},
    {"gpusolver.backends"},
    {"gpusolver.layout", "gpusolver.physics"},
    {"gpusolver.integrators", "gpusolver.monitors", "gpusolver.parallel", "gpusolver.rank_watch"},
    {"gpusolver.io"},
    {"gpusolver.solvers"},
    {"gpusolver.systems", "gpusolver.vortex"},
    {"gpusolver.run", "gpusolver.bench", "gpusolver.case_reference"},
    {"gpusolver.cli"},
    {"gpusolver.__main__"},
]

#: The only folders that may import CuPy.
CUPY_IMPORTERS = {"gpusolver.backends", "gpusolver.parallel"}


def _imports() -> dict[str, set[str]]:
    """Module name -> the modules it imports (gpusolver's and CuPy's)."""
    root = Path(str(resources.files("gpusolver")))
    found = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        tree = ast.parse(path.read_text())
        typing_only = {id(node) for block in ast.walk(tree) if isinstance(block, ast.If)
                       and ast.unparse(block.test) == "TYPE_CHECKING"
                       for node in ast.walk(block)}
        targets = set()
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                targets.add(node.module)
            elif isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
        found[name] = {t for t in targets if t.split(".")[0] in ("gpusolver", "cupy", "cupyx")}
    return found


def _folder(module: str) -> str:
    """``gpusolver.solvers.fv.system`` -> ``gpusolver.solvers``."""
    return ".".join(module.split(".")[:2])


def _layer(module: str) -> int:
    folder = _folder(module)
    return next(k for k, names in enumerate(LAYERS) if folder in names)


def test_every_module_has_a_layer():
    assert all(_layer(module) >= 0 for module in _imports())


def test_imports_go_down_the_layers():
    upward = sorted(f"{module} -> {target}" for module, targets in _imports().items()
                    for target in targets if target.startswith("gpusolver")
                    and _layer(target) > _layer(module))
    assert not upward


def test_cupy_is_imported_in_backends_and_parallel_only():
    importers = sorted(module for module, targets in _imports().items()
                       if any(t.split(".")[0] in ("cupy", "cupyx") for t in targets)
                       and _folder(module) not in CUPY_IMPORTERS)
    assert not importers


def test_the_folders_import_each_other_without_circles():
    """No two folders import each other, directly or through others."""
    graph: dict[str, set[str]] = {}
    for module, targets in _imports().items():
        inside = _folder(module)
        graph.setdefault(inside, set()).update(
            _folder(t) for t in targets if t.startswith("gpusolver") and _folder(t) != inside)
    reach = {folder: set(targets) for folder, targets in graph.items()}
    for _ in range(len(graph)):
        for targets in reach.values():
            targets |= set(itertools.chain.from_iterable(reach.get(t, ()) for t in set(targets)))
    assert not sorted(folder for folder, targets in reach.items() if folder in targets)


def test_the_solver_folders_do_not_import_each_other():
    """FV, DG and the vortex method share what they share through physics/, layout/ and
    the solvers' own shared modules (solvers/base.py, mesh_system.py, parts.py), never
    through another method's folder."""
    folders = [f"gpusolver.solvers.{method}" for method in ("fv", "dg", "vortex")]
    crossing = sorted(
        f"{module} -> {target}" for module, targets in _imports().items()
        for target in targets for a, b in itertools.permutations(folders, 2)
        if module.startswith(a) and target.startswith(b))
    assert not crossing
