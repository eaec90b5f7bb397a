"""Per-commit rules, checked before anything is written.

A commit that breaks one would either be refused by other engines or silently corrupt state for them
(two metaData in one version, an add and a remove of the same file, partition keys that do not match the
table). The error names the rule so a caller can tell what to change.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from deltalog.core import actions as A
from deltalog.core.features.column_mapping import mapped_metadata
from deltalog.core.features.obligations import DEFAULT_IMPLEMENTED, WRITE, check_operation
from deltalog.core.features.properties import check_string_values, column_mapping_mode
from deltalog.core.features.properties import column_mapping_mode as column_mapping_mode_of
from deltalog.core.features.property_rules import check_changed
from deltalog.core.features.protocol import (
    check_configuration_honoured,
    required_features,
    supported_features,
    upgrade_protocol,
)
from deltalog.core.files.partitions import PartitionValueError, check_serialized, parse_value
from deltalog.core.files.pathkeys import dv_id_of, file_key
from deltalog.core.log.field_types import type_errors
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
    changes (:func:`~deltalog.core.features.property_rules.check_changed`). What the table already has is not
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


def prepare_commit(
    actions: Sequence[A.Action],
    read_protocol: A.Protocol | None,
    read_metadata: A.Metadata | None,
    read_schema: Mapping[str, Any] | None,
    source: str,
    *,
    operation: str = WRITE,
    implemented: Collection[str] = DEFAULT_IMPLEMENTED,
) -> list[A.Action]:
    """The actions a transaction commits on top of the version it read, checked by every rule of a commit.

    ``operation`` is the kind the commit is held to the obligations of (:mod:`deltalog.core.features.obligations`):
    a caller that knows (RESTORE) names it; the default holds it to every commit kind's. ``implemented``: the
    feature checks the commit meets (the writer's declarations may add some).

    ``read_*`` describe the read version, all ``None`` for the commit that creates the table (which must
    then hold a protocol and a metaData). A metaData is checked for what it changes (the table's own fields
    and values are not re-checked), and the features its schema and properties need are added to the
    protocol in this same commit (in the place of a staged protocol, else appended). The protocol may not be
    downgraded nor drop features; the table must be one deltalog can write. Under column mapping the metaData
    is the one committed with every new column given an id and a physical name
    (:func:`~deltalog.core.features.column_mapping.mapped_metadata`). ``source`` names the table in errors.
    """
    metas = [a for a in actions if isinstance(a, A.Metadata)]
    protocols = [a for a in actions if isinstance(a, A.Protocol)]
    metadata = metas[-1] if metas else read_metadata
    protocol = protocols[-1] if protocols else read_protocol
    if metadata is None or protocol is None:
        raise InvalidCommitError("the commit that creates a table holds its protocol and metaData", rule="create")
    schema: Mapping[str, Any] = read_schema or {}
    if metas:
        check_string_values(metadata.configuration)
        schema = validate_new_metadata(metadata, read_metadata)
        old = read_metadata.configuration if read_metadata is not None else {}
        changed = {k: v for k, v in metadata.configuration.items() if old.get(k) != v}
        check_configuration_honoured(changed, schema, source, previous_schema=read_schema)
        upgraded = upgrade_protocol(protocol, required_features(metadata.configuration, schema))
        if upgraded != protocol and len(protocols) <= 1:
            staged = [upgraded if isinstance(a, A.Protocol) else a for a in actions]
            actions = staged if protocols else [*actions, upgraded]
            protocols, protocol = [upgraded], upgraded
        mapped = mapped_metadata(read_metadata, metadata, protocol)
        if mapped is not metadata:  # new columns got ids and physical names, maxColumnId followed
            actions = [mapped if a is metadata else a for a in actions]
            metadata, schema = mapped, parse_schema(mapped.schema_string)
    mode = column_mapping_mode(metadata.configuration)
    validate_actions(actions, metadata, mode, previous=read_metadata if metas else None)
    if protocols and read_protocol is not None:
        check_protocol_change(read_protocol, protocol)
    check_operation(operation, protocol, metadata.configuration, schema, source, implemented=implemented)
    return list(actions)


def commit_info_of(
    actions: Sequence[A.Action],
    *,
    operation: str,
    parameters: Mapping[str, Any] | None,
    read_version: int,
    isolation: str,
    blind_append: bool,
    metrics: Mapping[str, str] | None,
    engine_info: str,
    txn_id: str,
    user_metadata: str | None,
    now_ms: int,
) -> A.CommitInfo:
    """The commitInfo of a commit of ``actions`` (already prepared). ``metrics`` replaces the file counts
    other engines show by default (an empty one writes none, as for a create); ``read_version`` -1 (a
    create) writes no ``readVersion``. The ``txnId`` is how a lost response is recognised as ours."""
    if metrics is None:
        adds = [a for a in actions if isinstance(a, A.Add)]
        removes = [a for a in actions if isinstance(a, A.Remove)]
        metrics = {
            "numAddedFiles": str(len(adds)),
            "numRemovedFiles": str(len(removes)),
            "numAddedBytes": str(sum(a.size for a in adds)),
            "numRemovedBytes": str(sum(r.size or 0 for r in removes)),
        }
    return A.CommitInfo(
        timestamp=now_ms,
        operation=operation,
        operation_parameters=dict(parameters or {}),
        read_version=read_version if read_version >= 0 else None,
        isolation_level=isolation,
        is_blind_append=blind_append,
        operation_metrics=dict(metrics) or None,
        engine_info=engine_info,
        txn_id=txn_id,
        user_metadata=user_metadata,
    )


def check_protocol_change(old: A.Protocol, new: A.Protocol) -> None:
    """A commit may not downgrade the protocol, nor drop a feature the old one supported."""
    if new.min_reader_version < old.min_reader_version or new.min_writer_version < old.min_writer_version:
        raise InvalidCommitError("a protocol may not be downgraded by a commit", rule="no-protocol-downgrade")
    # Legacy versions count with the features they imply: (1,2) -> (1,7) must still list appendOnly and
    # invariants, or the upgrade silently drops them.
    dropped = supported_features(old) - supported_features(new)
    if dropped:
        raise InvalidCommitError(
            f"a commit may not drop table features {sorted(dropped)} (a protocol listing features must keep "
            "those its legacy versions implied)",
            rule="no-feature-drop",
        )


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


__all__ = [
    "check_protocol_change",
    "commit_info_of",
    "prepare_commit",
    "validate_actions",
    "validate_metadata",
    "validate_new_metadata",
]
