"""Randomized operation sequences through deltalog's public write API, checked against both peers.

Each run creates a table from a generated schema (every Delta primitive type, nested structs, arrays and
maps, awkward names), then plays generated steps: appends of real parquet files with generated partition
values, ``remove_where``, ``add_columns``, ``set_properties``/``unset_properties`` with generated keys and
values, checkpoints, log cleanup and restores, under a clock that moves two days per step so retention
matters. After every step one of two things must hold:

* deltalog refused with a typed :class:`~deltalog.errors.DeltaLogError`, and ``_delta_log`` is byte for
  byte what it was (nothing was written); or
* ``deltalake`` and duckdb both open the table at the version deltalog says is the latest, and all three
  agree on the live files and the row count.

Two modes. *Valid* runs generate only what the protocol allows (Delta types, unique names, serialized
partition values, known properties with valid values) and must commit at least 80 % of their steps: an
engine that refused everything would pass the first property and fail this one. *Adversarial* runs
generate anything (undefined types, duplicate and forbidden names, unparsable partition values, nulls
under NOT NULL, unknown, internal and feature-enabling properties, nonsense retention values).

A peer refusal passes only if it is a peer's documented limitation in :data:`PEER_LIMITATIONS`, the one
allowlist, each entry citing ``../shared/docs/delta-write-rules.md`` section 16.

Seeded (one table per seed), bounded: about 400 steps in all.
"""

from __future__ import annotations

import datetime as dt
import random
import re
import string
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltalog import DeltaLog, DeltaLogError
from deltalog import actions as A
from deltalog.arrow.schema import to_arrow_schema
from deltalog.arrow.stats import stats_json
from deltalog.core.log.codec import encode_actions
from deltalog.core.schema import PRIMITIVE_TYPES
from tests.peers import PeerView, duckdb_connection, try_deltalake, try_duckdb

STEPS = 20
VALID_SEEDS = range(10)
ADVERSARIAL_SEEDS = range(10)
MIN_VALID_COMMIT_SHARE = 0.8
DAY_S = 86_400


# ---------------------------------------------------------------------------------------------- the allowlist
@dataclass(frozen=True)
class Limitation:
    """A peer's documented inability: ``peer`` refuses with a message matching ``pattern``."""

    peer: str
    pattern: str
    citation: str


#: The one allowlist of peer refusals that are the peer's limitation, not deltalog's error.
PEER_LIMITATIONS: tuple[Limitation, ...] = (
    Limitation(
        "deltalake",
        r"Unsupported table features required: \[VacuumProtocolCheck\]",
        "delta-write-rules.md section 16: deltalake 1.6.6 does not read vacuumProtocolCheck tables",
    ),
    Limitation(
        "deltalake",
        r"Unsupported table features required: \[TypeWidening\]",
        "delta-write-rules.md section 16: deltalake 1.6.6 reads no typeWidening(-preview) tables",
    ),
)


def peer_limitation(peer: str, message: str) -> Limitation | None:
    return next((lim for lim in PEER_LIMITATIONS if lim.peer == peer and re.search(lim.pattern, message)), None)


# ---------------------------------------------------------------------------------------------- generators
#: every type name of the protocol but void (refused in new columns), plus "decimal" for decimal(p,s)
PRIMITIVES = [*sorted(PRIMITIVE_TYPES - {"void"}), "decimal"]
PARTITIONABLE = [t for t in PRIMITIVES if t != "variant"]
#: the variant encoding of null (metadata: version 1, empty dictionary; value: the null primitive)
VARIANT_NULL = {"metadata": b"\x01\x00\x00", "value": b"\x00"}
VALID_NAMES = [
    "id",
    "Amount",
    "with-dash",
    "ünïcödé",
    "日本語",
    "$dollar",
    "1digit",
    "a.b",
    "x_" + "y" * 40,
    "quote'd",
    'dq"x',
    "back`tick",
    "slash/name",
    "percent%",
    "colon:x",
]
BAD_NAMES = ["with space", "comma,x", "semi;x", "brace{x}", "paren(x)", "new\nline", "tab\tx", "eq=x", ""]
BAD_TYPES = ["decimal(40,2)", "decimal(5,6)", "decimal(0,0)", "decimal", "char(3)", "interval", "int", "void", "uuid"]


def delta_type(rng: random.Random, depth: int = 0, partition: bool = False) -> Any:
    kinds = PARTITIONABLE if partition else PRIMITIVES + (["struct", "array", "map"] if depth < 2 else [])
    kind = rng.choice(kinds)
    if kind == "decimal":
        precision = rng.randint(1, 38)
        return f"decimal({precision},{rng.randint(0, precision)})"
    if kind == "struct":
        return {"type": "struct", "fields": fields(rng, rng.randint(1, 3), depth + 1)}
    if kind == "array":
        return {"type": "array", "elementType": delta_type(rng, depth + 1), "containsNull": rng.random() < 0.7}
    if kind == "map":
        key = rng.choice(["string", "integer", "long", "date"])
        value = delta_type(rng, depth + 1)
        return {"type": "map", "keyType": key, "valueType": value, "valueContainsNull": rng.random() < 0.7}
    return kind


def fields(rng: random.Random, n: int, depth: int = 0, partition: bool = False) -> list[dict[str, Any]]:
    names = rng.sample(VALID_NAMES, n)
    return [
        {"name": name, "type": delta_type(rng, depth, partition), "nullable": rng.random() < 0.8, "metadata": {}}
        for name in names
    ]


def valid_schema(rng: random.Random) -> tuple[dict[str, Any], list[str]]:
    data = fields(rng, rng.randint(1, 4))
    taken = {f["name"].lower() for f in data}
    parts = [f for f in fields(rng, rng.randint(0, 2), partition=True) if f["name"].lower() not in taken]
    for f in parts:
        f["name"] = "p_" + f["name"]
    cols = data + parts
    rng.shuffle(cols)
    return {"type": "struct", "fields": cols}, [f["name"] for f in parts]


def adversarial_schema(rng: random.Random) -> tuple[dict[str, Any], list[str]]:
    schema, parts = valid_schema(rng)
    cols = schema["fields"]
    for _ in range(rng.randint(0, 2)):
        victim = rng.choice(cols)
        trick = rng.randrange(7)
        if trick == 0:
            victim["name"] = rng.choice(BAD_NAMES)
        elif trick == 1:
            victim["type"] = rng.choice(BAD_TYPES)
        elif trick == 2:
            cols.append({**victim, "name": victim["name"].swapcase()})  # equal but for case (or exactly)
        elif trick == 3:
            victim["type"] = {
                "type": "struct",
                "fields": [{"name": "n", "type": "long", "nullable": True, "metadata": {}}] * 2,
            }
        elif trick == 4:
            parts = [*parts, rng.choice(cols)["name"]]
        elif trick == 5:
            cols.clear()
            parts = []
            break
        else:
            parts = [f["name"] for f in cols]
    return schema, parts


def valid_partition_value(rng: random.Random, t: str, nullable: bool) -> str | None:
    if nullable and rng.random() < 0.15:
        return rng.choice([None, ""])
    if t == "string":
        return rng.choice(["a", "with space", "slash/x", "eq=x", "percent%20", "ünï", "\u0001ctrl", "x" * 100, "a,b;c"])
    if t in ("byte", "short", "integer", "long"):
        bits = {"byte": 8, "short": 16, "integer": 32, "long": 64}[t]
        return str(rng.choice([0, -1, 1, 2 ** (bits - 1) - 1, -(2 ** (bits - 1)), rng.randint(-100, 100)]))
    if t in ("float", "double"):
        return rng.choice(["1.5", "-0.0", "0", "NaN", "Infinity", "-Infinity", "1e10", "-2.5e-3", "123456.789"])
    if t.startswith("decimal"):
        precision, scale = map(int, t[len("decimal(") : -1].split(","))
        digits = rng.randint(1, precision - scale) if precision > scale else 0
        whole = "".join(rng.choice(string.digits) for _ in range(digits)) or "0"
        frac = "".join(rng.choice(string.digits) for _ in range(scale))
        return rng.choice(["", "-"]) + whole + (f".{frac}" if scale else "")
    if t == "boolean":
        return rng.choice(["true", "false"])
    if t == "date":
        return rng.choice(
            ["1970-01-01", "2024-02-29", "1999-12-31", "2262-04-11", "1677-09-22", "0001-01-01", "9999-12-31"]
        )
    if t == "timestamp":
        return rng.choice(
            [
                "1970-01-01 00:00:00",
                "2024-02-29 23:59:59.999999",
                "2024-01-01T00:00:00.123Z",
                "2024-06-01T12:00:00Z",
                "2000-01-01 00:00:00.5",
            ]
        )
    if t == "timestamp_ntz":
        return rng.choice(["1970-01-01 00:00:00", "2024-02-29 23:59:59.999999", "2000-01-01 12:34:56.7"])
    return "x"


def bad_partition_value(rng: random.Random, t: str) -> Any:
    return rng.choice(
        [
            "abc",
            "2024-02-30",
            "not-a-date",
            "TRUE",
            "2024-01-01T00:00:00+01:00",
            "__HIVE_DEFAULT_PARTITION__",
            "99999999999999999999",
            "1.2345678901234567890123456789012345678901",
            " 7",
            "1e400",
            7,
            None,
            "",
            "2024-01-01T00:00:00Z" if t == "timestamp_ntz" else "1,5",
        ]
    )


#: features a valid run may add by name (supported, not switched on); all writable by deltalog
FEATURES_TO_ADD = [
    *("domainMetadata", "v2Checkpoint", "timestampNtz", "vacuumProtocolCheck", "deletionVectors"),
    *("changeDataFeed", "columnMapping", "inCommitTimestamp", "appendOnly", "typeWidening"),
]
VALID_PROPERTIES: list[Callable[[random.Random], dict[str, str]]] = [
    lambda r: {"delta.checkpointInterval": str(r.randint(1, 12))},
    lambda r: {"delta.appendOnly": r.choice(["true", "false", "TRUE"])},
    lambda r: {"delta.logRetentionDuration": r.choice(["interval 30 days", "interval 60 days", "8 weeks"])},
    lambda r: {
        "delta.deletedFileRetentionDuration": r.choice(["interval 1 week", "interval 2 days", "interval 12 hours"])
    },
    lambda r: {"delta.checkpoint.writeStatsAsStruct": r.choice(["true", "false"])},
    lambda r: {"delta.checkpoint.writeStatsAsJson": r.choice(["true", "false"])},
    lambda r: {"delta.dataSkippingNumIndexedCols": str(r.randint(-1, 4))},
    lambda r: {"delta.isolationLevel": r.choice(["Serializable", "WriteSerializable"])},
    lambda r: {"delta.checkpointPolicy": r.choice(["classic", "v2"])},
    lambda r: {"delta.enableExpiredLogCleanup": r.choice(["true", "false"])},
    lambda r: {"delta.setTransactionRetentionDuration": "interval 3 days"},
    lambda r: {"delta.parquet.compression.codec": r.choice(["snappy", "zstd", "gzip", "none"])},
    lambda r: {"DELTA.CHECKPOINTINTERVAL": "5"},
    lambda r: {"owner": r.choice(["team-a", "ünï", ""]), "comment": "free text, = and ;"},
    lambda r: {f"delta.feature.{r.choice(FEATURES_TO_ADD)}": "supported"},
    lambda r: {"delta.minWriterVersion": str(r.randint(2, 7))},
    lambda r: r.choice(
        [{"delta.minReaderVersion": "2"}, {"delta.minReaderVersion": "3", "delta.minWriterVersion": "7"}]
    ),
    lambda r: {"delta.enableDeletionVectors": "false", "delta.enableChangeDataFeed": "false"},
]
#: values another engine may have stored, which deltalog must live with (read, repair, report by name)
FOREIGN_VALUES: list[dict[str, str]] = [
    {"delta.isolationLevel": "snapshot"},
    {"delta.deletedFileRetentionDuration": "interval 1 month"},
    {"delta.logRetentionDuration": "interval 1 year"},
    {"delta.checkpointInterval": "0"},
    {"delta.checkpointInterval": "ten"},
    {"delta.checkpoint.writeStatsAsJson": "yes"},
    {"delta.setTransactionRetentionDuration": "forever"},
    {"delta.parquet.compression.codec": "lzo"},
    {"delta.targetFileSize": "100mb"},
    {"delta.appendonly": "true"},
]
BAD_PROPERTIES: list[dict[str, str]] = [
    {"delta.isolationLevel": "snapshot"},
    {"delta.isolationLevel": "SnapshotIsolation"},
    {"delta.deletedFileRetentionDuration": "interval 1 month"},
    {"delta.logRetentionDuration": "interval 1 year"},
    {"delta.logRetentionDuration": "interval 1 day"},  # shorter than the deleted-file retention
    {"delta.logRetentionDuration": "forever"},
    {"delta.checkpointInterval": "0"},
    {"delta.checkpointInterval": "ten"},
    {"delta.appendOnly": "yes"},
    {"delta.dataSkippingNumIndexedCols": "-5"},
    {"delta.checkpointPolicy": "v3"},
    {"delta.columnMapping.mode": "name"},
    {"delta.enableDeletionVectors": "true"},
    {"delta.enableChangeDataFeed": "true"},
    {"delta.enableRowTracking": "true"},
    {"delta.enableInCommitTimestamps": "true"},
    {"delta.enableTypeWidening": "true"},
    {"delta.columnMapping.maxColumnId": "5"},
    {"delta.inCommitTimestampEnablementVersion": "1"},
    {"delta.requireCheckpointProtectionBeforeVersion": "1"},
    {"delta.rowTracking.materializedRowIdColumnName": "x"},
    {"delta.constraints.positive": "id > 0"},
    {"clusteringColumns": '[["id"]]'},
    {"delta.feature.clustering": "supported"},
    {"delta.feature.someFutureFeature": "supported"},
    {"delta.feature.domainMetadata": "disabled"},
    {"delta.minReaderVersion": "9"},
    {"delta.minWriterVersion": "x"},
    {"delta.targetFileSize": "100mb"},
    {"delta.parquet.compression.codec": "lzo"},
    {"delta.universalFormat.enabledFormats": "iceberg"},
]


# ---------------------------------------------------------------------------------------------- data
def arrow_values(rng: random.Random, t: pa.DataType, n: int, nullable: bool) -> list[Any]:
    return [None if nullable and rng.random() < 0.2 else arrow_value(rng, t) for _ in range(n)]


def arrow_value(rng: random.Random, t: pa.DataType) -> Any:
    if pa.types.is_struct(t) and sorted(t.field(i).name for i in range(t.num_fields)) == ["metadata", "value"]:
        return VARIANT_NULL
    if pa.types.is_struct(t):
        return {
            t.field(i).name: arrow_values(rng, t.field(i).type, 1, t.field(i).nullable)[0] for i in range(t.num_fields)
        }
    if pa.types.is_map(t):
        keys = {arrow_value(rng, t.key_type) for _ in range(rng.randint(0, 2))}
        return [(k, arrow_values(rng, t.item_type, 1, t.item_field.nullable)[0]) for k in keys]
    if pa.types.is_list(t):
        return arrow_values(rng, t.value_type, rng.randint(0, 2), t.value_field.nullable)
    if pa.types.is_string(t):
        return rng.choice(["a", "ünï", "", "x" * 40])
    if pa.types.is_integer(t):
        bits = t.bit_width
        return rng.choice([0, -1, 2 ** (bits - 1) - 1, -(2 ** (bits - 1))])
    if pa.types.is_floating(t):
        return rng.choice([0.0, -1.5, 3.25, float("nan")])
    if pa.types.is_boolean(t):
        return rng.random() < 0.5
    if pa.types.is_binary(t):
        return rng.choice([b"", b"\x00\x01", b"abc"])
    if pa.types.is_date(t):
        return rng.choice([dt.date(1970, 1, 1), dt.date(2024, 2, 29)])
    if pa.types.is_timestamp(t):
        value = rng.choice([dt.datetime(1970, 1, 1), dt.datetime(2024, 2, 29, 23, 59, 59, 999999)])
        return value.replace(tzinfo=dt.timezone.utc) if t.tz else value
    if pa.types.is_decimal(t):
        digits = t.precision - t.scale
        whole = int("9" * digits) if digits else 0
        return Decimal(whole).scaleb(0) if t.scale == 0 else Decimal(f"{whole}.{'1' * t.scale}")
    raise AssertionError(f"no generator for {t}")


# ---------------------------------------------------------------------------------------------- the run
@dataclass
class Fuzz:
    root: Path
    rng: random.Random
    valid: bool
    t0: float
    step: int = 0
    rows: dict[str, int] = field(default_factory=dict)  # data file -> rows, for every file the run wrote
    committed: int = 0
    refused: list[str] = field(default_factory=list)
    history: list[str] = field(default_factory=list)
    next_file: int = 0

    def log(self) -> DeltaLog:
        """A fresh handle (as a new process would open one) on a clock two days further per step."""
        return DeltaLog.for_table(self.root, clock=lambda: self.t0 + self.step * 2 * DAY_S)

    # ------------------------------------------------------------------------------------------ operations
    def create(self) -> Callable[[], Any]:
        schema, parts = valid_schema(self.rng) if self.valid else adversarial_schema(self.rng)
        conf: dict[str, str] = {}
        for _ in range(self.rng.randint(0, 2)):
            conf.update(self.properties())
        self.history.append(f"create schema={schema} partition_columns={parts} configuration={conf}")
        return lambda: self.log().create(schema, partition_columns=parts, configuration=conf)

    def properties(self) -> dict[str, str]:
        if self.valid or self.rng.random() < 0.4:
            return self.rng.choice(VALID_PROPERTIES)(self.rng)
        return dict(self.rng.choice(BAD_PROPERTIES))

    def append(self) -> Callable[[], Any]:
        snap = self.log().snapshot()
        parts = snap.partition_columns
        arrow = to_arrow_schema(snap.schema_json)
        data_schema = pa.schema([f for f in arrow if f.name not in parts])
        n = self.rng.randint(1, 3)
        data = pa.table(
            {f.name: arrow_values(self.rng, f.type, n, f.nullable) for f in data_schema}, schema=data_schema
        )
        name = f"part-{self.next_file:05d}.parquet"
        self.next_file += 1
        pq.write_table(data, self.root / name)
        self.rows[name] = n
        cols = {f["name"]: f for f in snap.schema_json["fields"]}
        values: dict[str, Any] = {}
        for p in parts:
            if self.valid or self.rng.random() < 0.6:
                values[p] = valid_partition_value(self.rng, cols[p]["type"], cols[p]["nullable"])
            else:
                values[p] = bad_partition_value(self.rng, cols[p]["type"])
        if not self.valid and parts and self.rng.random() < 0.1:
            values = {"not_a_column": "x"}
        # deltalog.arrow.stats has no variant statistics (only nullCount at the column is allowed): no stats then
        has_variant = '"variant"' in snap.metadata.schema_string
        stats = None if has_variant else stats_json(data, parts, snap.configuration)
        add = A.Add(name, values, (self.root / name).stat().st_size, int(time.time() * 1000), True, stats=stats)
        self.history.append(f"append {name} partition_values={values}")
        return lambda: self.log().start_transaction().commit([add])

    def remove_where(self) -> Callable[[], Any]:
        snap = self.log().snapshot()
        where: dict[str, Any] | None = None
        live = list(snap.add_actions())
        if snap.partition_columns and live and self.rng.random() < 0.7:
            p = self.rng.choice(snap.partition_columns)
            where = {p: self.rng.choice(live).partition_values.get(p)}
        self.history.append(f"remove_where {where}")

        def run() -> Any:
            txn = self.log().start_transaction()
            txn.remove_where(where)
            return txn.commit(operation="DELETE")

        return run

    def add_columns(self) -> Callable[[], Any]:
        existing = {f["name"].lower() for f in self.log().snapshot().schema_json["fields"]}
        new = {
            "name": f"c{self.next_file}_{self.rng.choice(VALID_NAMES)}",
            "type": delta_type(self.rng),
            "nullable": True,
            "metadata": {},
        }
        self.next_file += 1
        if not self.valid and self.rng.random() < 0.5:
            new = self.rng.choice(
                [
                    {**new, "type": self.rng.choice(BAD_TYPES)},
                    {**new, "name": self.rng.choice(BAD_NAMES)},
                    {**new, "name": self.rng.choice(sorted(existing)).upper()},
                    {**new, "nullable": False},
                ]
            )
        self.history.append(f"add_columns {new}")
        return lambda: self.log().add_columns([new])

    def set_properties(self) -> Callable[[], Any]:
        props = self.properties()
        self.history.append(f"set_properties {props}")
        return lambda: self.log().set_properties(props)

    def unset_properties(self) -> Callable[[], Any]:
        conf = self.log().snapshot().configuration
        pool = [*sorted(conf), "delta.appendOnly", "not.there"]
        if not self.valid:
            pool += ["delta.columnMapping.maxColumnId", "DELTA.ISOLATIONLEVEL"]
        keys = self.rng.sample(pool, min(len(pool), self.rng.randint(1, 2)))
        self.history.append(f"unset_properties {keys}")
        return lambda: self.log().unset_properties(keys)

    def checkpoint(self) -> Callable[[], Any]:
        self.history.append("checkpoint")
        return lambda: self.log().checkpoint()

    def cleanup(self) -> Callable[[], Any]:
        retention = self.rng.choice([None, 0, "interval 3 days"])
        self.history.append(f"cleanup retention={retention}")
        return lambda: self.log().cleanup(retention=retention, dry_run=False)

    def restore(self) -> Callable[[], Any]:
        log = self.log()
        latest = log.snapshot().version
        earliest = log.earliest_version() if self.valid else 0  # valid runs restore what the log still has
        target = self.rng.randint(earliest, max(latest - 1, earliest))
        self.history.append(f"restore version={target}")
        return lambda: self.log().restore(version=target)

    def foreign_properties(self) -> Callable[[], Any]:
        """Another engine commits a property value deltalog would refuse (adversarial runs only): the table
        must stay writable, repairable and maintainable, or say by name why not."""
        snap = self.log().snapshot()
        bad = dict(self.rng.choice(FOREIGN_VALUES))
        meta = replace(snap.metadata, configuration={**snap.configuration, **bad})
        version = snap.version + 1
        info = A.CommitInfo(timestamp=int(time.time() * 1000), operation="SET TBLPROPERTIES", engine_info="other/1.0")
        self.history.append(f"another engine sets {bad}")

        def run() -> None:
            path = self.root / "_delta_log" / f"{version:020d}.json"
            path.write_bytes(encode_actions([info, meta]))

        return run

    def next_operation(self) -> Callable[[], Any]:
        snap = self.log().snapshot()
        ops: list[tuple[Callable[[], Callable[[], Any]], int]] = [
            (self.append, 8),
            (self.add_columns, 2),
            (self.set_properties, 3),
            (self.unset_properties, 1),
            (self.checkpoint, 2),
            (self.cleanup, 1),
        ]
        append_only = snap.configuration.get("delta.appendOnly", "").lower() == "true"
        if not (self.valid and append_only):
            ops += [(self.remove_where, 2), (self.restore, 1 if snap.version > 0 else 0)]
        if not self.valid:
            ops.append((self.foreign_properties, 1))
        chosen = self.rng.choices([op for op, _ in ops], weights=[w for _, w in ops])[0]
        return chosen()


def log_state(root: Path) -> dict[str, bytes]:
    log_dir = root / "_delta_log"
    if not log_dir.exists():
        return {}
    return {str(p.relative_to(log_dir)): p.read_bytes() for p in sorted(log_dir.rglob("*")) if p.is_file()}


def deltalog_view(fz: Fuzz) -> PeerView:
    snap = fz.log().snapshot()
    files = frozenset(a.path for a in snap.add_actions())
    return PeerView(snap.version, files, sum(fz.rows[f] for f in files))


def check_peers(fz: Fuzz, con: duckdb.DuckDBPyConnection, where: str) -> None:
    ours = deltalog_view(fz)
    peers = {"deltalake": try_deltalake(fz.root), "duckdb": try_duckdb(fz.root, con)}
    for peer, view in peers.items():
        if isinstance(view, str):
            lim = peer_limitation(peer, view)
            assert lim is not None, f"{where}: {peer} refuses the table deltalog wrote: {view}"
            continue
        assert view.files == ours.files, (
            f"{where}: {peer} sees files {sorted(view.files)}, deltalog {sorted(ours.files)}"
        )
        assert view.rows == ours.rows, f"{where}: {peer} counts {view.rows} rows, deltalog's files hold {ours.rows}"
        if view.version is not None:
            assert view.version == ours.version, (
                f"{where}: {peer} opened version {view.version}, deltalog {ours.version}"
            )


def play(root: Path, seed: int, valid: bool, con: duckdb.DuckDBPyConnection) -> Fuzz:
    fz = Fuzz(root, random.Random(seed), valid, t0=time.time())
    for step in range(STEPS):
        fz.step = step
        exists = (root / "_delta_log").exists() and any((root / "_delta_log").glob("*.json"))
        operation = fz.next_operation() if exists else fz.create()
        where = f"seed {seed} step {step} ({'valid' if valid else 'adversarial'}): {fz.history[-1]}"
        before = log_state(root)
        try:
            operation()
        except DeltaLogError as exc:
            assert log_state(root) == before, f"{where}: refused with {exc!r} after writing to the log"
            fz.refused.append(f"{where}: {type(exc).__name__}: {exc}")
            continue
        fz.committed += 1
        check_peers(fz, con, where)
    return fz


@pytest.fixture(scope="module")
def con() -> Iterator[duckdb.DuckDBPyConnection]:
    """One duckdb connection for the module: loading the delta extension takes most of a second."""
    connection = duckdb_connection()
    yield connection
    connection.close()


@pytest.mark.interop
@pytest.mark.parametrize("seed", VALID_SEEDS)
def test_valid_sequences_commit_and_the_peers_agree(tmp_path: Path, seed: int, con: duckdb.DuckDBPyConnection) -> None:
    fz = play(tmp_path / "t", 1000 + seed, valid=True, con=con)
    share = fz.committed / STEPS
    assert share >= MIN_VALID_COMMIT_SHARE, f"only {fz.committed}/{STEPS} valid steps committed:\n" + "\n".join(
        fz.refused
    )


@pytest.mark.interop
@pytest.mark.parametrize("seed", ADVERSARIAL_SEEDS)
def test_adversarial_sequences_are_refused_typed_or_read_alike(
    tmp_path: Path, seed: int, con: duckdb.DuckDBPyConnection
) -> None:
    fz = play(tmp_path / "t", 2000 + seed, valid=False, con=con)
    assert fz.committed + len(fz.refused) == STEPS
