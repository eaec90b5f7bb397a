"""Creating tables and changing their metadata; each change is an ordinary transaction.

Creating a table too: a transaction that read version -1, committed through the same loop as every other
version (:mod:`deltalog.table.commit.loop`), so a lost response is recovered by ``txnId`` and every
per-commit rule applies to version 0 as to any other. The functions that change a table take the transaction
to commit on (the facade starts it on the latest snapshot), so nothing here calls up into the facade.

Protocol requests in the configuration follow Delta Spark's spelling (``delta.minReaderVersion``,
``delta.minWriterVersion``, ``delta.feature.<name> = supported``): they become the protocol action and are
removed from the stored configuration.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import orjson
import pyarrow as pa

from deltalog.arrow.schema import delta_field, from_arrow_schema
from deltalog.core import actions as A
from deltalog.core.commit.rules import prepare_commit
from deltalog.core.features import clustering, column_mapping, constraints
from deltalog.core.features.kinds import commit_kind
from deltalog.core.features.property_rules import (
    ProtocolRequest,
    check_unset,
    keys_matching,
    split_protocol_requests,
    validate_updates,
)
from deltalog.core.features.protocol import (
    check_configuration_honoured,
    feature_name,
    required_features,
    upgrade_protocol,
)
from deltalog.core.log.paths import LOG_DIR
from deltalog.core.schema import SchemaError, parse_schema, top_level_fields
from deltalog.data.constraints import check_rows, table_rules
from deltalog.data.types import plan_schema
from deltalog.errors import InvalidArgumentError, TableAlreadyExistsError
from deltalog.table import column_rules
from deltalog.table.commit import CommitResult, NewTable, Transaction
from deltalog.table.context import TableContext
from deltalog.table.listing import list_log
from deltalog.table.snapshot import Snapshot

#: a new table's protocol when the configuration asks for no versions: Delta Spark's default
DEFAULT_PROTOCOL = A.Protocol(1, 2)


def schema_json_of(schema: pa.Schema | str | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(schema, pa.Schema):
        return from_arrow_schema(schema)
    try:
        if isinstance(schema, str):
            return parse_schema(schema)
        return parse_schema(orjson.dumps(dict(schema)).decode())
    except (SchemaError, TypeError, ValueError) as exc:
        raise InvalidArgumentError(f"invalid schema: {exc}") from None


def protocol_for(configuration: Mapping[str, str], base: A.Protocol | None = None) -> tuple[A.Protocol, dict[str, str]]:
    """The protocol a configuration asks for (``base`` upgraded, never lowered), and the configuration
    without the protocol requests; see :func:`requested_protocol`."""
    request, rest = split_protocol_requests(configuration)
    return requested_protocol(request, base), {k: v if isinstance(v, str) else str(v) for k, v in rest.items()}


def requested_protocol(request: ProtocolRequest, base: A.Protocol | None) -> A.Protocol:
    """``base`` upgraded to what ``request`` asks for. Without ``base`` (a new table) the start is Delta
    Spark's default (1,2), or (1,1) when the request names versions itself. Feature names are matched
    regardless of case, as Spark matches them."""
    if base is None:
        named = request.reader is not None or request.writer is not None
        base = A.Protocol(1, 1) if named else DEFAULT_PROTOCOL
    features = {feature_name(f) for f in request.features}
    return upgrade_protocol(base, features, request.reader, request.writer)


def plan_table(
    ctx: TableContext,
    schema: pa.Schema | str | Mapping[str, Any],
    partition_columns: Sequence[str] | None = (),
    configuration: Mapping[str, str] | None = None,
    name: str | None = None,
    description: str | None = None,
    *,
    allow_unknown_properties: bool = False,
    clustering_columns: Sequence[str] | None = None,
    generated: Mapping[str, str] | None = None,
    defaults: Mapping[str, str] | None = None,
    identity: Mapping[str, Mapping[str, Any]] | None = None,
) -> NewTable:
    """Version 0 of a new table, checked by every rule its commit must meet (schema, partitioning,
    properties, protocol) and final (the features they need, physical names under column mapping), so a
    refused create writes nothing, and a writer can write the first files before the one commit of both.
    A table already there is :class:`TableAlreadyExistsError`.

    ``clustering_columns`` (logical names, ``"a.b"`` for nested fields) makes a clustered table: the
    ``clustering`` and ``domainMetadata`` features and the ``delta.clustering`` domain, in physical names.
    ``generated`` and ``defaults`` (column -> SQL) become generation expressions and column defaults, and
    ``identity`` (column -> start, step, allowExplicitInsert) identity columns, checked by
    :func:`~deltalog.table.column_rules.with_column_rules`."""
    if partition_columns is None:  # deltalake's DeltaTable.create takes None for "not partitioned"
        partition_columns = ()
    if isinstance(partition_columns, str) or not isinstance(partition_columns, Sequence):
        raise InvalidArgumentError(f"partition_columns is a list of column names, not {partition_columns!r}")
    if list_log(ctx.store, 0):
        raise TableAlreadyExistsError(f"a Delta table already exists at {ctx.location}")
    schema_json = schema_json_of(schema)
    request, rest = split_protocol_requests(configuration or {})
    conf = validate_updates(rest, allow_unknown=allow_unknown_properties)
    if generated or defaults or identity or column_rules.declared(schema_json):
        schema_json = column_rules.with_column_rules(
            schema_json, generated, defaults, identity, partition_columns=list(partition_columns)
        )
    metadata = A.Metadata(
        id=str(uuid.uuid4()),
        name=name,
        description=description,
        schema_string=orjson.dumps(schema_json).decode(),
        partition_columns=tuple(partition_columns),
        configuration=conf,
        created_time=ctx.now_ms(),
    )
    params: dict[str, Any] = {"partitionBy": list(partition_columns), "description": description, "properties": conf}
    protocol = requested_protocol(request, None)
    domains: tuple[A.DomainMetadata, ...] = ()
    if clustering_columns is not None:
        if isinstance(clustering_columns, str):
            raise InvalidArgumentError(f"clustering_columns is a list of column names, not {clustering_columns!r}")
        protocol = upgrade_protocol(protocol, {clustering.FEATURE, "domainMetadata"})
        # the domain names physical columns, so the columns get theirs now (the commit keeps them)
        protocol = upgrade_protocol(protocol, required_features(conf, schema_json))
        metadata = column_mapping.mapped_metadata(None, metadata, protocol)
        mode = column_mapping.mode(protocol, conf)
        domain = clustering.new_clustering(
            protocol, metadata.partition_columns, parse_schema(metadata.schema_string), mode, clustering_columns, ()
        )
        domains = (domain,) if domain is not None else ()
        params["clusterBy"] = list(clustering_columns)
    # The commit path's own rules, run now: the protocol gains the features the schema and properties need,
    # column-mapped columns their ids and physical names (what data files are written with). The commit runs
    # them again on these actions and keeps them as they are.
    staged: list[A.Action] = [protocol, metadata, *domains]
    where = f"{ctx.location}/{LOG_DIR} (new table)"
    prepared = prepare_commit(staged, None, None, None, where, operation=commit_kind(staged, "CREATE TABLE"))
    protocol = next(a for a in prepared if isinstance(a, A.Protocol))
    metadata = next(a for a in prepared if isinstance(a, A.Metadata))
    return NewTable(ctx.location, protocol, metadata, domains, params)


def commit_create(txn: Transaction) -> CommitResult:
    """Commit a create transaction (one on a :func:`plan_table` table, read version -1) with nothing more than
    its table (``CREATE TABLE``, no file metrics, as Delta Spark writes it). A table created by another writer
    first is :class:`TableAlreadyExistsError`."""
    table = txn.new_table
    if table is None:
        raise InvalidArgumentError("this transaction does not create a table")
    return txn.commit(operation="CREATE TABLE", operation_parameters=table.parameters, operation_metrics={})


def add_columns(txn: Transaction, fields: Iterable[pa.Field | Mapping[str, Any]]) -> CommitResult:
    """Add nullable columns at the end of the schema (what Spark's mergeSchema does for new columns).

    The commit checks the new columns as a create checks its schema, and adds the features their types
    need (``timestampNtz``, ``variantType``) to the protocol in the same version.
    """
    snap = txn.snapshot
    schema = dict(snap.schema_json)
    existing = {f["name"].lower() for f in top_level_fields(schema)}
    new_fields = [delta_field(f) if isinstance(f, pa.Field) else dict(f) for f in fields]
    for f in new_fields:
        if not isinstance(f.get("name"), str):
            raise InvalidArgumentError(f"a new column needs a name: {f!r}")
        if f["name"].lower() in existing:
            raise InvalidArgumentError(f"column {f['name']!r} already exists")
        if not f.get("nullable", True):
            raise InvalidArgumentError(f"new column {f['name']!r} must be nullable: existing files have no values")
        existing.add(f["name"].lower())
    schema["fields"] = [*top_level_fields(schema), *new_fields]
    metadata = replace(snap.metadata, schema_string=orjson.dumps(schema).decode())
    return txn.commit([metadata], operation="ADD COLUMNS", operation_parameters={"columns": new_fields})


def set_properties(
    txn: Transaction, props: Mapping[str, str], *, allow_unknown_properties: bool = False
) -> CommitResult:
    """Set table properties as Delta Spark's ALTER TABLE SET TBLPROPERTIES does (keys in canonical spelling,
    values checked; see :mod:`deltalog.core.features.property_rules`); protocol requests upgrade the protocol.

    Only the keys being set are checked, so a table holding a value another engine wrote badly can be
    repaired by setting that key.
    """
    request, rest = split_protocol_requests(props)
    updates = validate_updates(rest, allow_unknown=allow_unknown_properties)
    snap = txn.snapshot
    replaced = {old for key in updates for old in keys_matching(snap.configuration, key)}
    conf = {**{k: v for k, v in snap.configuration.items() if k not in replaced}, **updates}
    check_configuration_honoured(updates, {"type": "struct", "fields": []}, f"{txn.context.location}/{LOG_DIR}")
    protocol = requested_protocol(request, snap.protocol)
    actions: list[A.Action] = [replace(snap.metadata, configuration=conf)]
    if protocol != snap.protocol:
        actions.append(protocol)
    return txn.commit(actions, operation="SET TBLPROPERTIES", operation_parameters={"properties": dict(props)})


def unset_properties(txn: Transaction, keys: Iterable[str], if_exists: bool = True) -> CommitResult:
    """Remove table properties; ``delta.*`` keys match regardless of case (every stored spelling goes).

    Keys the engine maintains are refused (:func:`~deltalog.core.features.property_rules.check_unset`); any other
    key can go, whatever value it holds, which is how a table with a bad value is repaired.
    """
    keys = [keys] if isinstance(keys, str) else list(keys)
    check_unset(keys)
    snap = txn.snapshot
    matched = {k: keys_matching(snap.configuration, k) for k in keys}
    missing = [k for k, found in matched.items() if not found]
    if missing and not if_exists:
        raise InvalidArgumentError(f"table properties not set: {missing}")
    drop = {k for found in matched.values() for k in found}
    conf = {k: v for k, v in snap.configuration.items() if k not in drop}
    return txn.commit(
        [replace(snap.metadata, configuration=conf)],
        operation="UNSET TBLPROPERTIES",
        operation_parameters={"properties": keys, "ifExists": if_exists},
    )


def enable_feature(txn: Transaction, feature: str) -> CommitResult:
    """Upgrade the protocol so it supports ``feature`` (table features protocol: writer 7, reader 3 if needed)."""
    snap = txn.snapshot
    protocol, _ = protocol_for({f"delta.feature.{feature}": "supported"}, snap.protocol)
    if protocol == snap.protocol:
        raise InvalidArgumentError(f"feature {feature!r} is already supported")
    return txn.commit([protocol], operation="UPGRADE PROTOCOL", operation_parameters={"newProtocol": feature})


def cluster_by(txn: Transaction, columns: Sequence[str]) -> CommitResult:
    """Change the clustering columns (``ALTER TABLE ... CLUSTER BY``; an empty list is ``CLUSTER BY NONE``).

    An unpartitioned table becomes clustered (its protocol gains ``clustering`` and ``domainMetadata``). A
    column new to the list needs statistics in every live file (PROTOCOL "Clustered Table"); the files are
    read, so a concurrent append conflicts rather than slipping in without them.
    """
    if isinstance(columns, str):
        raise InvalidArgumentError(f"columns is a list of column names, not {columns!r}")
    snap = txn.snapshot
    protocol = upgrade_protocol(snap.protocol, {clustering.FEATURE, "domainMetadata"})
    current = clustering.columns_of(snap.domain_metadata.values())
    txn.read()
    domain = clustering.new_clustering(
        protocol,
        snap.partition_columns,
        snap.schema_json,
        snap.column_mapping_mode,
        list(columns),
        current,
        snap.add_actions(),
    )
    if domain is None:
        raise InvalidArgumentError(f"the table is already clustered by {list(columns)}")
    actions: list[A.Action] = [domain] if protocol == snap.protocol else [protocol, domain]
    return txn.commit(actions, operation="CLUSTER BY", operation_parameters={"clusteringColumns": list(columns)})


def add_constraint(
    txn: Transaction, name: str, expression: str, *, existing_data_validated: bool = False
) -> CommitResult:
    """``ALTER TABLE ADD CONSTRAINT name CHECK (expression)``: the table's rows are checked first, or the
    caller attests they pass (``existing_data_validated=True``); either is recorded in ``commitInfo``.

    Every live row is read through the scanner (deletion vectors applied) and evaluated as Spark would (false
    **or null** fails); a violation raises :class:`~deltalog.errors.ConstraintViolationError` naming the row and
    nothing is committed. The read covers the whole table, so a concurrent append conflicts instead of slipping
    unchecked rows in. An expression outside deltalog's SQL subset is refused by name
    (:class:`~deltalog.errors.UnsupportedExpressionError`): check the rows elsewhere and attest.
    """
    snap = txn.snapshot
    how = constraints.ATTESTED if existing_data_validated is True else constraints.CHECKED
    metadata, _ = constraints.add_constraint(snap.metadata, name, expression, existing_rows=how)
    txn.read()
    if how == constraints.CHECKED:
        check_existing_rows(snap, {constraints.constraint_key(name.strip()): expression})
    params = {"name": name.strip().lower(), "expr": expression}
    return txn.commit([metadata], operation="ADD CONSTRAINT", operation_parameters=params, existing_data_validated=how)


def check_existing_rows(snap: Snapshot, rules: Mapping[str, str]) -> None:
    """Evaluate CHECK constraints ``rules`` (``delta.constraints.<name>`` -> SQL) on every live row of ``snap``."""
    plans = plan_schema(snap.schema_json, False)  # the scanner yields logical names
    compiled = table_rules({"fields": []}, rules, plans)
    for batch in snap.scan():
        check_rows(compiled, batch, plans)


def drop_constraint(txn: Transaction, name: str, *, if_exists: bool = False) -> CommitResult:
    """``ALTER TABLE DROP CONSTRAINT``; a name the table does not have is an error unless ``if_exists``."""
    snap = txn.snapshot
    metadata, _ = constraints.drop_constraint(snap.metadata, name, if_exists=if_exists)
    params = {"name": str(name).strip().lower(), "ifExists": if_exists}
    return txn.commit([metadata], operation="DROP CONSTRAINT", operation_parameters=params)


__all__ = [
    "add_constraint",
    "check_existing_rows",
    "cluster_by",
    "commit_create",
    "drop_constraint",
    "add_columns",
    "DEFAULT_PROTOCOL",
    "enable_feature",
    "plan_table",
    "protocol_for",
    "requested_protocol",
    "schema_json_of",
    "set_properties",
    "unset_properties",
]
