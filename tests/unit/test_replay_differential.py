"""The two commit parsers, differentially: generated logs replayed on the bulk (Arrow JSON) path and on the
exact (orjson) path must give the same outcome, the same state or the same error.

The logs hold the shapes where two parsers could disagree: partition values with stray, missing, other-case
or logical-name keys, ``""`` and null values, values that are not strings; duplicate actions for one file in
one commit, an add and a remove of one file in one commit, deletion vectors (empty, inline, by offset);
tags, stats present, absent or not a string; unknown actions and fields; protocol, metaData, txn and
domainMetadata in any order and on the same line as a file action; commitInfo anywhere (also with an
escaped key); null action bodies; removes without partition values; paths in several spellings
(percent-encoded, absolute, ``file:`` URIs); column mapping; a changed partitioning; keys spelled with
``\\u`` escapes or given twice, spaced JSON, CRLF line ends, blank lines, and a few wrongly typed fields.
Some start from a checkpoint-like base (its rows in any partition shape).

The state compared is everything a snapshot is made of, in order: live files with every column and their
stats, tombstones, protocol, metadata, txns, domains, commitInfo, version.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deltalog.core import actions as A
from deltalog.core.state import BaseState, CommitData, parse_bulk
from deltalog.core.state.columns import ADD_SCHEMA, REMOVE_SCHEMA, table_from_dicts
from deltalog.core.state.replay import replay
from deltalog.errors import DeltaLogError

from . import logkit as K

ROOT = "/data/t"
EXAMPLES = 400
SETTINGS = settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)

PATHS = [
    "a.parquet",
    "b c.parquet",
    "b%20c.parquet",
    f"file:{ROOT}/b%20c.parquet",
    f"{ROOT}/a.parquet",
    "p=1/x%3Ay.parquet",
    "p=1/x:y.parquet",
    "\u00e9.parquet",
    "%C3%A9.parquet",
]
DVS: list[dict[str, Any] | None] = [
    None,
    None,
    K.dv("ab^-aqEH.-t@S}K{vb[*k^", offset=1),
    K.dv("ab^-aqEH.-t@S}K{vb[*k^", offset=9),
    K.dv("ab^-aqEH.-t@S}K{vb[*k^", offset=None),
    K.inline_dv(),
    {},
]
NAMES = ["p", "q", "Part", "a b"]
APPS = ["app", "other"]
DOMAINS = ["delta.clustering", "user.x"]


class Table:
    """What the generated commits need to know about the table: its columns and their physical names."""

    def __init__(self, partitions: list[str], mapping: str, legacy: bool, rough: bool) -> None:
        self.partitions = partitions
        #: whether the log may hold what the bulk parser hands over (wrong JSON types, repeated keys, tags,
        #: odd lines); half the logs do not, so that the bulk parser replays a good share itself
        self.rough = rough
        self.mapping = mapping  # "none" or "name"
        self.physical = {c: f"col-{i}-{c.replace(' ', '_')}" for i, c in enumerate(["id", *partitions])}
        self.legacy = legacy

    def keys(self) -> list[str]:
        return [self.physical[c] if self.mapping == "name" else c for c in self.partitions]

    def protocol(self) -> dict[str, Any]:
        if self.mapping == "none":
            return K.protocol()
        return K.protocol(2, 5) if self.legacy else K.protocol(3, 7, ["columnMapping"], ["columnMapping"])

    def metadata(self, partitions: list[str] | None = None, **config: str) -> dict[str, Any]:
        parts = self.partitions if partitions is None else partitions
        conf = {"delta.columnMapping.mode": self.mapping} if self.mapping != "none" else {}
        conf.update(config)
        physical = self.physical if self.mapping != "none" else None
        return K.metadata({"id": "long"}, parts, conf, physical=physical)


@st.composite
def tables(draw: st.DrawFn) -> Table:
    partitions = draw(st.lists(st.sampled_from(NAMES), unique=True, max_size=3))
    mapping = draw(st.sampled_from(["none", "none", "name"]))
    return Table(partitions, mapping, draw(st.booleans()), draw(st.booleans()))


@st.composite
def partition_values(draw: st.DrawFn, table: Table) -> dict[str, Any] | None:
    """A partitionValues map, usually right, often not."""
    value = st.sampled_from(["1", "", None, "x,y", '"q"', "\u00fc"])
    keys = table.keys()
    pv = {k: draw(value) for k in keys}
    changes = ["extra", "drop", "case", "logical", "shuffle"] + (["number"] if table.rough else [])
    for change in draw(st.lists(st.sampled_from(changes), max_size=2)):
        if change == "extra":
            pv[draw(st.sampled_from(["zz", "p", "q", "Part"]))] = draw(value)
        elif change == "drop" and pv:
            pv.pop(draw(st.sampled_from(sorted(pv))))
        elif change == "case" and pv:
            k = draw(st.sampled_from(sorted(pv)))
            pv[k.upper() if k != k.upper() else k.lower()] = pv.pop(k)
        elif change == "logical" and table.mapping != "none":
            pv = {c: pv.get(table.physical[c]) for c in table.partitions}
        elif change == "shuffle":
            items = list(pv.items())
            pv = dict(draw(st.permutations(items))) if items else pv
        elif change == "number" and pv:
            pv[draw(st.sampled_from(sorted(pv)))] = draw(st.sampled_from([1, True, 2.5]))
    return pv


@st.composite
def file_body(draw: st.DrawFn, table: Table, kind: str) -> dict[str, Any]:
    body: dict[str, Any] = {"path": draw(st.sampled_from(PATHS))}
    if kind == "add" or draw(st.booleans()):
        body["partitionValues"] = draw(st.one_of(partition_values(table), st.just({}), st.none()))
        if kind == "add" and body["partitionValues"] is None and draw(st.booleans()):
            del body["partitionValues"]
    if kind == "add":
        body.update(size=draw(st.integers(0, 1 << 40)), modificationTime=K.T0, dataChange=draw(st.booleans()))
        stats = draw(
            st.sampled_from(["text", "text", "none", "absent"] + (["object", "number"] if table.rough else []))
        )
        if stats == "text":
            body["stats"] = K.stats(draw(st.integers(0, 9)), id=(1, 2))
        elif stats == "none":
            body["stats"] = None
        elif stats == "object":
            body["stats"] = {"numRecords": 1}
        elif stats == "number":
            body["stats"] = 7
        for name, values in (
            ("baseRowId", st.integers(0, 100)),
            ("defaultRowCommitVersion", st.integers(0, 9)),
            ("clusteringProvider", st.just("liquid")),
        ):
            if draw(st.integers(0, 4)) == 0:
                body[name] = draw(values)
    else:
        if draw(st.booleans()):
            body["deletionTimestamp"] = K.T0 + draw(st.integers(0, 9))
        body["dataChange"] = draw(st.booleans())
        if draw(st.booleans()):
            body["extendedFileMetadata"] = True
            body["size"] = draw(st.integers(0, 99))
    dv = draw(st.sampled_from(DVS))
    if dv is not None or draw(st.integers(0, 5)) == 0:
        body["deletionVector"] = dv
    if draw(st.integers(0, 7)) == 0:
        body["tags"] = draw(st.sampled_from([{"k": "v"}, {}, None] if table.rough else [None]))
    if draw(st.integers(0, 5)) == 0:
        body[draw(st.sampled_from(["unknownField", "stats_parsed", "x"]))] = draw(
            st.sampled_from([{"a": [1, {"b": None}]}, None, 12345678901234567890, "s"])
        )
    if table.rough and draw(st.integers(0, 30)) == 0:  # a wrongly typed field: both paths must refuse it alike
        body[draw(st.sampled_from(["size", "dataChange", "modificationTime"]))] = "big"
    return body


@st.composite
def actions(draw: st.DrawFn, table: Table) -> dict[str, Any]:
    kind = draw(
        st.sampled_from(
            ["add"] * 8
            + ["remove"] * 4
            + ["txn", "domain", "protocol", "metadata", "commitInfo", "unknown", "cdc", "null", "empty", "pair"]
        )
    )
    if kind in ("add", "remove"):
        return {kind: draw(file_body(table, kind))}
    if kind == "txn":
        return K.txn(draw(st.sampled_from(APPS)), draw(st.integers(0, 9)), draw(st.none() | st.just(K.T0)))
    if kind == "domain":
        return K.domain(draw(st.sampled_from(DOMAINS)), '{"v":1}', removed=draw(st.booleans()))
    if kind == "protocol":
        return table.protocol()
    if kind == "metadata":
        change = draw(st.integers(0, 9))
        if change == 0:  # the partitioning changes (the bulk path must hand over)
            return table.metadata(partitions=table.partitions[:-1] if table.partitions else ["p"])
        return table.metadata(**{"user.n": str(change)})
    if kind == "commitInfo":
        return draw(st.sampled_from([K.commit_info("WRITE", readVersion=1), {"commitInfo": 5}, {"commitInfo": None}]))
    if kind == "unknown":
        return {"someFutureAction": {"x": [1, 2, {"y": None}]}}
    if kind == "cdc":
        return {"cdc": {"path": "_change_data/c.parquet", "partitionValues": {}, "size": 1, "dataChange": False}}
    if kind == "null":
        return {draw(st.sampled_from(["add", "remove", "txn", "metaData", "domainMetadata"])): None}
    if kind == "empty":
        return {}
    # two actions on one line
    first = draw(actions(table))
    second = draw(actions(table))
    merged = dict(first)
    for k, v in second.items():
        merged.setdefault(k, v)
    return merged


def _escaped(key: str) -> str:
    return f'"\\u{ord(key[0]):04x}{key[1:]}"'


def _encode(obj: dict[str, Any], style: str) -> bytes:
    """One log line in a writer's style (all parse to ``obj``, or to what a repeated key leaves)."""
    if style == "spaced":
        return json.dumps(obj, ensure_ascii=True).encode()
    if style == "escaped" and obj:
        return ("{" + ",".join(f"{_escaped(k)}:{orjson.dumps(v).decode()}" for k, v in obj.items()) + "}").encode()
    if style == "repeated" and obj:
        key, value = next(iter(obj.items()))
        if isinstance(value, dict) and value:
            inner_key = next(iter(value))
            inner = orjson.dumps({inner_key: "decoy"}).decode()[1:-1] + "," + orjson.dumps(value).decode()[1:]
            rest = orjson.dumps({k: v for k, v in obj.items() if k != key}).decode()[1:-1]
            return ("{" + orjson.dumps(key).decode() + ":{" + inner + ("," + rest if rest else "") + "}").encode()
    return orjson.dumps(obj)


@st.composite
def commit_bytes(draw: st.DrawFn, table: Table, first: bool) -> bytes:
    lines = draw(st.lists(actions(table), max_size=8))
    if first:
        lines = [table.protocol(), table.metadata(), *lines]
        lines = list(draw(st.permutations(lines))) if draw(st.booleans()) else lines
    if draw(st.booleans()):
        lines.insert(draw(st.integers(0, len(lines))), K.commit_info("WRITE"))
    if not lines:
        lines = [K.commit_info("WRITE")]
    styles = st.sampled_from(["compact"] * 10 + ["spaced", "escaped"] + (["repeated"] if table.rough else []))
    encoded = [_encode(obj, draw(styles)) for obj in lines]
    if table.rough and draw(st.integers(0, 15)) == 0:
        encoded.insert(draw(st.integers(0, len(encoded))), draw(st.sampled_from([b"", b"  ", b"null"])))
    newline = draw(st.sampled_from([b"\n"] * 6 + [b"\r\n"]))
    return newline.join(encoded) + (newline if draw(st.integers(0, 5)) else b"")


@st.composite
def base_states(draw: st.DrawFn, table: Table) -> BaseState:
    """A checkpoint read: protocol, metadata, txns, domains, and add and remove rows in any partition shape."""
    adds = [draw(file_body(table, "add")) for _ in range(draw(st.integers(0, 5)))]
    removes = [draw(file_body(table, "remove")) for _ in range(draw(st.integers(0, 3)))]
    ok = [b for b in adds if not any(v == "big" for v in b.values())]
    ok = [{**b, "stats": b.get("stats") if isinstance(b.get("stats"), str) else None} for b in ok]
    gone = [b for b in removes if not any(v == "big" for v in b.values())]
    app = draw(st.sampled_from(APPS))
    version = draw(st.integers(0, 3))
    return BaseState(
        version=version,
        source=f"_delta_log/{version:020d}.checkpoint.parquet",
        protocol=A.Protocol(**{"min_reader_version": 1, "min_writer_version": 2})
        if table.mapping == "none"
        else A.Protocol(2, 5),
        metadata=_decoded(table.metadata()["metaData"]),
        txns={app: A.Txn(app, 3, K.T0)},
        domains={"user.x": A.DomainMetadata("user.x", "{}", False)},
        adds=table_from_dicts([{k: v for k, v in b.items() if k in ADD_SCHEMA.names} for b in ok], ADD_SCHEMA),
        removes=_loader(
            table_from_dicts([{k: v for k, v in b.items() if k in REMOVE_SCHEMA.names} for b in gone], REMOVE_SCHEMA)
        ),
    )


def _decoded(body: dict[str, Any]) -> A.Metadata:
    from deltalog.core.log.codec import from_dict

    action = from_dict("metaData", body)
    assert isinstance(action, A.Metadata)
    return action


def _loader(table: Any) -> Callable[[], Any]:
    return lambda: table


@st.composite
def logs(draw: st.DrawFn) -> tuple[BaseState, list[CommitData], bool, int]:
    table = draw(tables())
    with_base = draw(st.integers(0, 3)) == 0
    base = draw(base_states(table)) if with_base else BaseState(version=-1, source=f"_delta_log/{0:020d}.json")
    commits = []
    for i in range(draw(st.integers(1, 5))):
        version = base.version + 1 + i
        data = draw(commit_bytes(table, first=not with_base and i == 0))
        commits.append(CommitData(version, f"_delta_log/{version:020d}.json", data))
    # small reader blocks: many blocks and chunks, as a long log makes them
    return base, commits, draw(st.booleans()), draw(st.sampled_from([1 << 22, 2048, 700]))


@contextmanager
def _path(bulk: bool, defer_stats: bool, block: int) -> Iterator[list[bool]]:
    """Force one path; yields a list that records whether the bulk parser replayed the log."""
    module = parse_bulk
    saved = module.MIN_BYTES, module.DEFER_STATS_BYTES, module.parse, module.BLOCK_BYTES
    taken: list[bool] = []

    def spy(*args: Any, **kwargs: Any) -> Any:
        out = saved[2](*args, **kwargs)
        taken.append(out is not None)
        return out

    parse_bulk.MIN_BYTES = 0 if bulk else 1 << 62
    parse_bulk.DEFER_STATS_BYTES = (1 << 40) if defer_stats else 0
    parse_bulk.parse = spy
    parse_bulk.BLOCK_BYTES = block
    try:
        yield taken
    finally:
        module.MIN_BYTES, module.DEFER_STATS_BYTES, module.parse, module.BLOCK_BYTES = saved


def outcome(
    base: BaseState, commits: list[CommitData], bulk: bool, defer_stats: bool, block: int = 1 << 22
) -> tuple[Any, bool]:
    """The whole replayed state (or the error), and whether the bulk parser produced it."""
    with _path(bulk, defer_stats, block) as taken:
        try:
            result = replay(base, commits, ROOT)
            files = result.files
            assert files is not None
            state = {
                "version": result.version,
                "protocol": (result.protocol, result.protocol_source),
                "metadata": (result.metadata, result.metadata_source),
                "txns": result.txns,
                "domains": result.domains,
                "commit_info": result.commit_info,
                "files": files.adds(stats=True).to_pylist(),
                "files_no_stats": files.adds().drop_columns(["stats"]).to_pylist(),
                "tail_stats": files.tail_adds(stats=True).column("stats").to_pylist(),
                "tombstones": files.tombstones().to_pylist(),
                "num_files": files.num_files,
                "partition_keys": files.partition_keys,
            }
        except DeltaLogError as exc:
            state = {"error": type(exc).__name__, "message": str(exc)}
    return state, bool(taken and taken[0])


def test_bulk_and_exact_replay_agree_on_generated_logs() -> None:
    runs: list[tuple[bool, bool]] = []

    @SETTINGS
    @given(logs())
    def check(log: tuple[BaseState, list[CommitData], bool, int]) -> None:
        base, commits, defer, block = log
        exact, _ = outcome(base, commits, bulk=False, defer_stats=defer)
        bulk, taken = outcome(base, commits, bulk=True, defer_stats=defer, block=block)
        assert bulk == exact
        runs.append((taken, "error" in exact))

    check()
    assert len(runs) >= EXAMPLES * 0.9
    taken = sum(t for t, _ in runs)
    # the comparison means something only if the bulk parser replays a good share of the logs itself
    assert taken >= len(runs) * 0.25, f"bulk replayed {taken} of {len(runs)}"
    assert sum(not e for _, e in runs) >= len(runs) * 0.5
