"""Hand-built logs for the protocol checker's tests: valid bases, and one broken log per rule.

Three valid bases, written with :mod:`tests.unit.logkit` / :mod:`tests.unit.logwriter`:

* :func:`modern_log`: column mapping (name), deletion vectors, row tracking (enabled), in-commit timestamps,
  clustering, change data feed, V2 checkpoints supported; four versions (append, append with a txn, a DV
  delete, a rewrite with a change file).
* :func:`legacy_log`: protocol (1, 2), partitioned by a string and a date column, two appends.
* :func:`dv_log`: deletion vectors only; an append and a DV delete.

A :class:`Case` starts from one of them, breaks one thing, and names the ``(rule, version)`` pairs the
checker must report, nothing more. Commits are lists of action dicts, mutated in place by the case.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from . import logkit as lk
from . import logwriter as lw

T0 = lk.T0
STEP = lk.STEP
Commits = list[list[dict[str, Any]]]

DV1 = lk.dv("ab^-aqEH.-t@S}K{vb[*k^", "u", offset=1, cardinality=2)
DV2 = lk.dv("cd^-aqEH.-t@S}K{vb[*k^", "u", offset=1, cardinality=3)

MODERN_READER = ["columnMapping", "deletionVectors", "timestampNtz", "v2Checkpoint"]
MODERN_WRITER = [
    "changeDataFeed",
    "clustering",
    "columnMapping",
    "deletionVectors",
    "domainMetadata",
    "inCommitTimestamp",
    "rowTracking",
    "timestampNtz",
    "v2Checkpoint",
]
MODERN_CONF = {
    "delta.columnMapping.mode": "name",
    "delta.columnMapping.maxColumnId": "2",
    "delta.enableDeletionVectors": "true",
    "delta.enableInCommitTimestamps": "true",
    "delta.enableChangeDataFeed": "true",
    "delta.enableRowTracking": "true",
    "delta.rowTracking.materializedRowIdColumnName": "_row_id_1",
    "delta.rowTracking.materializedRowCommitVersionColumnName": "_row_commit_version_1",
}
MODERN_COLUMNS = {"id": "long", "ts": "timestamp_ntz"}
MODERN_PHYSICAL = {"id": "col-a", "ts": "col-b"}


def info(version: int, **fields: Any) -> dict[str, Any]:
    """A commitInfo carrying an in-commit timestamp equal to the version's file time."""
    return lk.commit_info(timestamp=T0 + version * STEP, inCommitTimestamp=T0 + version * STEP, **fields)


def modern_stats(n: int, lo: int = 0, hi: int = 9) -> str:
    return orjson.dumps(
        {"numRecords": n, "minValues": {"col-a": lo}, "maxValues": {"col-a": hi}, "nullCount": {"col-a": 0, "col-b": 0}}
    ).decode()


def modern_add(path: str, n: int, base: int, version: int, **kw: Any) -> dict[str, Any]:
    a = lk.add(path, stats=modern_stats(n), **kw)
    a["add"].update(baseRowId=base, defaultRowCommitVersion=version)
    return a


def modern_remove(path: str, base: int, version: int, **kw: Any) -> dict[str, Any]:
    r = lk.remove(path, **kw)
    r["remove"].update(baseRowId=base, defaultRowCommitVersion=version)
    return r


def hwm(mark: int) -> dict[str, Any]:
    return lk.domain("delta.rowTracking", orjson.dumps({"rowIdHighWaterMark": mark}).decode())


def clustering(*columns: Any) -> dict[str, Any]:
    return lk.domain("delta.clustering", orjson.dumps({"clusteringColumns": list(columns)}).decode())


def modern_metadata(**conf: str) -> dict[str, Any]:
    return lk.metadata(MODERN_COLUMNS, configuration={**MODERN_CONF, **conf}, physical=MODERN_PHYSICAL)


def modern_log() -> Commits:
    a_with_dv = modern_add("a.parquet", 10, 0, 0, deletion_vector=DV1)
    return [
        [
            info(0, operation="CREATE TABLE"),
            lk.protocol(3, 7, MODERN_READER, MODERN_WRITER),
            modern_metadata(),
            clustering(["col-a"]),
            hwm(9),
            modern_add("a.parquet", 10, 0, 0),
        ],
        [info(1), modern_add("b.parquet", 5, 10, 1), hwm(14), lk.txn("app", 1)],
        [info(2, operation="DELETE"), modern_remove("a.parquet", 0, 0), a_with_dv],
        [
            info(3, operation="UPDATE"),
            modern_remove("b.parquet", 10, 1),
            modern_add("c.parquet", 5, 15, 3),
            {"cdc": {"path": "_change_data/cdc-1.parquet", "partitionValues": {}, "size": 10, "dataChange": False}},
            hwm(19),
        ],
    ]


LEGACY_COLUMNS = {"id": "long", "p": "string", "d": "date"}


def legacy_metadata(**conf: str) -> dict[str, Any]:
    return lk.metadata(LEGACY_COLUMNS, ["p", "d"], conf)


def legacy_add(path: str, p: str = "x", d: str = "2024-01-02", **kw: Any) -> dict[str, Any]:
    return lk.add(path, {"p": p, "d": d}, stats=lk.stats(3), **kw)


def legacy_log(**conf: str) -> Commits:
    return [
        [lk.commit_info("CREATE TABLE"), lk.protocol(1, 2), legacy_metadata(**conf), legacy_add("p=x/a.parquet")],
        [lk.commit_info(), legacy_add("p=y/b.parquet", "y", "")],
    ]


def dv_log(enabled: bool = True) -> Commits:
    conf = {"delta.enableDeletionVectors": "true"} if enabled else {}
    return [
        [
            lk.commit_info("CREATE TABLE"),
            lk.protocol(3, 7, ["deletionVectors"], ["deletionVectors"]),
            lk.metadata({"id": "long"}, configuration=conf),
            lk.add("a.parquet", stats=lk.stats(10)),
        ],
        [
            lk.commit_info("DELETE"),
            lk.remove("a.parquet"),
            lk.add("a.parquet", stats=lk.stats(10), deletion_vector=DV1),
        ],
    ]


def find(commits: Commits, version: int, kind: str, path: str | None = None) -> dict[str, Any]:
    """The body of the first ``kind`` action of ``version`` (with that path, when given)."""
    for action in commits[version]:
        if kind in action and (path is None or action[kind].get("path") == path):
            return action[kind]
    raise KeyError(f"no {kind} {path or ''} in version {version}")


def drop(commits: Commits, version: int, kind: str) -> None:
    commits[version] = [a for a in commits[version] if kind not in a]


def write(root: Path, commits: Commits, raw: dict[int, bytes] | None = None) -> Path:
    """Write the commits as versions 0.. (a version in ``raw`` is written as those bytes instead)."""
    for version, actions in enumerate(commits):
        lw.write_commit(root, version, (raw or {}).get(version, actions))
    return root


def checkpoint_actions(commits: Commits, upto: int) -> list[dict[str, Any]]:
    """What a checkpoint of version ``upto`` holds: the replay of the commits (no commitInfo, no cdc)."""
    protocol: Any = None
    metadata: Any = None
    txns: dict[str, Any] = {}
    domains: dict[str, Any] = {}
    files: dict[tuple[str, str | None], dict[str, Any]] = {}
    for actions in commits[: upto + 1]:
        for a in actions:
            ((kind, body),) = a.items()
            if kind == "protocol":
                protocol = a
            elif kind == "metaData":
                metadata = a
            elif kind == "txn":
                txns[body["appId"]] = a
            elif kind == "domainMetadata":
                domains[body["domain"]] = a
            elif kind in ("add", "remove"):
                dv = body.get("deletionVector")
                key = (
                    body["path"],
                    None if dv is None else f"{dv['storageType']}{dv['pathOrInlineDv']}@{dv['offset']}",
                )
                files[key] = a
    return [protocol, metadata, *txns.values(), *domains.values(), *files.values()]


# ---------------------------------------------------------------------------------------------- cases


@dataclass(frozen=True)
class Case:
    """A broken log: ``build`` writes it under the given root; ``expected`` are the (rule, version) pairs."""

    name: str
    build: Callable[[Path], None]
    expected: frozenset[tuple[str, int | None]] = field(default_factory=frozenset)

    @property
    def rules(self) -> set[str]:
        return {r for r, _ in self.expected}


CASES: list[Case] = []


def case(name: str, *expected: tuple[str, int | None]) -> Callable[[Callable[[Path], None]], Callable[[Path], None]]:
    def register(fn: Callable[[Path], None]) -> Callable[[Path], None]:
        CASES.append(Case(name, fn, frozenset(expected)))
        return fn

    return register


def modern(mutate: Callable[[Commits], None]) -> Callable[[Path], None]:
    def build(root: Path) -> None:
        commits = copy.deepcopy(modern_log())
        mutate(commits)
        write(root, commits)

    return build


def legacy(mutate: Callable[[Commits], None], **conf: str) -> Callable[[Path], None]:
    def build(root: Path) -> None:
        commits = copy.deepcopy(legacy_log(**conf))
        mutate(commits)
        write(root, commits)

    return build


def with_dvs(mutate: Callable[[Commits], None], enabled: bool = True) -> Callable[[Path], None]:
    def build(root: Path) -> None:
        commits = copy.deepcopy(dv_log(enabled))
        mutate(commits)
        write(root, commits)

    return build


def register_simple(name: str, build: Callable[[Path], None], *expected: tuple[str, int | None]) -> None:
    CASES.append(Case(name, build, frozenset(expected)))


# ---- shapes


@case("log.json", ("log.json", 1))
def _log_json(root: Path) -> None:
    commits = legacy_log()
    raw = b"".join(orjson.dumps(a) + b"\n" for a in commits[1]) + b"{not json\n"
    write(root, commits, raw={1: raw})


register_simple("shape.add", legacy(lambda c: find(c, 1, "add").update(size="5")), ("shape.add", 1))
register_simple(
    "shape.remove",
    legacy(lambda c: c[1].append({"remove": {"path": "p=x/a.parquet", "deletionTimestamp": T0}})),
    ("shape.remove", 1),
)
register_simple(
    "shape.metaData",
    legacy(
        lambda c: c[1].append({"metaData": {k: v for k, v in legacy_metadata()["metaData"].items() if k != "format"}})
    ),
    ("shape.metaData", 1),
)
register_simple(
    "shape.protocol",
    legacy(lambda c: c[1].append({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2.0}})),
    ("shape.protocol", 1),
)
register_simple("shape.txn", legacy(lambda c: c[1].append(lk.txn("app", "1"))), ("shape.txn", 1))  # type: ignore[arg-type]
register_simple(
    "shape.domainMetadata",
    modern(
        lambda c: c[1].append({"domainMetadata": {"domain": "my.app", "configuration": {"a": 1}, "removed": False}})
    ),
    ("shape.domainMetadata", 1),
)
register_simple("shape.cdc", modern(lambda c: find(c, 3, "cdc").pop("size")), ("shape.cdc", 3))
register_simple(
    "shape.commitInfo",
    legacy(lambda c: find(c, 1, "commitInfo").update(inCommitTimestamp="soon")),
    ("shape.commitInfo", 1),
)
register_simple(
    "commit.checkpoint-only-action",
    legacy(lambda c: c[1].append({"checkpointMetadata": {"version": 1}})),
    ("commit.checkpoint-only-action", 1),
)

# ---- one commit


register_simple("commit.first-version", legacy(lambda c: drop(c, 0, "protocol")), ("commit.first-version", 0))
register_simple(
    "commit.one-metadata",
    legacy(lambda c: c[1].extend([legacy_metadata(), legacy_metadata()])),
    ("commit.one-metadata", 1),
)
register_simple(
    "commit.one-protocol", legacy(lambda c: c[1].extend([lk.protocol(), lk.protocol()])), ("commit.one-protocol", 1)
)
register_simple(
    "commit.one-txn-per-app",
    legacy(lambda c: c[1].extend([lk.txn("app", 1), lk.txn("app", 2)])),
    ("commit.one-txn-per-app", 1),
)
register_simple(
    "commit.one-action-per-domain", modern(lambda c: c[1].append(hwm(14))), ("commit.one-action-per-domain", 1)
)
register_simple(
    "commit.one-file-action-per-path",
    legacy(lambda c: c[1].append(legacy_add("p=y/b.parquet", "y", ""))),
    ("commit.one-file-action-per-path", 1),
)
register_simple(
    "commit.add-and-remove-same-file",
    legacy(lambda c: c[1].append(lk.remove("p=y/b.parquet"))),
    ("commit.add-and-remove-same-file", 1),
)
register_simple(
    "commit.add-keeps-old-dv-live",
    with_dvs(lambda c: drop(c, 1, "remove")),
    ("commit.add-keeps-old-dv-live", 1),
)

# ---- protocol


register_simple("protocol.versions", legacy(lambda c: c[1].append(lk.protocol(1, 7))), ("protocol.versions", 1))
register_simple(
    "protocol.feature-listing",
    legacy(lambda c: c[1].append(lk.protocol(3, 7, ["deletionVectors"], ["appendOnly"]))),
    ("protocol.feature-listing", 1),
)
register_simple(
    "protocol.writer-feature-in-reader-list",
    legacy(lambda c: c[1].append(lk.protocol(3, 7, ["appendOnly"], ["appendOnly", "invariants"]))),
    ("protocol.writer-feature-in-reader-list", 1),
)
register_simple(
    "protocol.feature-dependency",
    legacy(
        lambda c: c.__setitem__(
            1, [lk.commit_info(), lk.protocol(1, 7, None, ["appendOnly", "invariants", "rowTracking"])]
        )
    ),
    ("protocol.feature-dependency", 1),
)
register_simple(
    "protocol.schema-needs-feature",
    legacy(lambda c: c[1].append(lk.metadata({**LEGACY_COLUMNS, "t": "timestamp_ntz"}, ["p", "d"]))),
    ("protocol.schema-needs-feature", 1),
)
register_simple(
    "protocol.property-needs-feature",
    legacy(lambda c: c[1].append(legacy_metadata(**{"delta.enableDeletionVectors": "true"}))),
    ("protocol.property-needs-feature", 1),
)


def _drop_dv_feature(c: Commits) -> None:
    del c[1:]
    c.append([lk.commit_info("DROP FEATURE"), lk.protocol(1, 7, None, ["appendOnly"]), lk.metadata({"id": "long"})])


register_simple("protocol.feature-removal", with_dvs(_drop_dv_feature), ("protocol.feature-removal", 1))

# ---- partitions


register_simple(
    "partition.keys",
    legacy(lambda c: find(c, 1, "add").update(partitionValues={"p": "y"})),
    ("partition.keys", 1),
)
register_simple(
    "partition.values",
    legacy(lambda c: find(c, 1, "add")["partitionValues"].update(d="2024-13-01")),
    ("partition.values", 1),
)

# ---- deletion vectors


register_simple(
    "dv.descriptor",
    with_dvs(lambda c: find(c, 1, "add")["deletionVector"].update(storageType="x")),
    ("dv.descriptor", 1),
)
register_simple(
    "dv.feature",
    legacy(lambda c: c[1].append(lk.add("z.parquet", {"p": "z", "d": ""}, stats=lk.stats(3), deletion_vector=DV1))),
    ("dv.feature", 1),
    ("dv.new-while-disabled", 1),
)
register_simple("dv.num-records", with_dvs(lambda c: find(c, 1, "add").pop("stats")), ("dv.num-records", 1))
register_simple("dv.new-while-disabled", with_dvs(lambda c: None, enabled=False), ("dv.new-while-disabled", 1))
register_simple(
    "dv.remove-carries-live-dv",
    with_dvs(lambda c: c.append([lk.commit_info("DELETE"), lk.remove("a.parquet")])),
    ("dv.remove-carries-live-dv", 2),
)


def _shrink_dv(c: Commits) -> None:
    smaller = lk.dv("cd^-aqEH.-t@S}K{vb[*k^", "u", offset=1, cardinality=1)
    remove = lk.remove("a.parquet", deletion_vector=DV1)
    c.append([lk.commit_info("DELETE"), remove, lk.add("a.parquet", stats=lk.stats(10), deletion_vector=smaller)])


register_simple("dv.cardinality-never-shrinks", with_dvs(_shrink_dv), ("dv.cardinality-never-shrinks", 2))

# ---- in-commit timestamps


def _info_last(c: Commits) -> None:
    c[1].append(c[1].pop(0))


register_simple("ict.commit-info-first", modern(_info_last), ("ict.commit-info-first", 1))
register_simple(
    "ict.increasing", modern(lambda c: find(c, 1, "commitInfo").update(inCommitTimestamp=T0)), ("ict.increasing", 1)
)


def enable_ict(commits: Commits, ict: int, props: bool) -> None:
    """Version 1 of a legacy log enables in-commit timestamps (with the enablement properties, or without)."""
    conf = {"delta.enableInCommitTimestamps": "true"}
    if props:
        conf |= {
            "delta.inCommitTimestampEnablementVersion": "1",
            "delta.inCommitTimestampEnablementTimestamp": str(ict),
        }
    commits[1] = [
        lk.commit_info("SET TBLPROPERTIES", timestamp=ict, inCommitTimestamp=ict),
        lk.protocol(1, 7, None, ["appendOnly", "invariants", "inCommitTimestamp"]),
        legacy_metadata(**conf),
    ]


register_simple(
    "ict.enablement-properties",
    legacy(lambda c: enable_ict(c, T0 + STEP, props=False)),
    ("ict.enablement-properties", 1),
)
register_simple(
    "ict.enablement-after-previous-mtime",
    legacy(lambda c: enable_ict(c, T0 - 1, props=True)),
    ("ict.enablement-after-previous-mtime", 1),
)

# ---- row tracking


register_simple("rt.fresh-ids", modern(lambda c: find(c, 1, "add").pop("defaultRowCommitVersion")), ("rt.fresh-ids", 1))


def _below_mark(c: Commits) -> None:
    find(c, 0, "add", "a.parquet")["stats"] = modern_stats(5)
    find(c, 2, "add", "a.parquet")["stats"] = modern_stats(5)
    find(c, 1, "add").update(baseRowId=5)
    find(c, 3, "remove").update(baseRowId=5)


register_simple("rt.fresh-above-mark", modern(_below_mark), ("rt.fresh-above-mark", 1))
register_simple(
    "rt.high-water-mark",
    modern(lambda c: find(c, 1, "domainMetadata").update(hwm(13)["domainMetadata"])),
    ("rt.high-water-mark", 1),
)
register_simple(
    "rt.mark-never-decreases",
    modern(lambda c: c[2].append(hwm(12))),
    ("rt.mark-never-decreases", 2),
    ("rt.high-water-mark", 2),  # the lowered mark is also below b.parquet's live ids 10..14
)
register_simple("rt.disjoint", modern(lambda c: c[3].append(modern_add("d.parquet", 2, 17, 3))), ("rt.disjoint", 3))
register_simple(
    "rt.recommit-copies-ids",
    modern(lambda c: find(c, 2, "add").update(defaultRowCommitVersion=2)),
    ("rt.recommit-copies-ids", 2),
)


@case("rt.enablement", ("rt.enablement", 1))
def _rt_enablement(root: Path) -> None:
    write(
        root,
        [
            [
                lk.commit_info("CREATE TABLE"),
                lk.protocol(1, 7, None, ["domainMetadata", "rowTracking"]),
                lk.metadata({"id": "long"}, configuration={"delta.rowTrackingSuspended": "true"}),
                lk.add("a.parquet", stats=lk.stats(3)),
            ],
            [
                lk.commit_info("SET TBLPROPERTIES"),
                lk.metadata(
                    {"id": "long"},
                    configuration={
                        "delta.enableRowTracking": "true",
                        "delta.rowTracking.materializedRowIdColumnName": "_row_id_1",
                        "delta.rowTracking.materializedRowCommitVersionColumnName": "_row_commit_version_1",
                    },
                ),
            ],
        ],
    )


# ---- domains and clustering


register_simple("domain.feature", legacy(lambda c: c[1].append(lk.domain("my.app", "{}"))), ("domain.feature", 1))
register_simple(
    "clustering.domain",
    modern(lambda c: c[1].append(lk.domain("delta.clustering", "not json"))),
    ("clustering.domain", 1),
)
register_simple(
    "clustering.domain/logical-names",
    modern(lambda c: c[1].append(clustering(["id"]))),
    ("clustering.domain", 1),
    ("clustering.stats", 1),  # no file has stats under that (logical) name
    ("clustering.stats", 2),
    ("clustering.stats", 3),
)


@case("clustering.not-partitioned", ("clustering.not-partitioned", 0))
def _clustered_and_partitioned(root: Path) -> None:
    write(
        root,
        [
            [
                lk.commit_info("CREATE TABLE"),
                lk.protocol(1, 7, None, ["clustering", "domainMetadata"]),
                lk.metadata({"id": "long", "p": "string"}, ["p"]),
            ]
        ],
    )


register_simple(
    "clustering.stats",
    modern(lambda c: find(c, 1, "add").update(stats=orjson.dumps({"numRecords": 5}).decode())),
    ("clustering.stats", 1),
)

# ---- column mapping


def modern_schema_change(columns: dict[str, Any], physical: dict[str, str], ids: dict[str, int], **conf: str):
    """A version 4 committing a new schema (column ids as given) to the modern log."""

    def mutate(c: Commits) -> None:
        meta = lk.metadata(columns, configuration={**MODERN_CONF, **conf}, physical=physical)
        schema = orjson.loads(meta["metaData"]["schemaString"])
        for f in schema["fields"]:
            if f["name"] in ids:
                f["metadata"]["delta.columnMapping.id"] = ids[f["name"]]
            elif f["name"] not in physical:
                f["metadata"] = {}
        meta["metaData"]["schemaString"] = orjson.dumps(schema).decode()
        c.append([info(4, operation="ALTER TABLE"), meta])

    return modern(mutate)


register_simple(
    "cm.field-metadata",
    modern_schema_change(MODERN_COLUMNS, {"id": "col-a"}, {}),
    ("cm.field-metadata", 4),
)
register_simple(
    "cm.unique",
    modern_schema_change(
        {**MODERN_COLUMNS, "z": "long"},
        {**MODERN_PHYSICAL, "z": "col-z"},
        {"z": 1},
        **{"delta.columnMapping.maxColumnId": "3"},
    ),
    ("cm.unique", 4),
)
register_simple(
    "cm.max-column-id",
    modern_schema_change(MODERN_COLUMNS, MODERN_PHYSICAL, {}, **{"delta.columnMapping.maxColumnId": "1"}),
    ("cm.max-column-id", 4),
)
register_simple(
    "cm.physical-name-reuse",
    modern_schema_change(
        {"id": "long", "z": "long"}, {"id": "col-a", "z": "col-b"}, {"z": 3}, **{"delta.columnMapping.maxColumnId": "3"}
    ),
    ("cm.physical-name-reuse", 4),
)


def _logical_stats(c: Commits) -> None:
    stats = {"numRecords": 5, "minValues": {"id": 0}, "maxValues": {"id": 9}, "nullCount": {"col-a": 0}}
    find(c, 1, "add")["stats"] = orjson.dumps(stats).decode()


register_simple("cm.stats-keys", modern(_logical_stats), ("cm.stats-keys", 1))

# ---- change data, append-only, checksums


register_simple(
    "cdf.cdc-data-change", modern(lambda c: find(c, 3, "cdc").update(dataChange=True)), ("cdf.cdc-data-change", 3)
)
register_simple(
    "cdf.cdc-location", modern(lambda c: find(c, 3, "cdc").update(path="cdc/x.parquet")), ("cdf.cdc-location", 3)
)
register_simple(
    "append-only.no-data-removal",
    legacy(lambda c: c[1].append(lk.remove("p=x/a.parquet")), **{"delta.appendOnly": "true"}),
    ("append-only.no-data-removal", 1),
)


@case("crc.matches-state", ("crc.matches-state", 1))
def _crc(root: Path) -> None:
    write(root, legacy_log())
    crc = {"tableSizeBytes": 200, "numFiles": 5, "numMetadata": 1, "numProtocol": 1}
    (root / "_delta_log" / f"{1:020d}.crc").write_bytes(orjson.dumps(crc))


# ---- checkpoints


def legacy_with_checkpoint(root: Path, actions: list[dict[str, Any]] | None = None, name: str | None = None) -> Path:
    commits = legacy_log()
    write(root, commits)
    return lw.write_checkpoint(root, 1, checkpoint_actions(commits, 1) if actions is None else actions, name)


def v2_table(root: Path) -> Commits:
    """A legacy-shaped log on a (3, 7) protocol supporting v2Checkpoint."""
    commits = legacy_log()
    commits[0][1] = lk.protocol(3, 7, ["v2Checkpoint"], ["appendOnly", "invariants", "v2Checkpoint"])
    write(root, commits)
    return commits


@case("ckpt.readable", ("ckpt.readable", 1))
def _unreadable(root: Path) -> None:
    write(root, legacy_log())
    (root / "_delta_log" / f"{1:020d}.checkpoint.parquet").write_bytes(b"PAR1 not really")


@case("ckpt.readable/missing-sidecar", ("ckpt.readable", 1))
def _missing_sidecar(root: Path) -> None:
    commits = v2_table(root)
    at1 = checkpoint_actions(commits, 1)
    sidecar = lw.write_sidecar(root, "7d17ac10-5cc3-401b-bd1a-9c82dd2ea032.parquet", [a for a in at1 if "add" in a])
    (root / "_delta_log" / "_sidecars" / "7d17ac10-5cc3-401b-bd1a-9c82dd2ea032.parquet").unlink()
    lw.write_v2_checkpoint(root, 1, [*at1[:2], sidecar], "3a0d65cd-4056-49b8-937b-95f9e3ee90e5")


@case("ckpt.matches-replay/sidecar", ("ckpt.matches-replay", 1))
def _sidecar_missing_file(root: Path) -> None:
    commits = v2_table(root)
    at1 = checkpoint_actions(commits, 1)
    sidecar = lw.write_sidecar(root, "7d17ac10-5cc3-401b-bd1a-9c82dd2ea032.parquet", [a for a in at1 if "add" in a][:1])
    lw.write_v2_checkpoint(root, 1, [*at1[:2], sidecar], "3a0d65cd-4056-49b8-937b-95f9e3ee90e5", fmt="parquet")


@case("ckpt.protocol-and-metadata", ("ckpt.protocol-and-metadata", 1))
def _ckpt_protocol_row(root: Path) -> None:
    actions = checkpoint_actions(legacy_log(), 1)
    actions[0] = lk.protocol(1, 2, [], None)
    legacy_with_checkpoint(root, actions)


@case("ckpt.no-commit-info-or-cdc", ("ckpt.no-commit-info-or-cdc", 1))
def _ckpt_commit_info(root: Path) -> None:
    commits = v2_table(root)
    lw.write_v2_checkpoint(
        root, 1, [*checkpoint_actions(commits, 1), lk.commit_info()], "3a0d65cd-4056-49b8-937b-95f9e3ee90e5"
    )


@case("ckpt.tombstones-not-live", ("ckpt.tombstones-not-live", 1))
def _ckpt_tombstone(root: Path) -> None:
    legacy_with_checkpoint(root, [*checkpoint_actions(legacy_log(), 1), lk.remove("p=x/a.parquet")])


@case("ckpt.v2-spec", ("ckpt.v2-spec", 1))
def _ckpt_v2_spec(root: Path) -> None:
    commits = v2_table(root)
    name = f"{1:020d}.checkpoint.3a0d65cd-4056-49b8-937b-95f9e3ee90e5.json"
    (root / "_delta_log" / name).write_bytes(b"".join(orjson.dumps(a) + b"\n" for a in checkpoint_actions(commits, 1)))


def multi_part(root: Path, commits: Commits, parts: tuple[int, ...] = (1, 2)) -> None:
    actions = checkpoint_actions(commits, 1)
    halves = [actions[:2], actions[2:]]
    for part in parts:
        lw.write_checkpoint(root, 1, halves[part - 1], name=f"{1:020d}.checkpoint.{part:010d}.{2:010d}.parquet")


@case("ckpt.no-multi-part-on-v2", ("ckpt.no-multi-part-on-v2", 1))
def _multi_part_on_v2(root: Path) -> None:
    multi_part(root, v2_table(root))


@case("ckpt.multi-part-complete", ("ckpt.multi-part-complete", 1))
def _multi_part_incomplete(root: Path) -> None:
    commits = legacy_log()
    write(root, commits)
    multi_part(root, commits, parts=(1,))


@case("ckpt.multi-part-numbering", ("ckpt.multi-part-numbering", 1))
def _multi_part_numbering(root: Path) -> None:
    commits = legacy_log()
    write(root, commits)
    multi_part(root, commits)
    lw.write_checkpoint(root, 1, [], name=f"{1:020d}.checkpoint.{3:010d}.{2:010d}.parquet")


@case("ckpt.matches-replay", ("ckpt.matches-replay", 1))
def _ckpt_missing_file(root: Path) -> None:
    legacy_with_checkpoint(root, checkpoint_actions(legacy_log(), 1)[:-1])


@case("ckpt.parsed-physical-names", ("ckpt.parsed-physical-names", 0))
def _parsed_logical(root: Path) -> None:
    meta = lk.metadata(
        {"id": "long", "p": "string"},
        ["p"],
        {"delta.columnMapping.mode": "name", "delta.columnMapping.maxColumnId": "2"},
        physical={"id": "col-a", "p": "col-p"},
    )
    add = lk.add("col-p=x/a.parquet", {"col-p": "x"})
    write(root, [[lk.commit_info(), lk.protocol(2, 5), meta, add]])
    base = lw.checkpoint_table([lk.protocol(2, 5), meta, add])
    parsed = pa.array([None, None, {"p": "x"}], pa.struct([("p", pa.string())]))
    adds = base.column("add").combine_chunks()
    fields = [adds.field(i) for i in range(adds.type.num_fields)]
    names = [f.name for f in adds.type]
    with_parsed = pa.StructArray.from_arrays([*fields, parsed], [*names, "partitionValues_parsed"], mask=adds.is_null())
    table = base.set_column(base.schema.get_field_index("add"), "add", with_parsed)
    pq.write_table(table, root / "_delta_log" / f"{0:020d}.checkpoint.parquet")


# ---- the log


@case("log.reconstructable", ("log.reconstructable", None))
def _no_start(root: Path) -> None:
    commits = legacy_log()
    commits.append([lk.commit_info(), legacy_add("p=z/c.parquet", "z")])
    write(root, commits)
    (root / "_delta_log" / f"{0:020d}.json").unlink()


@case("log.versions-contiguous", ("log.versions-contiguous", 2))
def _gap(root: Path) -> None:
    commits = legacy_log()
    commits += [[lk.commit_info(), legacy_add(f"p=z/{v}.parquet", "z")] for v in (2, 3)]
    write(root, commits)
    (root / "_delta_log" / f"{2:020d}.json").unlink()


@case("log.last-checkpoint", ("log.last-checkpoint", 1))
def _hint_nowhere(root: Path) -> None:
    write(root, legacy_log())
    lw.write_last_checkpoint(root, {"version": 1, "size": 4})


@case("log.last-checkpoint-fields", ("log.last-checkpoint-fields", None))
def _hint_size(root: Path) -> None:
    legacy_with_checkpoint(root)
    lw.write_last_checkpoint(root, {"version": 1, "size": 9})


@case("log.checkpoint-layouts", ("log.checkpoint-layouts", None))
def _two_layouts(root: Path) -> None:
    commits = legacy_log()
    legacy_with_checkpoint(root)
    multi_part(root, commits)
    lw.write_last_checkpoint(root, {"version": 1, "size": 4})


@case("log.compaction-matches-commits", ("log.compaction-matches-commits", 0))
def _compaction(root: Path) -> None:
    commits = legacy_log()
    write(root, commits)
    wrong = [a for a in checkpoint_actions(commits, 1) if a.get("add", {}).get("path") != "p=y/b.parquet"]
    (root / "_delta_log" / f"{0:020d}.{1:020d}.compacted.json").write_bytes(
        b"".join(orjson.dumps(a) + b"\n" for a in wrong)
    )


# ---------------------------------------------------------------------------------------------- valid logs

VALID: dict[str, Callable[[Path], None]] = {}


def valid(name: str) -> Callable[[Callable[[Path], None]], Callable[[Path], None]]:
    def register(fn: Callable[[Path], None]) -> Callable[[Path], None]:
        VALID[name] = fn
        return fn

    return register


valid("modern")(lambda root: write(root, modern_log()) and None)
valid("legacy")(lambda root: write(root, legacy_log()) and None)
valid("deletion-vectors")(lambda root: write(root, dv_log()) and None)


def is_file_action(action: dict[str, Any]) -> bool:
    return "add" in action or "remove" in action


@valid("modern-with-v2-and-classic-checkpoints")
def _modern_checkpoints(root: Path) -> None:
    """A UUID-named JSON V2 checkpoint with a sidecar at version 2, a classic V1 one at 3, the hint at 3."""
    commits = modern_log()
    write(root, commits)
    at2 = checkpoint_actions(commits, 2)
    sidecar = lw.write_sidecar(
        root, "016ae953-37a9-438e-8683-9a9a4a79a395.parquet", [a for a in at2 if is_file_action(a)]
    )
    others = [a for a in at2 if not is_file_action(a)]
    lw.write_v2_checkpoint(root, 2, [*others, sidecar], "80a083e8-7026-4e79-81be-64bd76c43a11")
    at3 = checkpoint_actions(commits, 3)
    lw.write_checkpoint(root, 3, at3)
    adds = sum(1 for a in at3 if "add" in a)
    lw.write_last_checkpoint(root, {"version": 3, "size": len(at3), "numOfAddFiles": adds})


@valid("legacy-multi-part-checkpoint-and-compaction")
def _legacy_multi_part(root: Path) -> None:
    commits = legacy_log()
    write(root, commits)
    multi_part(root, commits)
    lw.write_last_checkpoint(root, {"version": 1, "size": 4, "parts": 2})
    compacted = checkpoint_actions(commits, 1)
    (root / "_delta_log" / f"{0:020d}.{1:020d}.compacted.json").write_bytes(
        b"".join(orjson.dumps(a) + b"\n" for a in compacted)
    )


@valid("ict-enabled-at-version-1")
def _ict_enabled(root: Path) -> None:
    commits = legacy_log()
    enable_ict(commits, T0 + STEP, props=True)
    commits.append(
        [lk.commit_info(timestamp=T0 + 2 * STEP, inCommitTimestamp=T0 + 2 * STEP), legacy_add("p=z/c.parquet")]
    )
    write(root, commits)


@valid("deletion-vectors-dropped-with-checkpoint-protection")
def _dv_dropped(root: Path) -> None:
    commits = dv_log()
    commits[1] = [lk.commit_info("DELETE"), lk.remove("a.parquet")]
    conf = {"delta.requireCheckpointProtectionBeforeVersion": "2"}
    commits.append(
        [
            lk.commit_info("DROP FEATURE"),
            lk.protocol(1, 7, None, ["checkpointProtection"]),
            lk.metadata({"id": "long"}, configuration=conf),
        ]
    )
    write(root, commits)


@valid("row-tracking-supported-not-enabled")
def _row_tracking_supported(root: Path) -> None:
    """Ids assigned although row tracking is only listed; a file from before the feature keeps none."""
    first = lk.add("old.parquet", stats=lk.stats(4))
    new = lk.add("new.parquet", stats=lk.stats(3))
    new["add"].update(baseRowId=0, defaultRowCommitVersion=1)
    write(
        root,
        [
            [lk.commit_info("CREATE TABLE"), lk.protocol(1, 2), lk.metadata({"id": "long"}), first],
            [
                lk.commit_info(),
                lk.protocol(1, 7, None, ["appendOnly", "invariants", "domainMetadata", "rowTracking"]),
                new,
                hwm(2),
            ],
        ],
    )
