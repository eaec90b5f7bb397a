"""Clustered tables at the log level: the ``delta.clustering`` domain and the statistics its files owe.

PROTOCOL "Clustered Table": a table is clustered when ``clustering`` is in ``writerFeatures`` (with
``domainMetadata``). Writers then keep the clustering columns in the ``delta.clustering`` domain (physical
names under column mapping), write per-file statistics covering every clustering column in each ``add``, set
``clusteringProvider`` only on files a clustering implementation clustered, and never make a table both
clustered and partitioned. A column newly added to the clustering columns needs statistics in every file.

Delta Spark writes the domain as ``{"clusteringColumns": [["col1"], ["user", "address", "city"]]}`` (each
column a list of name parts; ``skipping/clustering/ClusteringMetadataDomain``), as the corpus shows; PROTOCOL's
example lists plain strings, read here as one-part names. Written back in Spark's form.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import orjson

from deltalog.core import actions as A
from deltalog.core.features import supported_features
from deltalog.core.file_facts import parse_stats
from deltalog.core.schema import PHYSICAL_NAME, top_level_fields
from deltalog.errors import CorruptLogError, InvalidCommitError, UnsupportedFeatureError

FEATURE = "clustering"
DOMAIN = "delta.clustering"
#: a column as the domain names it: its name parts from the top level down
ColumnPath = tuple[str, ...]
#: types Delta Spark cannot cluster by (no min/max statistics): ``ClusteredTableUtils`` data-skipping types
_UNCLUSTERABLE = ("variant", "binary", "boolean", "void")


def clustered(protocol: A.Protocol) -> bool:
    return FEATURE in supported_features(protocol)


def parse(configuration: str, source: str = DOMAIN) -> tuple[ColumnPath, ...]:
    """The clustering columns of a ``delta.clustering`` domain configuration."""
    try:
        doc = orjson.loads(configuration)
    except orjson.JSONDecodeError as exc:
        raise CorruptLogError(f"{source}: domain {DOMAIN} is not valid JSON ({exc})", path=source) from None
    columns = doc.get("clusteringColumns") if isinstance(doc, dict) else None
    if not isinstance(columns, list):
        raise CorruptLogError(f"{source}: domain {DOMAIN} has no clusteringColumns list: {configuration!r}")
    out: list[ColumnPath] = []
    for c in columns:
        parts = (c,) if isinstance(c, str) else c
        if not isinstance(parts, list | tuple) or not parts or not all(isinstance(p, str) and p for p in parts):
            raise CorruptLogError(f"{source}: domain {DOMAIN} names a column as {c!r}, not a list of names")
        out.append(tuple(parts))
    return tuple(out)


def columns_of(domains: Mapping[str, str] | Iterable[A.DomainMetadata]) -> tuple[ColumnPath, ...]:
    """The clustering columns of a snapshot's domains (``{domain: configuration}`` or actions); () if none."""
    if isinstance(domains, Mapping):
        conf = domains.get(DOMAIN)
        return parse(conf) if conf is not None else ()
    for d in domains:
        if d.domain == DOMAIN and not d.removed:
            return parse(d.configuration)
    return ()


def serialize(columns: Sequence[ColumnPath]) -> str:
    return orjson.dumps({"clusteringColumns": [list(c) for c in columns]}).decode()


def domain_action(columns: Sequence[ColumnPath]) -> A.DomainMetadata:
    """The domain action for ``columns`` (physical paths); an empty list un-clusters (``CLUSTER BY NONE``)."""
    return A.DomainMetadata(DOMAIN, serialize(columns))


# ------------------------------------------------------------------------------------------------ names


def _resolve(schema: Mapping[str, Any], parts: Sequence[str], by: str, mode: str) -> tuple[ColumnPath, Any] | None:
    """(the other spelling's path, the leaf type) of a column path given by ``by`` ("logical"/"physical")."""
    fields = top_level_fields(schema)
    out: list[str] = []
    t: Any = None
    for i, part in enumerate(parts):
        if i and not (isinstance(t, Mapping) and t.get("type") == "struct"):
            return None
        fields = top_level_fields(t) if i else fields
        for f in fields:
            meta = f.get("metadata")
            meta = meta if isinstance(meta, Mapping) else {}
            physical = str(meta.get(PHYSICAL_NAME, f["name"])) if mode != "none" else f["name"]
            mine, other = (f["name"], physical) if by == "logical" else (physical, f["name"])
            if mine == part:
                out.append(other)
                t = f.get("type")
                break
        else:
            return None
    return tuple(out), t


def physical_columns(
    schema: Mapping[str, Any], logical: Sequence[str | ColumnPath], mode: str
) -> tuple[ColumnPath, ...]:
    """Clustering columns as the domain stores them, from logical names (``"a.b"`` or ``("a", "b")``).

    Refused by name: a column that does not exist, a type that has no min/max statistics, a column twice.
    """
    out: list[ColumnPath] = []
    for c in logical:
        parts = tuple(c.split(".")) if isinstance(c, str) else tuple(c)
        found = _resolve(schema, parts, "logical", mode)
        if found is None:
            raise InvalidCommitError(f"clustering column {'.'.join(parts)!r} is not in the schema", rule="clustering")
        path, t = found
        if not isinstance(t, str) or t in _UNCLUSTERABLE:
            shown = t if isinstance(t, str) else (t or {}).get("type")
            raise InvalidCommitError(
                f"clustering column {'.'.join(parts)!r} has type {shown}, which has no min/max statistics to "
                "cluster by",
                rule="clustering",
            )
        if path in out:
            raise InvalidCommitError(f"clustering column {'.'.join(parts)!r} is listed twice", rule="clustering")
        out.append(path)
    return tuple(out)


def logical_columns(schema: Mapping[str, Any], physical: Sequence[ColumnPath], mode: str) -> tuple[str, ...]:
    """The dotted logical names of the domain's columns; a column the schema lost is refused."""
    out = []
    for parts in physical:
        found = _resolve(schema, parts, "physical", mode)
        if found is None:
            raise InvalidCommitError(
                f"clustering column {'.'.join(parts)!r} is not in the schema: a clustering column cannot be "
                "dropped (change the clustering columns first)",
                rule="clustering",
            )
        out.append(".".join(found[0]))
    return tuple(out)


# ------------------------------------------------------------------------------------------------ rules


def check_change(
    protocol: A.Protocol,
    partition_columns: Sequence[str],
    schema: Mapping[str, Any],
    columns: Sequence[ColumnPath],
    mode: str,
) -> None:
    """The metadata a clustered table may have: the feature with ``domainMetadata``, no partition columns, and
    every clustering column still in the schema (after a schema change too)."""
    features = supported_features(protocol)
    if FEATURE not in features or "domainMetadata" not in features:
        raise UnsupportedFeatureError(
            "clustering columns need the clustering and domainMetadata writer features in the protocol",
            feature=FEATURE,
        )
    if partition_columns and columns:
        raise InvalidCommitError(
            f"a clustered table cannot be partitioned (partition columns {list(partition_columns)})",
            rule="clustering",
        )
    logical_columns(schema, columns, mode)


def _stat(values: Mapping[str, Any], parts: ColumnPath) -> Any:
    node: Any = values
    for p in parts:
        if not isinstance(node, Mapping) or p not in node:
            return None
        node = node[p]
    return node


def check_stats(adds: Iterable[A.Add], columns: Sequence[ColumnPath]) -> None:
    """Every add has statistics for every clustering column (physical paths): ``numRecords``, a ``nullCount``,
    and a min and a max unless all its values are null. Also refuses ``clusteringProvider`` when the table
    has no clustering columns (only a clustering implementation sets it)."""
    for a in adds:
        if not columns:
            if a.clustering_provider is not None:
                raise InvalidCommitError(
                    f"{a.path}: clusteringProvider={a.clustering_provider!r} on a table without clustering columns",
                    rule="clustering",
                )
            continue
        stats = parse_stats(a.stats, a.path)
        if stats is None or stats.num_records is None:
            raise InvalidCommitError(
                f"{a.path}: a clustered table's files need statistics with numRecords", rule="clustering-stats"
            )
        for parts in columns:
            nulls = _stat(stats.null_count, parts)
            lo, hi = _stat(stats.min_values, parts), _stat(stats.max_values, parts)
            name = ".".join(parts)
            if not isinstance(nulls, int) or isinstance(nulls, bool):
                raise InvalidCommitError(
                    f"{a.path}: no nullCount statistic for clustering column {name!r}", rule="clustering-stats"
                )
            if nulls < stats.num_records and (lo is None or hi is None):
                raise InvalidCommitError(
                    f"{a.path}: no minValues/maxValues statistic for clustering column {name!r}",
                    rule="clustering-stats",
                )


def new_clustering(
    protocol: A.Protocol,
    partition_columns: Sequence[str],
    schema: Mapping[str, Any],
    mode: str,
    logical: Sequence[str | ColumnPath],
    current: Sequence[ColumnPath],
    live_adds: Iterable[A.Add] = (),
) -> A.DomainMetadata | None:
    """The domain action for changing the clustering columns to ``logical`` (``ALTER TABLE ... CLUSTER BY``),
    or None when they do not change. Columns new to the list need statistics in every live file (PROTOCOL),
    which ``live_adds`` are checked for."""
    columns = physical_columns(schema, logical, mode)
    check_change(protocol, partition_columns, schema, columns, mode)
    if tuple(columns) == tuple(current):
        return None
    added = [c for c in columns if c not in current]
    if added:
        check_stats(live_adds, added)
    return domain_action(columns)


__all__ = [
    "DOMAIN",
    "FEATURE",
    "ColumnPath",
    "check_change",
    "check_stats",
    "clustered",
    "columns_of",
    "domain_action",
    "logical_columns",
    "new_clustering",
    "parse",
    "physical_columns",
    "serialize",
]
