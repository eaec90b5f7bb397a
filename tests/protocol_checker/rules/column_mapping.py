"""Column mapping (PROTOCOL.md "Column Mapping", "Writer Requirements for Column Mapping")."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..context import CommitContext
from ..features import is_int
from ..report import Finding, rule
from ..schema import SchemaInfo
from ..values import parse_stats

MAX_ID = "delta.columnMapping.maxColumnId"


def _schema_changes(ctx: CommitContext) -> bool:
    return ctx.mapping_mode != "none" and (ctx.changes_protocol_or_metadata or not ctx.before.protocol_body)


@rule("cm.field-metadata", scope="commit", section="Column Mapping")
def cm_field_metadata(ctx: CommitContext) -> Iterator[Finding]:
    """In name or id mode every column, nested or leaf, has an integer delta.columnMapping.id and a string
    delta.columnMapping.physicalName ("every column - nested or leaf - is assigned a unique physical name,
    and a unique 32-bit integer as an id")."""
    if not _schema_changes(ctx):
        return
    for f in ctx.schema.fields:
        if not is_int(f.column_id) or not -(2**31) <= f.column_id < 2**31:
            yield Finding(f"column {'.'.join(f.path)!r} has no 32-bit delta.columnMapping.id", action="metaData")
        if not isinstance(f.physical_name, str) or not f.physical_name:
            yield Finding(f"column {'.'.join(f.path)!r} has no delta.columnMapping.physicalName", action="metaData")


@rule("cm.unique", scope="commit", section="Column Mapping")
def cm_unique(ctx: CommitContext) -> Iterator[Finding]:
    """Column ids are unique in the schema, and so are physical column paths."""
    if not _schema_changes(ctx):
        return
    ids: dict[Any, str] = {}
    paths: dict[tuple[str, ...], str] = {}
    for f in ctx.schema.fields:
        name = ".".join(f.path)
        if is_int(f.column_id):
            if f.column_id in ids:
                yield Finding(f"columns {ids[f.column_id]!r} and {name!r} share id {f.column_id}", action="metaData")
            ids.setdefault(f.column_id, name)
        if f.physical_path in paths:
            yield Finding(f"columns {paths[f.physical_path]!r} and {name!r} share a physical name", action="metaData")
        paths.setdefault(f.physical_path, name)


@rule("cm.max-column-id", scope="commit", section="Column Mapping > Writer Requirements (maxColumnId)")
def cm_max_column_id(ctx: CommitContext) -> Iterator[Finding]:
    """delta.columnMapping.maxColumnId is at least every column id and never decreases ("This value must
    increase monotonically as new columns are introduced")."""
    if not _schema_changes(ctx):
        return
    raw = ctx.configuration.get(MAX_ID)
    if not isinstance(raw, str) or not raw.strip().lstrip("-").isdigit():
        yield Finding(f"{MAX_ID} is missing or not an integer ({raw!r})", action="metaData")
        return
    value = int(raw)
    ids = [f.column_id for f in ctx.schema.fields if is_int(f.column_id)]
    if ids and value < max(ids):
        yield Finding(f"{MAX_ID}={value} is below column id {max(ids)}", action="metaData")
    old = ctx.before.configuration.get(MAX_ID)
    if isinstance(old, str) and old.strip().isdigit() and value < int(old):
        yield Finding(f"{MAX_ID} drops from {old} to {value}", action="metaData")


@rule("cm.physical-name-reuse", scope="commit", section="Column Mapping > Writer Requirements", strict_only=True)
def cm_physical_name_reuse(ctx: CommitContext) -> Iterator[Finding]:
    """A physical column path once bound to a column id is never bound to another id.

    "Assign a globally unique identifier as the physical name for each new column": reusing a dropped
    column's physical name would resurrect its old data. The history seen may start at a checkpoint, hence
    strict only.
    """
    if not _schema_changes(ctx):
        return
    for f in ctx.schema.fields:
        old = ctx.before.bound_ids.get(f.physical_path)
        if old is not None and is_int(f.column_id) and old != f.column_id:
            yield Finding(
                f"physical name of {'.'.join(f.path)!r} was bound to id {old}, now {f.column_id}", action="metaData"
            )


def _children(schema: SchemaInfo) -> dict[tuple[str, ...], set[str]]:
    out: dict[tuple[str, ...], set[str]] = {}
    for f in schema.fields:
        out.setdefault(f.physical_path[:-1], set()).add(f.physical_path[-1])
    return out


def _bad_key(node: Any, parent: tuple[str, ...], tree: dict[tuple[str, ...], set[str]]) -> str | None:
    if not isinstance(node, dict):
        return None
    for key, value in node.items():
        if key not in tree.get(parent, set()):
            return ".".join((*parent, key))
        if isinstance(value, dict) and (bad := _bad_key(value, (*parent, key), tree)):
            return bad
    return None


@rule("cm.stats-keys", scope="commit", section="Column Mapping > Writer Requirements (statistics by physical name)")
def cm_stats_keys(ctx: CommitContext) -> Iterator[Finding]:
    """Under column mapping, stats (minValues, maxValues, nullCount) are keyed by physical column names."""
    if ctx.mapping_mode == "none" or ctx.schema.error:
        return
    tree = _children(ctx.schema)
    for a in ctx.adds:
        stats, _ = parse_stats(a.body)
        for section in ("minValues", "maxValues", "nullCount"):
            bad = _bad_key((stats or {}).get(section), (), tree)
            if bad:
                yield Finding(
                    f"stats {section} key {bad!r} is not a physical column", a.line, "add", a.body.get("path")
                )
                break
