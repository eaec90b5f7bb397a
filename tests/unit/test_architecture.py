"""The layering promises of docs/architecture: the core stays pure, storage knows no actions."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "deltalog"
# The columnar replay may use pyarrow (and numpy, for its buffers): speed is the product.
COLUMNAR = {"replay.py", "bulk_replay.py", "file_columns.py", "file_state.py", "arrow_rows.py"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
    return out


def test_core_imports_only_stdlib_orjson_and_itself() -> None:
    allowed_third_party = {"orjson"}
    for path in sorted((PKG / "core").glob("*.py")):
        for mod in _imports(path):
            top = mod.split(".")[0]
            if top in sys.stdlib_module_names or top in allowed_third_party or top == "__future__":
                continue
            if mod.startswith("deltalog.core") or mod == "deltalog.errors":
                continue
            if top in ("pyarrow", "numpy") and path.name in COLUMNAR:
                continue
            raise AssertionError(f"{path.name} imports {mod}: the core must stay pure")


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
