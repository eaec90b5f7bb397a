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
        "deltalog.snapshot",
        "deltalog.transaction",
        "deltalog.committer",
        "deltalog.table_setup",
        "deltalog.loading",
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
