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
from deltalog.core.partitions import PartitionValueError, check_serialized, parse_value
from deltalog.core.pathkeys import dv_id_of, file_key
from deltalog.core.properties import column_mapping_mode, get_bool
from deltalog.core.properties import column_mapping_mode as column_mapping_mode_of
from deltalog.core.property_rules import check_changed
from deltalog.core.schema import SchemaError, check_schema, parse_schema, physical_names, top_level_fields
from deltalog.errors import InvalidCommitError


def validate_metadata(metadata: A.Metadata) -> dict[str, Any]:
    """Check a metaData action on its own; returns its parsed schema."""
    try:
        schema = parse_schema(metadata.schema_string)
    except SchemaError as exc:
        raise SchemaError(f"metaData: {exc}", rule="valid-schema") from None
    names = [f["name"] for f in top_level_fields(schema)]
    odd = [p for p in metadata.partition_columns if not isinstance(p, str)]
    if odd:
        raise SchemaError(f"metaData: partition columns are column names, not {odd[0]!r}", rule="partition-columns")
    seen: set[str] = set()
    for n in names:
        low = n.lower()
        if low in seen:
            raise SchemaError(
                f"metaData: duplicate column name {n!r} (names are case-insensitive)",
                field=n,
                rule="unique-column-names",
            )
        seen.add(low)
    for p in metadata.partition_columns:
        if p not in names:
            raise SchemaError(
                f"metaData: partition column {p!r} is not in the schema", field=p, rule="partition-columns"
            )
    if len(set(metadata.partition_columns)) != len(metadata.partition_columns):
        raise SchemaError("metaData: a partition column is listed twice", rule="partition-columns")
    if metadata.format.provider != "parquet":
        raise InvalidCommitError(f"metaData: format {metadata.format.provider!r} is not parquet", rule="format")
    return schema


def validate_new_metadata(metadata: A.Metadata, previous: A.Metadata | None) -> dict[str, Any]:
    """The rules for a metaData about to be committed, against the table's ``previous`` one (None when the
    commit creates the table): its schema (:func:`~deltalog.core.schema.check_schema`) and the properties it
    changes (:func:`~deltalog.core.property_rules.check_changed`). What the table already has is not
    checked again. Returns the parsed schema."""
    schema = validate_metadata(metadata)
    before = parse_schema(previous.schema_string) if previous is not None else None
    check_schema(
        schema,
        metadata.partition_columns,
        column_mapping=column_mapping_mode(metadata.configuration) != "none",
        previous=before,
        previous_partition_columns=previous.partition_columns if previous is not None else None,
    )
    check_changed(previous.configuration if previous is not None else {}, metadata.configuration)
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
    fields = {f["name"]: f for f in top_level_fields(schema)}
    columns = {physical.get(c, c): fields[c] for c in metadata.partition_columns}
    expected_keys = set(columns)
    checked: set[tuple[str, str | None, bool]] = set()
    removed_keys = [expected_keys]
    if previous is not None:
        try:
            previous_schema = parse_schema(previous.schema_string)
            before = physical_names(previous_schema, column_mapping_mode_of(previous.configuration))
        except SchemaError:
            before = {}
        removed_keys.append({before.get(c, c) for c in previous.partition_columns})
    append_only = get_bool(metadata.configuration, "delta.appendOnly")
    adds: dict[str, str] = {}  # file key -> the path as the action spells it
    removes: set[str] = set()
    txns: dict[str, int] = {}
    domains: set[str] = set()
    for a in actions:
        if isinstance(a, (A.Add, A.Remove)):
            key = file_key(a.path, dv_id_of(a.deletion_vector))
            if isinstance(a, A.Add):
                _check_partition_values(a.path, a.partition_values, expected_keys)
                _check_partition_types(a.path, a.partition_values, columns, True, checked)
                if key in adds:
                    raise InvalidCommitError(f"file {a.path} is added twice in one commit", rule="no-duplicate-paths")
                adds[key] = a.path
            else:
                if append_only and a.data_change:
                    raise InvalidCommitError(
                        f"table is append-only (delta.appendOnly=true): cannot remove {a.path} with dataChange=true",
                        rule="append-only",
                    )
                if a.partition_values is not None:
                    keys = next((k for k in removed_keys if set(a.partition_values) == k), expected_keys)
                    _check_partition_values(a.path, a.partition_values, keys)
                    if keys is expected_keys:  # a remove under the old partitioning keeps the old types
                        _check_partition_types(a.path, a.partition_values, columns, False, checked)
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
    both = adds.keys() & removes
    if both:
        path = adds[min(both)]
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


def _check_partition_types(
    path: str,
    values: Mapping[str, str | None],
    columns: Mapping[str, Mapping[str, Any]],
    strict: bool,
    checked: set[tuple[str, str | None, bool]],
) -> None:
    """Partition values must parse as their column's type: an add's in the protocol's serialization format
    (readers refuse others) and non-null under a non-nullable column; a remove's as any reader parses it,
    since it repeats what an add (perhaps another engine's) once wrote. ``checked`` memoizes per commit."""
    for key, value in values.items():
        if (key, value, strict) in checked:
            continue
        field = columns[key]
        if strict and value in (None, "") and field.get("nullable") is False:
            raise InvalidCommitError(
                f"{path}: partition column {field['name']!r} is not nullable, but the value is null",
                rule="partition-values",
            )
        try:
            (check_serialized if strict else parse_value)(field.get("type"), value)
        except PartitionValueError as exc:
            raise InvalidCommitError(
                f"{path}: partition value {field['name']}={value!r} does not fit the column's type: {exc}",
                rule="partition-values",
            ) from None
        checked.add((key, value, strict))


__all__ = ["validate_actions", "validate_metadata", "validate_new_metadata"]
