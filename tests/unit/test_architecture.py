"""The layering promises of docs/architecture: the core stays pure and acyclic, storage knows no actions."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "deltalog"
# The columnar replay may use pyarrow (and numpy, for its buffers): speed is the product.
COLUMNAR = PKG / "core" / "state"


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
    return out


def _modules(package: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module under ``package`` (a package is its ``__init__``)."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _edges(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules of ``known`` that ``name`` imports anywhere: at the top, in functions, under TYPE_CHECKING."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in known)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            out.update({base} & known)
            out.update(f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in known)
    out.discard(name)
    return out


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph``, or None (depth-first search, iterative: no recursion limit)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in graph:
        if start in state:
            continue
        path = [start]
        todo = [iter(sorted(graph[start]))]
        state[start] = 1
        while todo:
            nxt = next(todo[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                todo.pop()
            elif state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            elif nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                todo.append(iter(sorted(graph[nxt])))
    return None


def test_core_imports_only_stdlib_orjson_and_itself() -> None:
    allowed_third_party = {"orjson"}
    for path in sorted((PKG / "core").rglob("*.py")):
        for mod in _imports(path):
            top = mod.split(".")[0]
            if top in sys.stdlib_module_names or top in allowed_third_party or top == "__future__":
                continue
            if mod.startswith("deltalog.core") or mod == "deltalog.errors":
                continue
            if top in ("pyarrow", "numpy") and path.is_relative_to(COLUMNAR):
                continue
            raise AssertionError(f"{path.relative_to(PKG)} imports {mod}: the core must stay pure")


def test_the_core_has_no_import_cycle() -> None:
    """Counting every import, deferred and type-only ones too: a shared type lives in a leaf instead."""
    modules = _modules(PKG / "core")
    graph = {name: _edges(name, path, set(modules)) for name, path in modules.items()}
    assert "deltalog.core.state.reconcile" in graph["deltalog.core.state.replay"]  # the scan sees edges
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])


def test_the_core_reaches_into_no_private_names() -> None:
    """No ``from m import _name`` and no ``obj._name`` but on ``self``/``cls``: a module's private names are
    its own (another module asks for a public function)."""
    for path in sorted((PKG / "core").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names: list[str] = []
            if isinstance(node, ast.ImportFrom):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.Attribute) and not (
                isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
            ):
                names = [node.attr]
            for n in names:
                assert not (n.startswith("_") and not n.startswith("__")), (
                    f"{path.relative_to(PKG)} line {node.lineno} reaches into {n}"
                )


def test_storage_knows_bytes_not_actions() -> None:
    for path in sorted((PKG / "storage").glob("*.py")):
        for mod in _imports(path):
            assert not mod.startswith("deltalog.core"), f"{path.name} imports {mod}"
            assert not mod.startswith("pyspark"), f"{path.name} imports {mod}"


def test_no_module_outside_spark_imports_pyspark() -> None:
    for path in PKG.rglob("*.py"):
        if "spark" in path.relative_to(PKG).parts:
            continue
        assert not any(m.startswith("pyspark") for m in _imports(path)), path


def test_the_data_plane_sits_below_the_table_layer() -> None:
    """``data/`` reads and writes files through a store and never commits: no log, snapshot or transaction."""
    above = (
        "deltalog.log",
        "deltalog.table",
        "deltalog.maintenance",
        "deltalog.cli",
        "deltalog.spark",
    )
    modules = sorted((PKG / "data").glob("*.py"))
    assert modules, "deltalog/data is the data plane's home"
    for path in modules:
        for mod in _imports(path):
            assert not mod.startswith(above), f"data/{path.name} imports {mod}"
            assert not mod.startswith("pyspark"), f"data/{path.name} imports {mod}"


def _all_imports(path: Path, package: str) -> set[str]:
    """Every module ``path`` imports, top-level, in functions or under ``TYPE_CHECKING``, relative ones resolved."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(p for p in (base, node.module or "") if p)
            out.add(module)
            out.update(f"{module}.{a.name}" for a in node.names)
    return out


def test_the_table_layer_never_reaches_up_to_the_facade_or_maintenance() -> None:
    """``table/`` is what ``log.py`` and maintenance are built on: an import back up, even a deferred or
    type-only one, would make the layers one cycle again."""
    above = ("deltalog.log", "deltalog.maintenance", "deltalog.cli", "deltalog.spark")
    modules = sorted((PKG / "table").glob("*.py"))
    assert modules
    for path in modules:
        for mod in _all_imports(path, "deltalog.table"):
            assert not mod.startswith(above), f"table/{path.name} imports {mod}"
            assert mod != "deltalog", f"table/{path.name} imports the package (and with it the facade)"


def test_checkpoints_and_the_data_plane_sit_below_the_table_layer() -> None:
    for folder in ("checkpoint", "data"):
        for path in sorted((PKG / folder).glob("*.py")):
            for mod in _all_imports(path, f"deltalog.{folder}"):
                assert not mod.startswith(("deltalog.table", "deltalog.log")), f"{folder}/{path.name} imports {mod}"
