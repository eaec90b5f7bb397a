"""Schema changes that need more than new columns: rename and drop (through column mapping) and type widening.

Each is one metadata commit (protocol upgrade included) planned in full before it commits, so that what it
costs is visible first: a :class:`SchemaChange` holds the old and new protocol and the peers that will no longer
write the table (:mod:`deltalog.core.features.peer_writers`); ``dry_run`` stops there, as the CLI does until
``--apply``.

Rules, as Delta Spark's ALTER TABLE keeps them (``alterDeltaTableCommands.scala``, ``DeltaColumnMapping.scala``):

* rename and drop need column mapping (files keep their physical names, so no data is rewritten). A table
  without it gets name mode in the same commit when the caller says so (``enable_column_mapping=True``): the
  current names become the physical names, and the protocol gains ``columnMapping`` (legacy tables go to
  reader 2 / writer 5, table-features tables list it);
* a partition or clustering column cannot be dropped; a column a CHECK constraint, an invariant or a generated
  column reads cannot be renamed or dropped, nor can a generated column be renamed (its rule would be new);
* ``delta.columnMapping.maxColumnId`` never goes down, so a dropped column's id and physical name are never
  given again.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import orjson

from deltalog.arrow.schema import delta_type
from deltalog.core import actions as A
from deltalog.core.commit.rules import prepare_commit
from deltalog.core.features import clustering, column_mapping, properties, type_widening
from deltalog.core.features.constraints import row_rules
from deltalog.core.features.kinds import METADATA
from deltalog.core.features.peer_writers import writers_lost
from deltalog.core.features.type_widening import type_name
from deltalog.core.log.paths import LOG_DIR
from deltalog.core.result_repr import result_repr
from deltalog.core.schema import parse_schema
from deltalog.core.schema_edit import dropped, field_at, renamed, resolve, retyped
from deltalog.errors import DeltaLogError, InvalidArgumentError, SchemaError
from deltalog.expr.parse import parse
from deltalog.expr.tree import column_refs
from deltalog.table.commit import CommitResult, Transaction
from deltalog.table.snapshot import Snapshot


@dataclass(frozen=True)
class SchemaChange:
    """A schema change's commit, or on a dry run what it would commit: the protocol before and after, the
    peers that write the table before but not after (name -> why), the new metadata."""

    operation: str
    read_version: int
    old_protocol: A.Protocol
    new_protocol: A.Protocol
    writers_lost: Mapping[str, str]
    metadata: A.Metadata
    dry_run: bool = False
    commit: CommitResult | None = None

    @property
    def version(self) -> int | None:
        """The committed version (None on a dry run)."""
        return self.commit.version if self.commit is not None else None

    @property
    def protocol_upgraded(self) -> bool:
        return self.new_protocol != self.old_protocol

    @property
    def schema(self) -> dict[str, Any]:
        """The table's schema after the change (Delta JSON)."""
        return parse_schema(self.metadata.schema_string)

    def __repr__(self) -> str:
        return result_repr(
            "SchemaChange",
            "dry_run" if self.dry_run else "",
            operation=self.operation,
            version=self.version,
            protocol=f"({self.old_protocol.min_reader_version},{self.old_protocol.min_writer_version}) -> "
            f"({self.new_protocol.min_reader_version},{self.new_protocol.min_writer_version})"
            if self.protocol_upgraded
            else None,
            writers_lost=sorted(self.writers_lost) or None,
        )


def run(
    txn: Transaction,
    operation: str,
    parameters: Mapping[str, Any],
    edit: Callable[[Snapshot], A.Metadata],
    *,
    dry_run: bool,
) -> SchemaChange:
    """Plan the metadata ``edit`` makes of ``txn``'s snapshot (the latest: the facade starts the transaction),
    with every rule of its commit (protocol upgrade included), then commit it unless ``dry_run``."""
    try:
        snap = txn.snapshot
        metadata = edit(snap)
        where = f"{txn.context.location}/{LOG_DIR} (version {snap.version})"
        staged = prepare_commit([metadata], snap.protocol, snap.metadata, snap.schema_json, where, operation=METADATA)
    except BaseException:
        txn.abort()
        raise
    protocol = next((a for a in staged if isinstance(a, A.Protocol)), snap.protocol)
    final = next(a for a in staged if isinstance(a, A.Metadata))
    change = SchemaChange(
        operation, snap.version, snap.protocol, protocol, writers_lost(snap.protocol, protocol), final, dry_run
    )
    if dry_run:
        txn.abort()
        return change
    result = txn.commit(staged, operation=operation, operation_parameters=dict(parameters), kind=METADATA)
    return replace(change, commit=result)


# ---------------------------------------------------------------------------------------------- dependencies
def _referenced(expression: str) -> list[str]:
    """The dotted columns a SQL expression names (lower case); its identifiers when it does not parse."""
    try:
        return [".".join(c.parts).lower() for c in column_refs(parse(expression))]
    except DeltaLogError:
        return [w.lower() for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", expression)]


def _touches(ref: str, path: str) -> bool:
    return ref == path or ref.startswith(path + ".") or path.startswith(ref + ".")


def check_dependents(snap: Snapshot, paths: Iterable[Sequence[str]], verb: str) -> None:
    """A column a CHECK constraint, an invariant or a generated column reads cannot be renamed or dropped
    (Delta Spark: DELTA_CONSTRAINT_DEPENDENT_COLUMN_CHANGE, DELTA_GENERATED_COLUMNS_DEPENDENT_COLUMN_CHANGE)."""
    rules = row_rules(snap.configuration, snap.schema_json)
    for path in paths:
        dotted = ".".join(path).lower()
        for rule in rules:
            own = rule.column is not None and rule.column.lower() == dotted
            if own and verb != "rename":
                continue  # dropping or widening a generated column (or one with an invariant) keeps its rule sound
            if own or any(_touches(ref, dotted) for ref in _referenced(rule.expression)):
                raise SchemaError(
                    f"cannot {verb} column {'.'.join(path)!r}: {rule.name} ({rule.expression}) depends on it",
                    field=".".join(path),
                )


# ---------------------------------------------------------------------------------------------- column mapping
def mapped(snap: Snapshot, enable: bool, verb: str, column: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The table's schema and configuration with column mapping on: as they are when it is, else (with
    ``enable``) in name mode with the current names as physical names; refused naming the column without."""
    schema, conf = dict(snap.schema_json), dict(snap.configuration)
    if snap.column_mapping_mode != "none":
        return schema, conf
    if not enable:
        raise InvalidArgumentError(
            f"cannot {verb} column {column!r}: the table has no column mapping, so its files name columns by their "
            "names; pass enable_column_mapping=True to turn on name mode (a protocol upgrade) in the same commit"
        )
    if properties.column_mapping_mode(conf) not in ("none", "name"):
        raise InvalidArgumentError(f"cannot {verb} column {column!r}: {column_mapping.MODE} is set but not in force")
    schema, top = column_mapping.assign(schema, max_id=column_mapping.max_column_id(conf), keep_names=True)
    conf.update({column_mapping.MODE: "name", column_mapping.MAX_COLUMN_ID: str(top)})
    return schema, conf


def _metadata(snap: Snapshot, schema: Mapping[str, Any], conf: Mapping[str, str], parts: Sequence[str]) -> A.Metadata:
    return replace(
        snap.metadata,
        schema_string=orjson.dumps(schema).decode(),
        configuration=dict(conf),
        partition_columns=tuple(parts),
    )


# ---------------------------------------------------------------------------------------------- rename, drop
def rename_column(
    txn: Transaction, column: str, new_name: str, *, enable_column_mapping: bool = False, dry_run: bool = False
) -> SchemaChange:
    """``ALTER TABLE RENAME COLUMN``: the field keeps its id and physical name, so no file is rewritten."""

    def edit(snap: Snapshot) -> A.Metadata:
        path = resolve(snap.schema_json, column)
        check_dependents(snap, [path], "rename")
        schema, conf = mapped(snap, enable_column_mapping, "rename", column)
        schema = renamed(schema, path, new_name)
        parts = [new_name if len(path) == 1 and p == path[0] else p for p in snap.partition_columns]
        return _metadata(snap, schema, conf, parts)

    params = {"oldColumnPath": column, "newColumnPath": new_name}
    return run(txn, "RENAME COLUMN", params, edit, dry_run=dry_run)


def drop_columns(
    txn: Transaction, columns: Sequence[str], *, enable_column_mapping: bool = False, dry_run: bool = False
) -> SchemaChange:
    """``ALTER TABLE DROP COLUMNS``: the fields leave the schema; their data stays in the files, unread."""
    if isinstance(columns, str):
        columns = [columns]
    if not columns:
        txn.abort()
        raise InvalidArgumentError("drop_columns needs at least one column")

    def edit(snap: Snapshot) -> A.Metadata:
        paths = [resolve(snap.schema_json, c) for c in columns]
        for path in paths:
            dotted = ".".join(path)
            if len(path) == 1 and path[0] in snap.partition_columns:
                raise SchemaError(f"cannot drop partition column {dotted!r}", field=dotted)
        if clustering.clustered(snap.protocol):
            clustered = clustering.logical_columns(
                snap.schema_json, clustering.columns_of(snap.domain_metadata.values()), snap.column_mapping_mode
            )
            for path in paths:
                dotted = ".".join(path)
                if any(_touches(c.lower(), dotted.lower()) for c in clustered):
                    raise SchemaError(f"cannot drop clustering column {dotted!r}", field=dotted)
        check_dependents(snap, paths, "drop")
        schema, conf = mapped(snap, enable_column_mapping, "drop", columns[0])
        return _metadata(snap, dropped(schema, paths), conf, snap.partition_columns)

    return run(txn, "DROP COLUMNS", {"columns": list(columns)}, edit, dry_run=dry_run)


# ---------------------------------------------------------------------------------------------- type widening
def change_column_type(
    txn: Transaction, column: str, new_type: Any, *, enable_type_widening: bool = False, dry_run: bool = False
) -> SchemaChange:
    """``ALTER TABLE ALTER COLUMN ... TYPE``: one of the protocol's widenings, recorded in the field's
    ``delta.typeChanges``; older files keep their type and are cast when read. Needs
    ``delta.enableTypeWidening=true``, which ``enable_type_widening`` sets (with the feature) in the same commit."""
    try:
        to = type_name(new_type) if isinstance(new_type, str) else str(delta_type(new_type))
    except BaseException:
        txn.abort()
        raise

    def edit(snap: Snapshot) -> A.Metadata:
        path = resolve(snap.schema_json, column)
        dotted = ".".join(path)
        field = field_at(snap.schema_json, path)
        old = field["type"]
        type_widening.check_change(dotted, old, to, snap.configuration)
        if len(path) == 1 and path[0] in snap.partition_columns and old == "date":
            raise SchemaError(
                f"cannot change partition column {dotted!r} from date to {to}: its partition values are dates",
                field=dotted,
            )
        check_dependents(snap, [path], "change the type of")
        conf = dict(snap.configuration)
        if not properties.get_bool(conf, type_widening.PROPERTY):
            if not enable_type_widening:
                raise InvalidArgumentError(
                    f"cannot change the type of column {dotted!r}: the table does not allow type changes "
                    f"({type_widening.PROPERTY} is not true); pass enable_type_widening=True to set it (and the "
                    "typeWidening feature, a protocol upgrade) in the same commit"
                )
            conf[type_widening.PROPERTY] = "true"
        meta = type_widening.recorded(field.get("metadata") or {}, old, to)
        return _metadata(snap, retyped(snap.schema_json, path, to, meta), conf, snap.partition_columns)

    params = {"column": column, "newType": to}
    return run(txn, "CHANGE COLUMN", params, edit, dry_run=dry_run)


__all__ = [
    "SchemaChange",
    "change_column_type",
    "check_dependents",
    "drop_columns",
    "mapped",
    "rename_column",
    "run",
]
