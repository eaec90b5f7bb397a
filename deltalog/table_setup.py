"""Creating tables and changing their metadata; each change is an ordinary transaction.

Protocol requests in the configuration follow Delta Spark's spelling (``delta.minReaderVersion``,
``delta.minWriterVersion``, ``delta.feature.<name> = supported``): they become the protocol action and are
removed from the stored configuration.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import orjson
import pyarrow as pa

from deltalog._version import ENGINE_INFO
from deltalog.arrow_schema import delta_field, from_arrow_schema
from deltalog.committer import Committer, RetryPolicy
from deltalog.core import actions as A
from deltalog.core.codec import encode_actions
from deltalog.core.commit_rules import validate_actions, validate_metadata
from deltalog.core.features import (
    READER_FEATURES_FOR_REPLAY,
    check_configuration_honoured,
    check_writable,
    supported_features,
)
from deltalog.core.paths import LOG_DIR
from deltalog.core.schema import SchemaError, parse_schema, top_level_fields
from deltalog.errors import InvalidArgumentError, TableAlreadyExistsError

if TYPE_CHECKING:
    from deltalog.log import DeltaLog
    from deltalog.transaction import CommitResult

#: reader features that force reader version 3 when enabled
_READER_SIDE = READER_FEATURES_FOR_REPLAY


def schema_json_of(schema: pa.Schema | str | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(schema, pa.Schema):
        return from_arrow_schema(schema)
    try:
        if isinstance(schema, str):
            return parse_schema(schema)
        return parse_schema(orjson.dumps(dict(schema)).decode())
    except SchemaError as exc:
        raise InvalidArgumentError(f"invalid schema: {exc}") from None


def protocol_for(configuration: Mapping[str, str], base: A.Protocol | None = None) -> tuple[A.Protocol, dict[str, str]]:
    """The protocol a configuration asks for, and the configuration without the protocol requests."""
    conf = dict(configuration)
    reader = int(conf.pop("delta.minReaderVersion", base.min_reader_version if base else 1))
    writer = int(conf.pop("delta.minWriterVersion", base.min_writer_version if base else 2))
    features = {k[len("delta.feature.") :] for k in list(conf) if k.startswith("delta.feature.")}
    for k in [k for k in conf if k.startswith("delta.feature.")]:
        conf.pop(k)
    if not features:
        return A.Protocol(
            reader, writer, base.reader_features if base else None, base.writer_features if base else None
        ), conf
    current = supported_features(base) if base else supported_features(A.Protocol(reader, writer))
    all_features = sorted(current | features)
    reader_features = sorted(f for f in all_features if f in _READER_SIDE)
    if reader_features:
        return A.Protocol(3, 7, tuple(reader_features), tuple(all_features)), conf
    return A.Protocol(max(reader, 1), 7, None, tuple(all_features)), conf


def create_table(
    log: DeltaLog,
    schema: pa.Schema | str | Mapping[str, Any],
    partition_columns: Sequence[str] = (),
    configuration: Mapping[str, str] | None = None,
    name: str | None = None,
    description: str | None = None,
    retry: RetryPolicy | None = None,
) -> CommitResult:
    from deltalog.transaction import CommitResult

    if any(True for _ in log.list_log(0)):
        raise TableAlreadyExistsError(f"a Delta table already exists at {log.location}")
    schema_json = schema_json_of(schema)
    protocol, conf = protocol_for(configuration or {})
    now = log.now_ms()
    metadata = A.Metadata(
        id=str(uuid.uuid4()),
        name=name,
        description=description,
        schema_string=orjson.dumps(schema_json).decode(),
        partition_columns=tuple(partition_columns),
        configuration=conf,
        created_time=now,
    )
    validate_metadata(metadata)
    validate_actions([protocol, metadata], metadata)
    source = f"{log.location}/{LOG_DIR} (new table)"
    check_configuration_honoured(metadata.configuration, schema_json, source)
    check_writable(protocol, metadata.configuration, schema_json, source)
    txn_id = str(uuid.uuid4())
    info = A.CommitInfo(
        timestamp=now,
        operation="CREATE TABLE",
        operation_parameters={
            "partitionBy": list(partition_columns),
            "description": description,
            "properties": conf,
        },
        isolation_level="Serializable",
        is_blind_append=False,
        engine_info=ENGINE_INFO,
        txn_id=txn_id,
    )
    data = encode_actions([info, protocol, metadata])
    # The commit loop's put resolves a lost response by our txnId, so a retried create never trips on itself.
    if Committer(log.store, retry or RetryPolicy()).put(0, data, txn_id) == "taken":
        raise TableAlreadyExistsError(
            f"a Delta table already exists at {log.location} (another writer created version 0 first)"
        )
    result = CommitResult(
        version=0,
        attempts=1,
        winners=(),
        txn_id=txn_id,
        operation="CREATE TABLE",
        actions=(protocol, metadata),
        read_version=-1,
        isolation_level="Serializable",
    )
    log._notify(result)
    return result


def add_columns(log: DeltaLog, fields: Iterable[pa.Field | Mapping[str, Any]]) -> CommitResult:
    """Add nullable columns at the end of the schema (what Spark's mergeSchema does for new columns)."""
    txn = log.start_transaction()
    snap = txn.snapshot
    schema = dict(snap.schema_json)
    existing = {f["name"].lower() for f in top_level_fields(schema)}
    new_fields = [delta_field(f) if isinstance(f, pa.Field) else dict(f) for f in fields]
    for f in new_fields:
        if f["name"].lower() in existing:
            raise InvalidArgumentError(f"column {f['name']!r} already exists")
        if not f.get("nullable", True):
            raise InvalidArgumentError(f"new column {f['name']!r} must be nullable: existing files have no values")
        existing.add(f["name"].lower())
    schema["fields"] = [*top_level_fields(schema), *new_fields]
    metadata = replace(snap.metadata, schema_string=orjson.dumps(schema).decode())
    return txn.commit([metadata], operation="ADD COLUMNS", operation_parameters={"columns": new_fields})


def set_properties(log: DeltaLog, props: Mapping[str, str]) -> CommitResult:
    txn = log.start_transaction()
    snap = txn.snapshot
    protocol, conf_updates = protocol_for(props, snap.protocol)
    conf = {**snap.configuration, **{k: str(v) for k, v in conf_updates.items()}}
    check_configuration_honoured(conf_updates, {"type": "struct", "fields": []}, f"{log.location}/{LOG_DIR}")
    actions: list[A.Action] = [replace(snap.metadata, configuration=conf)]
    if protocol != snap.protocol:
        actions.append(protocol)
    return txn.commit(actions, operation="SET TBLPROPERTIES", operation_parameters={"properties": dict(props)})


def unset_properties(log: DeltaLog, keys: Iterable[str], if_exists: bool = True) -> CommitResult:
    txn = log.start_transaction()
    snap = txn.snapshot
    keys = list(keys)
    missing = [k for k in keys if k not in snap.configuration]
    if missing and not if_exists:
        raise InvalidArgumentError(f"table properties not set: {missing}")
    conf = {k: v for k, v in snap.configuration.items() if k not in keys}
    return txn.commit(
        [replace(snap.metadata, configuration=conf)],
        operation="UNSET TBLPROPERTIES",
        operation_parameters={"properties": keys, "ifExists": if_exists},
    )


def enable_feature(log: DeltaLog, feature: str) -> CommitResult:
    """Upgrade the protocol so it supports ``feature`` (table features protocol: writer 7, reader 3 if needed)."""
    txn = log.start_transaction()
    snap = txn.snapshot
    protocol, _ = protocol_for({f"delta.feature.{feature}": "supported"}, snap.protocol)
    if protocol == snap.protocol:
        raise InvalidArgumentError(f"feature {feature!r} is already supported")
    return txn.commit([protocol], operation="UPGRADE PROTOCOL", operation_parameters={"newProtocol": feature})


__all__ = [
    "add_columns",
    "create_table",
    "enable_feature",
    "protocol_for",
    "schema_json_of",
    "set_properties",
    "unset_properties",
]
