"""The parquet layout of deltalog's checkpoints, diffed against checkpoints other writers put in the corpus.

For each reference checkpoint we build a table *shaped like* the corpus table with deltalog's public API (same
schema string, partition columns, checkpoint properties, the same live files with their stats and app
transactions, plus one fresh tombstone so ``remove`` rows exist), checkpoint it with deltalog, and diff the two
parquet schemas node by node: names, repetition (nullability), physical types, logical annotations, the 3-level
``key_value``/``key``/``value`` map encoding and the 3-level ``list``/``element`` list encoding, and the order of
shared fields. Every difference must be on the explicit allow-list below, with the reason it is harmless, and
every allow-list entry must still be needed (a stale excuse fails too). ``partitionValues_parsed`` and
``stats_parsed`` values are compared file by file as well.

The parquet schema (``pq.ParquetFile(...).schema``), not the Arrow one, is what is checked: Arrow hides the
repetition of the repeated groups and the names of the map/list levels that other readers depend on.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltalog import DeltaLog
from deltalog import actions as A
from deltalog.checkpoint import schema as S
from tests.corpus import corpus_dir, table_path

# ---------------------------------------------------------------------------------------------- parquet schema tree

_LINE = re.compile(r"^(required|optional|repeated) (\S+) field_id=-?\d+ (\S+?)(?: \((.*)\))? ?(\{|;)$")


@dataclass
class Node:
    """One node of a parquet schema: a group (``kind == "group"``) or a primitive column."""

    name: str
    repetition: str
    kind: str
    annotation: str | None
    children: list[Node] = field(default_factory=list)

    def child(self, name: str) -> Node | None:
        return next((c for c in self.children if c.name == name), None)


def parquet_tree(path: Path) -> Node:
    """The file's parquet schema as a tree, parsed from parquet-cpp's canonical schema printout."""
    text = str(pq.ParquetFile(path).schema)
    stack: list[Node] = []
    root: Node | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("<pyarrow"):
            continue
        if line == "}":
            stack.pop()
            continue
        m = _LINE.match(line)
        assert m is not None, f"unparsed parquet schema line {line!r} in {path}"
        rep, kind, name, annotation, end = m.groups()
        node = Node(name, rep, kind, annotation)
        if stack:
            stack[-1].children.append(node)
        else:
            root = node
        if end == "{":
            stack.append(node)
    assert root is not None and not stack
    return root


@dataclass(frozen=True)
class Difference:
    path: str
    what: str  # only_ours | only_reference | repetition | type | annotation | order
    ours: str | None = None
    reference: str | None = None


def diff(ours: Node, ref: Node, path: str = "") -> list[Difference]:
    out: list[Difference] = []
    ours_names = [c.name for c in ours.children]
    ref_names = [c.name for c in ref.children]
    common = [n for n in ours_names if n in ref_names]
    if common != [n for n in ref_names if n in ours_names]:
        theirs = ",".join(n for n in ref_names if n in common)
        out.append(Difference(path or "<root>", "order", ",".join(common), theirs))
    for c in ours.children:
        if c.name not in ref_names:
            out.append(Difference(_join(path, c.name), "only_ours"))
    for c in ref.children:
        if c.name not in ours_names:
            out.append(Difference(_join(path, c.name), "only_reference"))
    for name in common:
        o, r = ours.child(name), ref.child(name)
        assert o is not None and r is not None
        p = _join(path, name)
        if o.repetition != r.repetition:
            out.append(Difference(p, "repetition", o.repetition, r.repetition))
        if o.kind != r.kind:
            out.append(Difference(p, "type", o.kind, r.kind))
        elif o.annotation != r.annotation:
            out.append(Difference(p, "annotation", o.annotation, r.annotation))
        if o.kind == "group" and r.kind == "group":
            out.extend(diff(o, r, p))
    return out


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def walk(node: Node, path: str = "") -> Iterator[tuple[str, Node, Node | None]]:
    """(path, node, parent) for every node below ``node``."""
    for c in node.children:
        p = _join(path, c.name)
        yield p, c, node
        yield from walk(c, p)


def encoding_problems(root: Node) -> list[str]:
    """Where ``root`` breaks the layout every reader expects of a checkpoint.

    Every field optional; maps as an ``optional group (Map)`` holding exactly ``repeated group key_value`` with a
    ``required key`` and an ``optional value``; lists as an ``optional group (List)`` holding exactly
    ``repeated group list`` with one ``optional element``; no empty group; repeated groups nowhere else.
    """
    problems: list[str] = []
    for path, node, parent in walk(root):
        assert parent is not None
        if node.kind == "group" and not node.children:
            problems.append(f"{path}: empty group (parquet cannot hold one)")
        if node.annotation == "Map":
            kv = node.children
            if [c.name for c in kv] != ["key_value"] or kv[0].repetition != "repeated" or kv[0].kind != "group":
                problems.append(f"{path}: map is not a single repeated group key_value")
            elif [(c.name, c.repetition) for c in kv[0].children] != [("key", "required"), ("value", "optional")]:
                problems.append(f"{path}: key_value is not (required key, optional value)")
        if node.annotation == "List":
            lst = node.children
            if [c.name for c in lst] != ["list"] or lst[0].repetition != "repeated" or lst[0].kind != "group":
                problems.append(f"{path}: list is not a single repeated group list")
            elif [(c.name, c.repetition) for c in lst[0].children] != [("element", "optional")]:
                problems.append(f"{path}: list level does not hold one optional element")
        structural = (node.repetition == "repeated" and parent.annotation in ("Map", "List")) or (
            node.name == "key" and parent.name == "key_value"
        )
        if not structural and node.repetition != "optional":
            problems.append(f"{path}: {node.repetition}, every checkpoint field must be optional (nullable)")
    return problems


# ---------------------------------------------------------------------------------------------- allow-list


@dataclass(frozen=True)
class Allowed:
    """One accepted difference: ``what`` at ``path`` (or below it) for the named reference tables, and why."""

    tables: tuple[str, ...]
    path: str
    what: str
    why: str

    def covers(self, table: str, d: Difference) -> bool:
        under = d.path == self.path or d.path.startswith(self.path + ".")
        return table in self.tables and d.what == self.what and under


SPARK_V1 = ("delta/checkpoint", "delta/multi-part-checkpoint", "delta/dv-partitioned-with-checkpoint")
STRUCT_ONLY = "delta-kernel-rs/v1-single-part-struct-stats-only"
PARSED = "delta-kernel-rs/parsed-stats"
DV_REFS = (*SPARK_V1, STRUCT_ONLY)

ALLOWED: tuple[Allowed, ...] = (
    Allowed(
        DV_REFS,
        "add.deletionVector.maxRowIndex",
        "only_reference",
        "Spark's DeletionVectorDescriptor carries a transient maxRowIndex that leaks into its checkpoints; it is "
        "not part of the protocol's descriptor (never in JSON commits) and readers ignore it",
    ),
    Allowed(DV_REFS, "remove.deletionVector.maxRowIndex", "only_reference", "same transient Spark field, on remove"),
    Allowed(
        (*SPARK_V1, PARSED),
        "add.clusteringProvider",
        "only_ours",
        "the protocol's add.clusteringProvider (clustered tables) postdates these writers; we always write the "
        "column (null when unset), which readers of older checkpoints simply do not ask for",
    ),
    Allowed(
        ("delta/dv-partitioned-with-checkpoint",),
        "add.stats_parsed",
        "only_ours",
        "with writeStatsAsStruct this Spark (3.0 snapshot) wrote only partitionValues_parsed; stats_parsed is "
        "what the spec asks for and what Spark writes since delta-io/delta PR #5836",
    ),
    # parsed-stats: commits by Delta 2.1, checkpoint rewritten by delta-kernel-rs's test generator (arrow-rs).
    Allowed(
        (PARSED,),
        "metaData.partitionColumns.list.element",
        "only_ours",
        "we name the list element 'element' (parquet LogicalTypes 3-level list, what Spark writes); arrow-rs's "
        "default is 'item'",
    ),
    Allowed((PARSED,), "metaData.partitionColumns.list.item", "only_reference", "arrow-rs's 'item' list element"),
    Allowed(
        (PARSED,),
        "add.stats_parsed.minValues.ts_col",
        "annotation",
        "ts_col is a Delta 'timestamp' (instant, UTC-adjusted); the generator wrote a zone-less arrow timestamp "
        "(isAdjustedToUTC=false). Same int64 micros; ours is the protocol's type",
    ),
    Allowed((PARSED,), "add.stats_parsed.maxValues.ts_col", "annotation", "as for minValues.ts_col"),
    Allowed(
        (PARSED,),
        "add.stats_parsed.tightBounds",
        "only_ours",
        "tightBounds (deletion vectors) is optional in the stats schema; the generator predates it",
    ),
    Allowed(
        (PARSED,),
        "remove.tags",
        "only_reference",
        "the generator copied remove.tags; Spark's checkpoint remove struct has no tags and readers never use them",
    ),
    *(
        Allowed(
            (PARSED,),
            p,
            "only_ours",
            "a protocol field the generator's hand-written schema left out; we always write it (null when unused)",
        )
        for p in (
            "add.deletionVector",
            "add.baseRowId",
            "add.defaultRowCommitVersion",
            "remove.deletionVector",
            "remove.baseRowId",
            "remove.defaultRowCommitVersion",
            "protocol.readerFeatures",
            "protocol.writerFeatures",
            "domainMetadata",
        )
    ),
)


@dataclass(frozen=True)
class Case:
    table: str
    reference: tuple[str, ...]  # checkpoint files under _delta_log (all parts)
    version: int
    struct_stats: bool | None = None  # forces delta.checkpoint.writeStatsAsStruct, None: the table's own
    why_struct: str = ""


CASES = (
    Case("delta/checkpoint", ("00000000000000000010.checkpoint.parquet",), 10),
    Case(
        "delta/multi-part-checkpoint",
        (
            "00000000000000000001.checkpoint.0000000001.0000000002.parquet",
            "00000000000000000001.checkpoint.0000000002.0000000002.parquet",
        ),
        1,
    ),
    Case(STRUCT_ONLY, ("00000000000000000005.checkpoint.parquet",), 5),
    Case(
        PARSED,
        ("00000000000000000003.checkpoint.parquet",),
        3,
        struct_stats=True,
        why_struct="the table leaves writeStatsAsStruct unset; its checkpoint was written with stats_parsed",
    ),
    Case(
        "delta/dv-partitioned-with-checkpoint",
        ("00000000000000000010.checkpoint.parquet",),
        10,
        struct_stats=True,
        why_struct="unset means true to Spark, which wrote partitionValues_parsed; unset means false to us",
    ),
)

PRESENT = [c for c in CASES if corpus_dir() is not None and (table_path(c.table) / "_delta_log").is_dir()]


# ---------------------------------------------------------------------------------------------- building ours


def build_like(case: Case, dest: Path) -> tuple[DeltaLog, list[Path]]:
    """A deltalog table shaped like ``case.table`` at ``case.version``, checkpointed; returns the parts written.

    Deletion vectors are dropped from the adds: deltalog does not write tables with the deletionVectors
    feature. The schema columns for them are written regardless, so the layout comparison is unaffected.
    """
    src = DeltaLog.for_table(table_path(case.table), auto_checkpoint=False).snapshot(version=case.version)
    conf = {k: v for k, v in src.configuration.items() if k.startswith("delta.checkpoint.")}
    if case.struct_stats is not None:
        conf["delta.checkpoint.writeStatsAsStruct"] = str(case.struct_stats).lower()
    log = DeltaLog.for_table(dest, auto_checkpoint=False)
    log.create(src.metadata.schema_string, partition_columns=src.partition_columns, configuration=conf)
    adds = [
        A.Add(a.path, a.partition_values, a.size, a.modification_time, True, a.stats, a.tags) for a in src.add_actions()
    ]
    doomed = A.Add("zz-removed.parquet", {c: None for c in src.partition_columns}, 1, 1, True)
    txns = list(src.txns.values()) or [A.Txn("app", 7, 1)]
    log.start_transaction().commit([*adds, doomed, *txns])
    log.start_transaction().commit([doomed.remove(deletion_timestamp=log.now_ms())])
    parts = len(case.reference)
    result = log.checkpoint(parts=parts if parts > 1 else None)
    assert len(result.files) == parts
    return log, [dest / f for f in result.files]


def leaves(value: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from leaves(v, f"{prefix}.{k}" if prefix else k)
    else:
        yield prefix, value


def _int_timestamps(t: pa.DataType) -> pa.DataType:
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _int_timestamps(f.type)) for f in t])
    return pa.int64() if pa.types.is_timestamp(t) else t


def parsed_by_path(files: list[Path], column: str) -> dict[str, dict[str, Any]]:
    """``add.<column>`` leaves per add path (timestamps as int64 micros, so zones do not matter)."""
    out: dict[str, dict[str, Any]] = {}
    for f in files:
        add = pq.read_table(f, columns=["add"]).column("add").combine_chunks()
        if add.type.get_field_index(column) < 0:
            continue
        values = add.field(column)
        values = values.cast(_int_timestamps(values.type))
        paths, valid_rows = add.field("path").to_pylist(), add.is_valid().to_pylist()
        for p, v, valid in zip(paths, values.to_pylist(), valid_rows, strict=True):
            if valid and v is not None:
                out[p] = dict(leaves(v))
    return out


# ---------------------------------------------------------------------------------------------- tests


@pytest.mark.corpus
@pytest.mark.parametrize("case", PRESENT, ids=[c.table for c in PRESENT])
def test_layout_matches_the_reference_checkpoint(case: Case, tmp_path: Path) -> None:
    _, ours = build_like(case, tmp_path / "t")
    refs = [table_path(case.table) / "_delta_log" / name for name in case.reference]
    unexplained: list[Difference] = []
    used: set[Allowed] = set()
    for mine, ref in zip(ours, refs, strict=True):
        tree = parquet_tree(mine)
        assert encoding_problems(tree) == [], mine.name
        for d in diff(tree, parquet_tree(ref)):
            rules = [a for a in ALLOWED if a.covers(case.table, d)]
            used.update(rules)
            if not rules:
                unexplained.append(d)
    assert unexplained == []
    stale = [a for a in ALLOWED if case.table in a.tables and a not in used]
    assert stale == [], "allow-list entries no longer needed: remove them"


@pytest.mark.corpus
@pytest.mark.parametrize("case", PRESENT, ids=[c.table for c in PRESENT])
def test_parsed_columns_hold_the_reference_values(case: Case, tmp_path: Path) -> None:
    _, ours = build_like(case, tmp_path / "t")
    refs = [table_path(case.table) / "_delta_log" / name for name in case.reference]
    compared = 0
    for column in ("partitionValues_parsed", "stats_parsed"):
        mine, theirs = parsed_by_path(ours, column), parsed_by_path(refs, column)
        for path in sorted(set(mine) & set(theirs)):
            shared = set(mine[path]) & set(theirs[path])
            assert {k: mine[path][k] for k in shared} == {k: theirs[path][k] for k in shared}, (column, path)
            compared += len(shared)
        if theirs:
            assert set(theirs) <= set(mine), f"{column}: files the reference has parsed values for and we do not"
    has_parsed = any(
        pq.ParquetFile(r).schema_arrow.field("add").type.get_field_index(c) >= 0
        for r in refs
        for c in ("partitionValues_parsed", "stats_parsed")
    )
    assert (compared > 0) == has_parsed


# Without the corpus the layout rules still hold for a table exercising every part of the schema.


def _all_types_table(tmp_path: Path, configuration: dict[str, str]) -> tuple[DeltaLog, Path]:
    root = tmp_path / "t"
    log = DeltaLog.for_table(root, auto_checkpoint=False)
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            ("i", pa.int32()),
            ("s", pa.string()),
            ("d", pa.float64()),
            ("ts", pa.timestamp("us", tz="UTC")),
            ("ntz", pa.timestamp("us")),
            ("nested", pa.struct([("x", pa.int64()), ("y", pa.string())])),
            ("tags", pa.list_(pa.string())),
            ("m", pa.map_(pa.string(), pa.int64())),
            pa.field("day", pa.date32(), nullable=False),
            ("region", pa.string()),
        ]
    )
    log.create(schema, partition_columns=["day", "region"], configuration=configuration)
    stats = orjson.dumps(
        {
            "numRecords": 3,
            "minValues": {"id": 1, "i": 2, "s": "a", "d": 0.5, "ts": "2026-01-01T00:00:00.000Z", "nested": {"x": 1}},
            "maxValues": {"id": 9, "i": 3, "s": "z", "d": 1.5, "ts": "2026-01-02T00:00:00.000Z", "nested": {"x": 4}},
            "nullCount": {"id": 0, "i": 1, "s": 0, "d": 0, "ts": 0, "nested": {"x": 0, "y": 3}},
        }
    ).decode()
    adds = [
        A.Add("day=2026-01-01/region=eu/a.parquet", {"day": "2026-01-01", "region": "eu"}, 10, 1, True, stats),
        A.Add(
            "day=2026-01-02/region=__HIVE_DEFAULT_PARTITION__/b.parquet",
            {"day": "2026-01-02", "region": None},
            20,
            2,
            True,
            None,
            {"k": "v"},
        ),
    ]
    log.start_transaction(app_id="etl", app_version=3).commit(adds)
    log.start_transaction().commit([adds[1].remove(deletion_timestamp=log.now_ms())])
    result = log.checkpoint()
    return log, root / result.files[0]


@pytest.mark.parametrize("struct", [False, True], ids=["json-stats", "struct-stats"])
def test_our_layout_follows_the_encoding_rules(tmp_path: Path, struct: bool) -> None:
    _, path = _all_types_table(tmp_path, {"delta.checkpoint.writeStatsAsStruct": str(struct).lower()})
    tree = parquet_tree(path)
    assert encoding_problems(tree) == []
    assert [c.name for c in tree.children] == ["txn", "add", "remove", "metaData", "protocol", "domainMetadata"]
    add = tree.child("add")
    assert add is not None
    names = [c.name for c in add.children]
    expected = [f.name for f in S._ADD_BASE] + ["stats"]
    assert names == expected + (["partitionValues_parsed", "stats_parsed"] if struct else [])
    remove = tree.child("remove")
    assert remove is not None and {"stats", "tags"}.isdisjoint(c.name for c in remove.children)
    arrow = pq.ParquetFile(path).schema_arrow
    assert all(f.nullable for f in arrow)
    if struct:
        add_type = arrow.field("add").type
        pvp = add_type.field("partitionValues_parsed").type
        assert [(f.name, f.type, f.nullable) for f in pvp] == [
            ("day", pa.date32(), True),  # declared NOT NULL in the table, nullable here (non-add rows are null)
            ("region", pa.string(), True),
        ]
        sp = add_type.field("stats_parsed").type
        assert sp.field("minValues").type.field("ts").type == pa.timestamp("us", tz="UTC")
        assert sp.field("minValues").type.field("ntz").type == pa.timestamp("us")
        # lists, maps and partition columns have no min/max; nested structs keep their shape
        assert {f.name for f in sp.field("minValues").type} == {"id", "i", "s", "d", "ts", "ntz", "nested"}
        assert sp.field("nullCount").type.field("nested").type == pa.struct([("x", pa.int64()), ("y", pa.int64())])


def test_struct_stats_only_checkpoint_reads_back_the_same_stats(tmp_path: Path) -> None:
    log, path = _all_types_table(
        tmp_path,
        {"delta.checkpoint.writeStatsAsStruct": "true", "delta.checkpoint.writeStatsAsJson": "false"},
    )
    assert pq.ParquetFile(path).schema_arrow.field("add").type.get_field_index("stats") < 0
    fresh = DeltaLog.for_table(log.location, auto_checkpoint=False).snapshot()
    assert fresh.segment.checkpoint is not None
    files = fresh.files(stats=True)
    stats = dict(zip(files.column("path").to_pylist(), files.column("stats").to_pylist(), strict=True))
    got = orjson.loads(stats["day=2026-01-01/region=eu/a.parquet"])
    assert got["numRecords"] == 3
    assert got["minValues"]["nested"] == {"x": 1} and got["maxValues"]["s"] == "z"
    assert got["nullCount"]["nested"] == {"x": 0, "y": 3}


def test_parser_reads_a_spark_style_printout(tmp_path: Path) -> None:
    # The tree parser is what the corpus comparison stands on: check it on a file whose layout we know.
    t = pa.table({"m": pa.array([[("k", "v")]], pa.map_(pa.string(), pa.string())), "l": [["a"]]})
    path = tmp_path / "x.parquet"
    pq.write_table(t, path, use_compliant_nested_type=True)
    tree = parquet_tree(path)
    m, lst = tree.child("m"), tree.child("l")
    assert m is not None and lst is not None
    assert (m.annotation, m.children[0].name, [c.name for c in m.children[0].children]) == (
        "Map",
        "key_value",
        ["key", "value"],
    )
    assert (lst.annotation, lst.children[0].name, lst.children[0].children[0].name) == ("List", "list", "element")
    shutil.copy(path, tmp_path / "y.parquet")
    assert diff(tree, parquet_tree(tmp_path / "y.parquet")) == []


def test_one_ill_typed_stat_does_not_erase_every_files_stats(tmp_path: Path) -> None:
    # Regression (deltalog/checkpoint/parsed.py, stats_parsed): ill-typed stats null one row, not the column.
    log = DeltaLog.for_table(tmp_path / "t", auto_checkpoint=False)
    log.create(
        pa.schema([("id", pa.int64())]),
        configuration={"delta.checkpoint.writeStatsAsStruct": "true", "delta.checkpoint.writeStatsAsJson": "false"},
    )
    good = '{"numRecords":5,"minValues":{"id":1},"maxValues":{"id":9},"nullCount":{"id":0}}'
    log.start_transaction().commit([A.Add("good.parquet", {}, 1, 1, True, good)])
    log.start_transaction().commit([A.Add("bad.parquet", {}, 1, 1, True, '{"numRecords":5,"minValues":{"id":"x"}}')])
    log.checkpoint()
    files = DeltaLog.for_table(tmp_path / "t", auto_checkpoint=False).snapshot().files(stats=True)
    stats = dict(zip(files.column("path").to_pylist(), files.column("stats").to_pylist(), strict=True))
    assert stats["good.parquet"] is not None
    assert orjson.loads(stats["good.parquet"])["maxValues"] == {"id": 9}
