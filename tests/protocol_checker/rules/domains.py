"""Domain metadata and clustering (PROTOCOL.md "Domain Metadata", "Clustered Table")."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from ..context import CommitContext
from ..report import Finding, rule
from ..schema import SchemaInfo
from ..state import CLUSTERING_DOMAIN, column_mapping_mode
from ..values import parse_stats

ColumnPath = tuple[str, ...]


@rule("domain.feature", scope="commit", section="Domain Metadata (To support this feature)")
def domain_feature(ctx: CommitContext) -> Iterator[Finding]:
    """domainMetadata actions need writer version 7 with domainMetadata in writerFeatures."""
    proto = ctx.protocol
    if proto is not None and not proto.writer_supports("domainMetadata"):
        for a in ctx.of_kind("domainMetadata"):
            yield Finding(
                "a domainMetadata action without the domainMetadata feature", a.line, a.kind, a.body.get("domain")
            )


def clustering_columns(domains: dict[str, Any]) -> tuple[list[ColumnPath] | None, str | None]:
    """The delta.clustering domain's columns as paths (``"a"`` or ``["a", "b"]``): (paths, None) or (None, why)."""
    body = domains.get(CLUSTERING_DOMAIN)
    if body is None:
        return None, None
    try:
        conf = orjson.loads(body.get("configuration") or "")
    except (orjson.JSONDecodeError, TypeError):
        return None, "the delta.clustering configuration is not JSON"
    cols = conf.get("clusteringColumns") if isinstance(conf, dict) else None
    if not isinstance(cols, list):
        return None, "the delta.clustering configuration has no clusteringColumns list"
    out: list[ColumnPath] = []
    for c in cols:
        if isinstance(c, str):
            out.append((c,))
        elif isinstance(c, list) and c and all(isinstance(x, str) for x in c):
            out.append(tuple(c))
        else:
            return None, f"clustering column {c!r} is neither a name nor a list of names"
    return out, None


def _resolve(schema: SchemaInfo, path: ColumnPath, physical: bool) -> bool:
    return any((f.physical_path if physical else f.path) == path for f in schema.fields)


@rule("clustering.domain", scope="commit", section="Clustered Table > Writer Requirements")
def clustering_domain(ctx: CommitContext) -> Iterator[Finding]:
    """The delta.clustering domain lists clusteringColumns that are columns of the schema, by physical name
    under column mapping ("If Column Mapping is enabled, the physical column names should be used")."""
    if not any(a.body.get("domain") == CLUSTERING_DOMAIN for a in ctx.of_kind("domainMetadata")) and not (
        ctx.changes_protocol_or_metadata and CLUSTERING_DOMAIN in ctx.after.domains
    ):
        return
    cols, problem = clustering_columns(ctx.after.domains)
    if problem:
        yield Finding(problem, action="domainMetadata", key=CLUSTERING_DOMAIN)
        return
    physical = column_mapping_mode(ctx.protocol, ctx.configuration) != "none"
    for path in cols or []:
        if not _resolve(ctx.schema, path, physical):
            how = "physical column" if physical else "column"
            yield Finding(f"clustering column {'.'.join(path)!r} is no {how} of the schema", key=CLUSTERING_DOMAIN)


@rule("clustering.not-partitioned", scope="commit", section="Clustered Table > Writer Requirements")
def clustering_not_partitioned(ctx: CommitContext) -> Iterator[Finding]:
    """A clustered table has no partition columns ("Writers must not define clustered and partitioned table
    at the same time")."""
    proto = ctx.protocol
    clustered = proto is not None and proto.writer_supports("clustering")
    if ctx.changes_protocol_or_metadata and clustered and ctx.after.partition_columns:
        yield Finding(f"clustered table partitioned by {ctx.after.partition_columns}", action="metaData")


def _has_column_stats(stats: dict[str, Any], path: ColumnPath) -> bool:
    for section in ("minValues", "maxValues", "nullCount"):
        node: Any = stats.get(section)
        for part in path:
            node = node.get(part) if isinstance(node, dict) else None
            if node is None:
                break
        else:
            return True
    return False


@rule("clustering.stats", scope="commit", section="Clustered Table > Writer Requirements (statistics)")
def clustering_stats(ctx: CommitContext) -> Iterator[Finding]:
    """Every add of a clustered table has stats with numRecords and per-column stats for each clustering column;
    when the clustering columns change, every live file has stats for the new ones."""
    proto = ctx.protocol
    if proto is None or not proto.writer_supports("clustering"):
        return
    cols, problem = clustering_columns(ctx.after.domains)
    if problem or not cols:
        return
    # the domain names columns as stats key them: physically under column mapping (clustering.domain checks it)
    old_cols, _ = clustering_columns(ctx.before.domains)
    checked = [(a.line, a.body) for a in ctx.adds]
    if (old_cols or []) != cols:
        added_here = {id(b) for _, b in checked}
        checked += [(None, body) for body in ctx.after.live.values() if id(body) not in added_here]
    for line, body in checked:
        stats, _ = parse_stats(body)
        path = body.get("path")
        if stats is None or "numRecords" not in stats:
            yield Finding("a file of a clustered table has no stats", line, "add", path)
            continue
        for key in cols:
            if not _has_column_stats(stats, key):
                yield Finding(f"no stats for clustering column {'.'.join(key)!r}", line, "add", path)
