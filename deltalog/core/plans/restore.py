"""What a RESTORE commits: Delta Spark's ``RestoreTableCommand`` decisions, as pure functions.

A restore makes an older version's *table* current, not only its files: readers interpret the re-added
files through the metadata, so the files of version N under today's schema, partitioning or properties
would read as wrong values without any error. So the commit carries the target's metadata, with the few
pieces that must never go back in time taken from the current table:

- identity columns' high-water marks (going back would hand out identity values again);
- ``delta.columnMapping.maxColumnId`` (going back would let a new column reuse an id old files carry);
- the in-commit-timestamp enablement pair while ICT stays on (it tells time travel which commits have
  in-commit timestamps, and that history does not change by restoring);
- the protocol, which only grows (older versions' files may need what a newer protocol names);
- every domain but ``delta.clustering``: ``delta.rowTracking`` going back would reissue row ids, and
  other domains belong to their owners, not to the table's data.

Sources: ``commands/RestoreTableCommand.scala``, ``IdentityColumn.copySchemaWithMergedHighWaterMarks``,
``DomainMetadataUtils.handleDomainMetadataForRestoreTable``, ``Protocol.merge`` (delta-io/delta); see
``../shared/docs/delta-write-rules.md`` section 2.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

import orjson

from deltalog.core import actions as A
from deltalog.core.features import clustering, properties
from deltalog.core.features.protocol import CATALOG_FEATURES, READER_FEATURES_FOR_REPLAY, supported_features
from deltalog.core.files.pathkeys import dv_id_of, file_key
from deltalog.core.schema import COLUMN_ID, PHYSICAL_NAME, SchemaError, parse_schema, top_level_fields, walk_fields
from deltalog.errors import CorruptLogError, InvalidArgumentError

IDENTITY_START = "delta.identity.start"
IDENTITY_STEP = "delta.identity.step"
IDENTITY_HIGH_WATER_MARK = "delta.identity.highWaterMark"
MAX_COLUMN_ID = "delta.columnMapping.maxColumnId"
ICT_ENABLED = "delta.enableInCommitTimestamps"
ICT_ENABLEMENT_KEYS = ("delta.inCommitTimestampEnablementVersion", "delta.inCommitTimestampEnablementTimestamp")
CLUSTERING_DOMAIN = clustering.DOMAIN

#: Features a reader must know too; the ones legacy versions imply only ever include ``columnMapping``.
_READER_WRITER_FEATURES = READER_FEATURES_FOR_REPLAY | CATALOG_FEATURES


# ------------------------------------------------------------------------------------------------ files
@dataclass(frozen=True)
class FileChanges:
    """Files live now but not at the target (to remove) and live then but not now (to re-add)."""

    to_remove: tuple[A.Add, ...]
    to_add: tuple[A.Add, ...]


def file_changes(current: Iterable[A.Add], target: Iterable[A.Add], root: str) -> FileChanges:
    """Compare the two file sets by replay identity, (path, deletion vector id).

    A file whose deletion vector changed since the target is therefore removed with its new vector and
    re-added with its old one, which is exactly the rows it held then.
    """

    def keyed(adds: Iterable[A.Add]) -> dict[str, A.Add]:
        return {file_key(a.path, dv_id_of(a.deletion_vector), root): a for a in adds}

    now, then = keyed(current), keyed(target)
    return FileChanges(
        to_remove=tuple(a for k, a in now.items() if k not in then),
        to_add=tuple(a for k, a in then.items() if k not in now),
    )


def restore_actions(changes: FileChanges, now_ms: int) -> list[A.Action]:
    """Re-adds as the target recorded them (stats, tags, DV, row-tracking fields) but with ``dataChange``
    on, and removes that carry the live file's DV and extended metadata, stamped ``now_ms``."""
    adds: list[A.Action] = [replace(a, data_change=True) for a in changes.to_add]
    return adds + [a.remove(now_ms, data_change=True) for a in changes.to_remove]


def operation_metrics(changes: FileChanges, files_after: int, bytes_after: int) -> dict[str, str]:
    """RESTORE's ``operationMetrics`` with Delta Spark's names, values as strings as Spark writes them;
    ``files_after``/``bytes_after`` describe the table the restore leaves."""
    return {
        "numRestoredFiles": str(len(changes.to_add)),
        "restoredFilesSize": str(sum(a.size for a in changes.to_add)),
        "numRemovedFiles": str(len(changes.to_remove)),
        "removedFilesSize": str(sum(a.size for a in changes.to_remove)),
        "numOfFilesAfterRestore": str(files_after),
        "tableSizeAfterRestore": str(bytes_after),
    }


# ------------------------------------------------------------------------------------------------ metadata
def _schema(metadata: A.Metadata, which: str) -> dict[str, Any]:
    try:
        return parse_schema(metadata.schema_string)
    except SchemaError as exc:
        raise CorruptLogError(f"{which} table schema: {exc}") from None


def _long(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _physical(field: Mapping[str, Any]) -> Any:
    return (field.get("metadata") or {}).get(PHYSICAL_NAME, field.get("name"))


def _merge_high_water_marks(target: dict[str, Any], current: Mapping[str, Any]) -> bool:
    """Give ``target``'s identity columns the further of the two high-water marks (in place).

    Columns are matched by physical name, as Spark matches them; the step's sign says which way is
    "further". Returns whether anything changed.
    """
    marks: dict[Any, int] = {}
    for f in top_level_fields(current):
        mark = _long((f.get("metadata") or {}).get(IDENTITY_HIGH_WATER_MARK))
        if mark is not None:
            marks[_physical(f)] = mark
    changed = False
    for f in top_level_fields(target):
        meta = f.get("metadata") or {}
        step = _long(meta.get(IDENTITY_STEP))
        theirs = marks.get(_physical(f))
        if step is None or _long(meta.get(IDENTITY_START)) is None or theirs is None:
            continue
        ours = _long(meta.get(IDENTITY_HIGH_WATER_MARK))
        merged = theirs if ours is None else (max(ours, theirs) if step > 0 else min(ours, theirs))
        if merged != ours:
            f["metadata"] = {**meta, IDENTITY_HIGH_WATER_MARK: merged}
            changed = True
    return changed


def _column_ids(schema: Any) -> Iterator[int]:
    """Every ``delta.columnMapping.id`` in the schema, nested fields included."""
    for at in walk_fields(schema):
        ident = _long((at.field.get("metadata") or {}).get(COLUMN_ID))
        if ident is not None:
            yield ident


def _max_column_id(conf: Mapping[str, str], which: str) -> int | None:
    if MAX_COLUMN_ID not in conf:
        return None
    try:
        return properties.get_int(conf, MAX_COLUMN_ID, 0)
    except properties.PropertyError as exc:
        raise CorruptLogError(f"{which} table: {exc}") from None


def restored_metadata(target: A.Metadata, current: A.Metadata, target_version: int) -> A.Metadata:
    """The metaData a restore to ``target`` commits: the target's, with the current table's table id,
    identity high-water marks, ``maxColumnId`` floor and ICT enablement pair.

    A column mapping mode change across the restore is refused: files written under one mode cannot be
    read under the other (Spark refuses the same change in any metadata update).
    """
    which = f"version {target_version}"
    old_mode = properties.column_mapping_mode(target.configuration)
    new_mode = properties.column_mapping_mode(current.configuration)
    if old_mode != new_mode:
        raise InvalidArgumentError(
            f"cannot restore to version {target_version}: its column mapping mode is {old_mode!r}, the table's "
            f"is now {new_mode!r}, and files written under one mode do not read under the other"
        )
    schema = _schema(target, which)
    current_schema = _schema(current, "current")
    schema_string = target.schema_string
    if _merge_high_water_marks(schema, current_schema):
        schema_string = orjson.dumps(schema).decode()
    conf = dict(target.configuration)
    ids = [
        v
        for v in (_max_column_id(target.configuration, which), _max_column_id(current.configuration, "current"))
        if v is not None
    ]
    if ids:
        conf[MAX_COLUMN_ID] = str(max([*ids, *_column_ids(schema)]))
    ict_then = properties.get_bool(target.configuration, ICT_ENABLED)
    ict_now = properties.get_bool(current.configuration, ICT_ENABLED)
    if ict_then:
        # Enabled now too: the enablement stays where it is. Not enabled now: this commit enables ICT again,
        # and the pair, if the committer writes one, must name this commit, never the target's old one.
        for key in ICT_ENABLEMENT_KEYS:
            conf.pop(key, None)
            if ict_now and key in current.configuration:
                conf[key] = current.configuration[key]
    return replace(target, id=current.id, schema_string=schema_string, configuration=conf)


def same_metadata(a: A.Metadata, b: A.Metadata) -> bool:
    """Equal as readers see them: schema strings compared as parsed JSON, so formatting alone is no change."""
    if replace(a, schema_string=None) != replace(b, schema_string=None):
        return False
    if a.schema_string == b.schema_string:
        return True
    try:
        return bool(orjson.loads(a.schema_string or "null") == orjson.loads(b.schema_string or "null"))
    except orjson.JSONDecodeError:
        return False


# ------------------------------------------------------------------------------------------------ protocol
def merged_protocol(target: A.Protocol, current: A.Protocol) -> A.Protocol:
    """Both protocols' versions and features (``Protocol.merge``): a restore never downgrades.

    Once the result lists features, it also lists those either side's legacy versions implied, so
    nothing either side supported is lost by switching representation.
    """
    reader = max(target.min_reader_version, current.min_reader_version)
    writer = max(target.min_writer_version, current.min_writer_version)
    if writer < 7 and reader < 3:
        return A.Protocol(reader, writer)
    listed = [*(current.writer_features or ()), *(target.writer_features or ())]
    implied = sorted((supported_features(target) | supported_features(current)) - set(listed))
    writer_features = tuple(dict.fromkeys([*listed, *implied]))
    if reader < 3:
        return A.Protocol(reader, writer, None, writer_features)
    readers = [*(current.reader_features or ()), *(target.reader_features or ())]
    readers += [f for f in writer_features if f in _READER_WRITER_FEATURES]
    return A.Protocol(reader, writer, tuple(dict.fromkeys(readers)), writer_features)


def same_protocol(a: A.Protocol, b: A.Protocol) -> bool:
    """Equal as a set of requirements (feature order is not meaningful)."""

    def requirements(p: A.Protocol) -> tuple[Any, ...]:
        lists = [None if f is None else frozenset(f) for f in (p.reader_features, p.writer_features)]
        return (p.min_reader_version, p.min_writer_version, *lists)

    return requirements(a) == requirements(b)


# ------------------------------------------------------------------------------------------------ domains
_NO_CLUSTERING = orjson.dumps({"clusteringColumns": []}).decode()


def _clustering_columns(domain: A.DomainMetadata) -> Any:
    try:
        return orjson.loads(domain.configuration).get("clusteringColumns")
    except (orjson.JSONDecodeError, AttributeError):
        return None


def restored_domains(
    target: Mapping[str, A.DomainMetadata],
    target_protocol: A.Protocol,
    current: Mapping[str, A.DomainMetadata],
) -> list[A.DomainMetadata]:
    """The domainMetadata actions of the restore: at most one, for ``delta.clustering``.

    The target's clustering columns come back when the target was a clustered table. When it was not but
    the table now has a clustering domain, the domain is kept with no clustering columns, as Spark does
    (a table that supports ``clustering`` must keep the domain). Every other domain, ``delta.rowTracking``
    included, is left as it is now, which means committing nothing for it.
    """
    now = current.get(CLUSTERING_DOMAIN)
    then = target.get(CLUSTERING_DOMAIN) if clustering.clustered(target_protocol) else None
    if then is not None and not then.removed:
        if now is None or now.removed or _clustering_columns(now) != _clustering_columns(then):
            return [A.DomainMetadata(CLUSTERING_DOMAIN, then.configuration)]
        return []
    if now is not None and not now.removed and _clustering_columns(now) != []:
        return [A.DomainMetadata(CLUSTERING_DOMAIN, _NO_CLUSTERING)]
    return []


__all__ = [
    "CLUSTERING_DOMAIN",
    "FileChanges",
    "ICT_ENABLED",
    "ICT_ENABLEMENT_KEYS",
    "IDENTITY_HIGH_WATER_MARK",
    "MAX_COLUMN_ID",
    "file_changes",
    "merged_protocol",
    "operation_metrics",
    "restore_actions",
    "restored_domains",
    "restored_metadata",
    "same_metadata",
    "same_protocol",
]
