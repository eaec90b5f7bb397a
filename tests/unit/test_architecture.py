"""The layering of docs/architecture.md, enforced on every module of ``deltalog/``.

Three rules, each counting every import a module makes: top-level, inside functions and under
``TYPE_CHECKING`` alike (a type-only back edge is still a cycle for the reader of the code):

1. Direction. Each package has a row; a module imports its own package or packages in lower rows only.
2. No cycles in the module graph.
3. No reaching into another module's private names: no ``from m import _name`` and no ``obj._attr``
   except on ``self``/``cls``; the few third-party private APIs deltalog relies on are listed with why.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "deltalog"

#: row of each package (lower rows never import higher ones); a package imports itself and lower rows only
ROWS: dict[str, int] = {
    "deltalog.errors": 0,
    "deltalog._version": 0,
    "deltalog.core": 1,
    "deltalog.storage": 1,
    "deltalog.actions": 2,  # the public name of core's actions
    "deltalog.expr": 2,  # Spark SQL expressions: the typed tree, its parser and binder (pure)
    "deltalog.arrow": 3,
    "deltalog.compute": 3,  # bound expressions evaluated on Arrow batches
    "deltalog.checkpoint": 4,
    "deltalog.data": 4,
    "deltalog.table": 5,
    "deltalog.maintenance": 6,
    "deltalog.dml": 6,
    # deltalog.write and the table opening it shares with Spark's writer: an edge above the facade, as Spark is
    "deltalog.writing": 8,
    "deltalog.log": 7,
    "deltalog.spark": 9,
    "deltalog": 10,  # the package's own __init__: the public surface
    "deltalog.cli": 11,
}
#: within row 1, core and storage know nothing of each other: only errors below them
ISOLATED_ROWS = {1}

#: third-party modules allowed per package (everything else is stdlib or deltalog)
THIRD_PARTY: dict[str, set[str]] = {
    "deltalog.core": {"orjson"},
    "deltalog.core.state": {"orjson", "pyarrow", "numpy"},
    "deltalog.expr": {"sqlglot"},
}
ONLY_IN = {"pyspark": "deltalog.spark", "click": "deltalog.cli", "rich": "deltalog.cli", "sqlglot": "deltalog.expr"}
#: modules only the type checker reads (typeshed ships them; no dependency installs them): anywhere, but only
#: under ``if TYPE_CHECKING:``
TYPE_ONLY = {"typing_extensions"}

#: third-party private attributes deltalog uses on purpose, each with the reason
PRIVATE_ALLOWED: dict[str, str] = {
    "_strip_protocol": "fsspec's way to turn a URL into the filesystem's own path; no public equivalent",
    "_pipe_file": "s3fs: probing for conditional-write support (If-None-Match) before the first commit",
    "_replace": "namedtuple's public copy-with-changes method (spelled with an underscore to avoid clashes)",
    "_asdict": "namedtuple's public conversion to a dict",
    "_call_s3": "s3fs: the one way to send requests it has no method for (If-None-Match, DeleteObjects)",
    "_cat_file": "fsspec's async filesystems: the coroutine form of cat_file (the underscore marks async, not private)",
    "_jsparkSession": "pyspark: the JVM session, to make it the calling thread's active one (Spark looks Python data "
    "sources up there; pyspark has no public call for it)",
    "_jvm": "pyspark: the JVM view, to turn a Column's literal into Catalyst's (deltalog.spark.columns: pyspark has no "
    "public way to read a Column's expression)",
    "_1": "Scala's Tuple2 fields, read through py4j (public in Scala, spelled with an underscore)",
    "_2": "Scala's Tuple2 fields, read through py4j (public in Scala, spelled with an underscore)",
}


@dataclass(frozen=True)
class Import:
    module: str  # the deltalog module imported, or the third-party top-level name
    line: int


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in PKG.rglob("*.py")}


def _known(name: str) -> str | None:
    """The deltalog module ``name`` refers to (itself, or the package that defines the name)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports(mod: str) -> Iterator[Import]:
    path = MODULES[mod]
    tree = ast.parse(path.read_text())
    is_pkg = path.name == "__init__.py"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield Import(_known(a.name) or a.name.split(".")[0], node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = mod.split(".") if is_pkg else mod.split(".")[:-1]
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            if not target.startswith("deltalog"):
                yield Import(target.split(".")[0], node.lineno)
                continue
            for a in node.names:
                sub = f"{target}.{a.name}"
                # `from deltalog.x import y` names module deltalog.x.y when y is one; else it imports deltalog.x
                yield Import(sub if sub in MODULES else (_known(target) or target), node.lineno)


def type_checking_lines(mod: str) -> set[int]:
    """The lines of ``mod`` inside an ``if TYPE_CHECKING:`` block (not its ``else``)."""
    lines: set[int] = set()
    for node in ast.walk(ast.parse(MODULES[mod].read_text())):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for inner in node.body:
                lines.update(range(inner.lineno, (inner.end_lineno or inner.lineno) + 1))
    return lines


def row_of(mod: str) -> tuple[str, int]:
    best = max((p for p in ROWS if mod == p or mod.startswith(p + ".")), key=len)
    return best, ROWS[best]


def test_every_module_has_a_row() -> None:
    for mod in MODULES:
        assert any(mod == p or mod.startswith(p + ".") for p in ROWS), f"{mod} is in no row of the layering"


def test_imports_point_down() -> None:
    problems = []
    for mod in sorted(MODULES):
        pkg, row = row_of(mod)
        for imp in imports(mod):
            if imp.module not in MODULES:
                continue
            other_pkg, other_row = row_of(imp.module)
            if other_pkg == pkg:
                continue
            if other_row >= row or (row in ISOLATED_ROWS and other_row == row):
                problems.append(f"{mod}:{imp.line} imports {imp.module} ({other_pkg}, row {other_row} >= {row})")
    assert not problems, "\n".join(problems)


def test_third_party_imports_stay_where_they_belong() -> None:
    problems = []
    for mod in sorted(MODULES):
        for imp in imports(mod):
            if imp.module in MODULES or imp.module.startswith("deltalog"):
                continue
            top = imp.module
            if top in sys.stdlib_module_names or top == "__future__":
                continue
            if top in TYPE_ONLY:
                if imp.line not in type_checking_lines(mod):
                    problems.append(f"{mod}:{imp.line} imports {top} at run time: it is for the type checker only")
                continue
            home = ONLY_IN.get(top)
            if home is not None and not (mod == home or mod.startswith(home + ".")):
                problems.append(f"{mod}:{imp.line} imports {top}, which only {home} may")
            allowed = next(
                (
                    THIRD_PARTY[p]
                    for p in sorted(THIRD_PARTY, key=len, reverse=True)
                    if mod == p or mod.startswith(p + ".")
                ),
                None,
            )
            if allowed is not None and top not in allowed:
                problems.append(f"{mod}:{imp.line} imports {top}: the core stays pure")
            if mod.startswith("deltalog.storage") and top == "pyarrow":
                problems.append(f"{mod}:{imp.line}: storage knows bytes, not Arrow")
    assert not problems, "\n".join(problems)


def test_the_module_graph_is_acyclic() -> None:
    graph = {m: {i.module for i in imports(m) if i.module in MODULES and i.module != m} for m in MODULES}
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                cycles.append([*stack[stack.index(n) :], n])
            elif n not in state:
                visit(n)
        stack.pop()
        state[m] = 2

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for m in sorted(graph):
        if m not in state:
            visit(m)
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles[:10])


def test_no_module_reaches_into_private_names() -> None:
    """A private attribute is read on ``self``/``cls``, or in the module whose classes own it (its functions
    reading a value of its own class: ``deltalog.table.snapshot``'s, say); never from another module."""
    problems = []
    for mod, path in sorted(MODULES.items()):
        tree = ast.parse(path.read_text())
        own = _own_private_attributes(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("deltalog"):
                problems += [f"{mod}:{node.lineno} imports {a.name}" for a in node.names if _private(a.name)]
            elif isinstance(node, ast.Attribute) and _private(node.attr) and node.attr not in PRIVATE_ALLOWED:
                owner = node.value
                if not (isinstance(owner, ast.Name) and owner.id in ("self", "cls")) and node.attr not in own:
                    problems.append(f"{mod}:{node.lineno} reads {ast.unparse(owner)}.{node.attr}")
    assert not problems, "\n".join(problems)


def _own_private_attributes(tree: ast.Module) -> set[str]:
    """The private attributes the module's own classes define: assigned on ``self`` or defined in the class body."""
    own: set[str] = set()
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        for node in ast.walk(cls):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
                if isinstance(node.ctx, ast.Store) and _private(node.attr):
                    own.add(node.attr)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _private(node.name):
                own.add(node.name)
    return own


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def test_nothing_below_the_facade_takes_a_deltalog() -> None:
    """Everything under ``deltalog.log`` works on a TableContext (store, location, clock) and values."""
    problems = []
    for mod in sorted(MODULES):
        if row_of(mod)[1] >= ROWS["deltalog.log"]:
            continue
        for node in ast.walk(ast.parse(MODULES[mod].read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
                for arg in args:
                    if arg.annotation is not None and re.search(r"\bDeltaLog\b", ast.unparse(arg.annotation)):
                        problems.append(f"{mod}:{node.lineno} {node.name}({arg.arg}: DeltaLog)")
    assert not problems, "\n".join(problems)


#: the commit pipeline: its stages are its own business, the package's names are its interface
COMMIT_PIPELINE = "deltalog.table.commit"


def test_nothing_outside_the_commit_pipeline_imports_its_modules() -> None:
    """Outside ``deltalog.table.commit`` only the package is imported (the names its ``__init__`` lists), never
    one of its stages: what a stage takes and returns may change without anything else changing."""
    problems = []
    for mod in sorted(MODULES):
        if mod == COMMIT_PIPELINE or mod.startswith(COMMIT_PIPELINE + "."):
            continue
        problems += [
            f"{mod}:{imp.line} imports {imp.module}"
            for imp in imports(mod)
            if imp.module.startswith(COMMIT_PIPELINE + ".")
        ]
    assert not problems, "\n".join(problems)


def _feature_names() -> frozenset[str]:
    """Every table feature name deltalog knows, less the one that is also an action's key (``domainMetadata``:
    the codec names the action, not the feature)."""
    from deltalog.core.features.protocol import KNOWN_FEATURES

    return KNOWN_FEATURES - {"domainMetadata"}


def test_table_features_have_one_home() -> None:
    """A rule about a table feature lives in ``deltalog.core.features``: no other core module names a feature (it
    asks the feature's module, or the table configuration, instead)."""
    features, problems = _feature_names(), []
    for mod in sorted(MODULES):
        if not mod.startswith("deltalog.core.") or mod.startswith("deltalog.core.features"):
            continue
        for node in ast.walk(ast.parse(MODULES[mod].read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in features:
                problems.append(f"{mod}:{node.lineno} names feature {node.value!r}")
    assert not problems, "\n".join(problems)


def test_dml_has_one_row() -> None:
    """Row-level operations are one layer: nothing in ``deltalog.dml`` sits on another row than the package."""
    assert [p for p in ROWS if p.startswith("deltalog.dml.")] == []
