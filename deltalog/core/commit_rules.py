"""Per-commit rules, checked before anything is written.

A commit that breaks one would either be refused by other engines or silently corrupt state for them
(two metaData in one version, an add and a remove of the same file, partition keys that do not match the
table). The error names the rule so a caller can tell what to change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from deltalog.core import actions as A
from deltalog.core.field_types import type_errors
from deltalog.core.pathkeys import canonical_path
from deltalog.core.properties import column_mapping_mode as column_mapping_mode_of
from deltalog.core.properties import get_bool
from deltalog.core.schema import SchemaError, parse_schema, physical_names, top_level_fields
from deltalog.errors import InvalidCommitError


def validate_metadata(metadata: A.Metadata) -> dict[str, Any]:
    """Check a metaData action on its own; returns its parsed schema."""
    try:
        schema = parse_schema(metadata.schema_string)
    except SchemaError as exc:
        raise InvalidCommitError(f"metaData: {exc}", rule="valid-schema") from None
    names = [f["name"] for f in top_level_fields(schema)]
    seen: set[str] = set()
    for n in names:
        low = n.lower()
        if low in seen:
            raise InvalidCommitError(
                f"metaData: duplicate column name {n!r} (names are case-insensitive)", rule="unique-column-names"
            )
        seen.add(low)
    for p in metadata.partition_columns:
        if p not in names:
            raise InvalidCommitError(f"metaData: partition column {p!r} is not in the schema", rule="partition-columns")
    if len(set(metadata.partition_columns)) != len(metadata.partition_columns):
        raise InvalidCommitError("metaData: a partition column is listed twice", rule="partition-columns")
    if metadata.format.provider != "parquet":
        raise InvalidCommitError(f"metaData: format {metadata.format.provider!r} is not parquet", rule="format")
    return schema


def validate_actions(
    actions: Sequence[A.Action],
    metadata: A.Metadata,
    column_mapping_mode: str = "none",
    *,
    previous: A.Metadata | None = None,
) -> None:
    """Check one commit's actions against the rules of the protocol and of the table's ``metadata``.

    ``metadata`` is the metadata in force after this commit (the commit's own metaData if it has one).
    ``previous`` is the read version's metadata when the commit changes it: a remove describes a file
    written under the old partitioning (a RESTORE or an overwrite that repartitions), so its partition
    values may match either.
    """
    metas = [a for a in actions if isinstance(a, A.Metadata)]
    if len(metas) > 1:
        raise InvalidCommitError("a commit may hold at most one metaData action", rule="one-metadata")
    if len([a for a in actions if isinstance(a, A.Protocol)]) > 1:
        raise InvalidCommitError("a commit may hold at most one protocol action", rule="one-protocol")
    for a in actions:
        errors = type_errors(a)
        if errors:
            raise InvalidCommitError(f"{type(a).__name__}: " + "; ".join(errors), rule="field-types")
        if isinstance(a, (A.CommitInfo, A.CheckpointMetadata, A.Sidecar)):
            raise InvalidCommitError(
                f"{type(a).__name__} cannot be committed: the transaction writes commitInfo itself, and "
                "checkpointMetadata/sidecar belong only in checkpoints",
                rule="no-reserved-actions",
            )
    schema = validate_metadata(metadata)
    physical = physical_names(schema, column_mapping_mode)
    expected_keys = {physical.get(c, c) for c in metadata.partition_columns}
    removed_keys = [expected_keys]
    if previous is not None:
        try:
            previous_schema = parse_schema(previous.schema_string)
            before = physical_names(previous_schema, column_mapping_mode_of(previous.configuration))
        except SchemaError:
            before = {}
        removed_keys.append({before.get(c, c) for c in previous.partition_columns})
    append_only = get_bool(metadata.configuration, "delta.appendOnly")
    adds: set[tuple[str, str]] = set()
    removes: set[tuple[str, str]] = set()
    txns: dict[str, int] = {}
    domains: set[str] = set()
    for a in actions:
        if isinstance(a, (A.Add, A.Remove)):
            key = (canonical_path(a.path), a.deletion_vector.unique_id if a.deletion_vector else "")
            if isinstance(a, A.Add):
                _check_partition_values(a.path, a.partition_values, expected_keys)
                if key in adds:
                    raise InvalidCommitError(f"file {a.path} is added twice in one commit", rule="no-duplicate-paths")
                adds.add(key)
            else:
                if append_only and a.data_change:
                    raise InvalidCommitError(
                        f"table is append-only (delta.appendOnly=true): cannot remove {a.path} with dataChange=true",
                        rule="append-only",
                    )
                if a.partition_values is not None:
                    keys = next((k for k in removed_keys if set(a.partition_values) == k), expected_keys)
                    _check_partition_values(a.path, a.partition_values, keys)
                if key in removes:
                    raise InvalidCommitError(f"file {a.path} is removed twice in one commit", rule="no-duplicate-paths")
                removes.add(key)
        elif isinstance(a, A.Txn):
            if a.app_id in txns and txns[a.app_id] != a.version:
                raise InvalidCommitError(f"two txn actions for application {a.app_id!r}", rule="one-txn-per-app")
            txns[a.app_id] = a.version
        elif isinstance(a, A.DomainMetadata):
            if a.domain in domains:
                raise InvalidCommitError(f"two domainMetadata actions for {a.domain!r}", rule="one-domain-action")
            domains.add(a.domain)
    both = adds & removes
    if both:
        path = sorted(both)[0][0]
        raise InvalidCommitError(f"file {path} is both added and removed in one commit", rule="no-duplicate-paths")


def _check_partition_values(path: str, values: Mapping[str, str | None], expected: set[str]) -> None:
    if set(values) != expected:
        raise InvalidCommitError(
            f"{path}: partition values {sorted(values)} do not match the partition columns {sorted(expected)}",
            rule="partition-values",
        )
    for k, v in values.items():
        if v is not None and not isinstance(v, str):
            raise InvalidCommitError(
                f"{path}: partition value {k}={v!r} must be a string (or null)", rule="partition-values"
            )


__all__ = ["validate_actions", "validate_metadata"]
