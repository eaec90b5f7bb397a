"""Reading change data: which rows of which files each version's changes are, and when a range can be read.

PROTOCOL "Change Data Files": a version with ``cdc`` actions is read from its change files *only*, each row
typed by the file's ``_change_type`` column; a version without them is read from its ``dataChange=true``
file actions, adds as inserts and removes as deletes; ``dataChange=false`` actions (compaction, a checkpoint's
rearrangement) change nothing.

Delta Spark (facts, delta-io/delta ``spark/src/main/scala/org/apache/spark/sql/delta/commands/cdc/
CDCReader.scala``): ``getDeletedAndAddedRows`` pairs a version's adds and removes by path; a path only added is
read as inserts (its deletion vector applied), one only removed as deletes (the remove's vector applied), and
``generateFileActionsWithInlineDv`` turns a pair into the rows whose mark changed: rows the add's vector marks
and the remove's does not are deleted, rows the remove's vector marks and the add's does not are inserted
again (a RESTORE that takes a file back to a smaller vector). ``shouldSkipFileActionsInCommit`` reads nothing
from the file actions of a MERGE whose commitInfo says it inserted, updated and deleted no row.
``isCDCEnabledOnTable`` reads the metadata's ``delta.enableChangeDataFeed`` only, and ``changesToDF`` refuses a
range whose start version, or any ``metaData`` in it, has it off, naming that version.

Schemas (``checkBatchCdfReadSchemaIncompatibility`` there, with ``DeltaColumnMapping.
hasNoColumnMappingSchemaChanges`` and ``SchemaUtils.isReadCompatible``): rows are read in the schema the reader
chose; every schema the range holds (its start's, and each ``metaData`` after the start) must be readable in
it: with column mapping no column renamed or dropped (a physical name now under another logical name, or gone),
and always every column still there under the same name, of the same type (type widening included), and not
nullable where the read schema says NOT NULL.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from deltalog.core import actions as A
from deltalog.core import properties
from deltalog.core.file_facts import path_key
from deltalog.core.schema import PHYSICAL_NAME, top_level_fields, type_text

#: the columns a change reader adds to the table's (Delta Spark's and deltalake's names)
CHANGE_TYPE = "_change_type"
COMMIT_VERSION = "_commit_version"
COMMIT_TIMESTAMP = "_commit_timestamp"
CHANGE_COLUMNS = (CHANGE_TYPE, COMMIT_VERSION, COMMIT_TIMESTAMP)
#: the Delta types of those columns, as Delta Spark's ``cdcReadSchema`` appends them
CHANGE_COLUMN_TYPES = {CHANGE_TYPE: "string", COMMIT_VERSION: "long", COMMIT_TIMESTAMP: "timestamp"}

INSERT = "insert"
DELETE = "delete"
UPDATE_PREIMAGE = "update_preimage"
UPDATE_POSTIMAGE = "update_postimage"
CHANGE_TYPES = (INSERT, DELETE, UPDATE_PREIMAGE, UPDATE_POSTIMAGE)

_ENABLED_KEYS = ("delta.enableChangeDataFeed", "delta.enableChangeDataCapture")
_MERGE_ROW_METRICS = ("numTargetRowsInserted", "numTargetRowsUpdated", "numTargetRowsDeleted")


def recorded(configuration: Mapping[str, str]) -> bool:
    """Whether a version with this metadata records change data (its legacy spelling counts too)."""
    return any(properties.get_bool(configuration, key) for key in _ENABLED_KEYS)


# ---------------------------------------------------------------------------------------------- one version
@dataclass(frozen=True)
class ChangeFile:
    """One file a version's change rows come from, and which of its rows.

    ``change_type`` is the type of every row, or None for a change file, whose rows carry their own. The rows
    read are those ``deletion_vector`` does not mark, and of them, when ``selected_by`` is set, only those it
    marks: a deletion vector's diff is read as ``selected_by`` = the vector whose marks changed the rows,
    ``deletion_vector`` = the other one. ``path`` and ``partition_values`` (physical keys) are as the log
    spells them; ``stats`` and ``size`` serve pruning and the engines that read the file.
    """

    path: str
    partition_values: Mapping[str, str | None]
    change_type: str | None
    deletion_vector: A.DeletionVector | None = None
    selected_by: A.DeletionVector | None = None
    stats: str | None = None
    size: int | None = None

    @property
    def is_change_file(self) -> bool:
        return self.change_type is None


@dataclass(frozen=True)
class VersionChanges:
    """One version's change rows: where to read them, and the version's time (ms, as time travel resolves it)."""

    version: int
    timestamp: int
    files: tuple[ChangeFile, ...]


def _skips_file_actions(commit_info: Mapping[str, Any] | None) -> bool:
    """A MERGE that reports changing no row: its file actions are a rewrite that changed nothing."""
    if not commit_info or commit_info.get("operation") != "MERGE":
        return False
    metrics = commit_info.get("operationMetrics")
    return isinstance(metrics, Mapping) and all(str(metrics.get(k)) == "0" for k in _MERGE_ROW_METRICS)


def inserted(add: A.Add) -> ChangeFile:
    """An added file's live rows, read as inserts."""
    return ChangeFile(add.path, add.partition_values, INSERT, add.deletion_vector, None, add.stats, add.size)


def _removed(remove: A.Remove) -> ChangeFile:
    values = remove.partition_values if remove.partition_values is not None else {}
    return ChangeFile(remove.path, values, DELETE, remove.deletion_vector, None, remove.stats, remove.size)


def _replaced(add: A.Add, remove: A.Remove) -> list[ChangeFile]:
    """A file removed and added again in one version: the rows whose deletion-vector mark changed."""
    old, new = remove.deletion_vector, add.deletion_vector
    if old == new:
        return []
    out = []
    if new is not None:  # marked now, not before: deleted
        out.append(ChangeFile(add.path, add.partition_values, DELETE, old, new, add.stats, add.size))
    if old is not None:  # marked before, not now: inserted again
        out.append(ChangeFile(add.path, add.partition_values, INSERT, new, old, add.stats, add.size))
    return out


def version_files(actions: Sequence[A.Action], commit_info: Mapping[str, Any] | None = None) -> list[ChangeFile]:
    """The files (and rows of them) one version's change rows are read from, in the order of its actions."""
    cdc = [a for a in actions if isinstance(a, A.Cdc)]
    if cdc:
        return [ChangeFile(c.path, c.partition_values, None, size=c.size) for c in cdc]
    if _skips_file_actions(commit_info):
        return []
    adds = {path_key(a.path): a for a in actions if isinstance(a, A.Add) and a.data_change}
    removes = {path_key(a.path): a for a in actions if isinstance(a, A.Remove) and a.data_change}
    out: list[ChangeFile] = []
    seen: set[str] = set()
    for a in actions:
        if not isinstance(a, (A.Add, A.Remove)) or not a.data_change:
            continue
        key = path_key(a.path)
        if key in seen:
            continue
        seen.add(key)
        add, remove = adds.get(key), removes.get(key)
        if add is not None and remove is not None:
            out.extend(_replaced(add, remove))
        elif add is not None:
            out.append(inserted(add))
        elif remove is not None:
            out.append(_removed(remove))
    return out


def removes_data(actions: Sequence[A.Action]) -> bool:
    """Whether a version deletes or changes rows (a ``dataChange`` remove, a re-add with a new deletion vector):
    what an append-only reader cannot follow (Delta Spark's streaming source without ``skipChangeCommits``)."""
    return any(isinstance(a, A.Remove) and a.data_change for a in actions)


# ---------------------------------------------------------------------------------------------- schemas
def _physical_fields(schema: Mapping[str, Any], mapped: bool) -> dict[tuple[str, ...], str]:
    """Every (nested) struct field: its path of physical names -> its logical name (its own, not its path's).

    Unmapped, a field's logical name is its physical one (what a table upgraded to column mapping assigns).
    """
    out: dict[tuple[str, ...], str] = {}
    stack: list[tuple[tuple[str, ...], Any]] = [((), schema)]
    while stack:
        path, t = stack.pop()
        if not isinstance(t, Mapping):
            continue
        kind = t.get("type")
        if kind == "struct":
            for f in t.get("fields") or []:
                meta = f.get("metadata") or {}
                physical = str(meta.get(PHYSICAL_NAME, f["name"])) if mapped else f["name"]
                key = (*path, physical)
                out[key] = f["name"]
                stack.append((key, f.get("type")))
        elif kind == "array":
            stack.append(((*path, "element"), t.get("elementType")))
        elif kind == "map":
            stack.append(((*path, "key"), t.get("keyType")))
            stack.append(((*path, "value"), t.get("valueType")))
    return out


def _mapping_change(old: Mapping[str, Any], old_mode: str, new: Mapping[str, Any], new_mode: str) -> str | None:
    """A rename or drop between two column-mapped schemas (``old`` unmapped counts as upgraded in between)."""
    if new_mode == "none":
        return None
    before = _physical_fields(old, old_mode != "none")
    after = _physical_fields(new, True)
    for path, name in before.items():
        if path not in after:
            return f"column {name!r} was dropped"
        if after[path] != name:
            return f"column {name!r} was renamed to {after[path]!r}"
    return None


def _type_change(old: Any, new: Any, where: str) -> str | None:
    """Why values of Delta type ``old`` cannot be read as ``new`` (None when they can)."""
    if isinstance(old, Mapping) and isinstance(new, Mapping) and old.get("type") == new.get("type"):
        kind = old.get("type")
        if kind == "struct":
            return _struct_change(old, new, where + ".")
        if kind == "array":
            if old.get("containsNull", True) and not new.get("containsNull", True):
                return f"{where} elements became NOT NULL"
            return _type_change(old.get("elementType"), new.get("elementType"), where + ".element")
        if kind == "map":
            if old.get("valueContainsNull", True) and not new.get("valueContainsNull", True):
                return f"{where} values became NOT NULL"
            return _type_change(old.get("keyType"), new.get("keyType"), where + ".key") or _type_change(
                old.get("valueType"), new.get("valueType"), where + ".value"
            )
    if type_text(old) != type_text(new):
        return f"column {where!r} changed type from {type_text(old)} to {type_text(new)}"
    return None


def _struct_change(old: Mapping[str, Any], new: Mapping[str, Any], prefix: str = "") -> str | None:
    """Delta Spark's ``isReadCompatible(existing=old, read=new, forbidTightenNullability=true)``, with a reason."""
    fields = {f["name"].lower(): f for f in top_level_fields(new)}
    for f in top_level_fields(old):
        name = prefix + f["name"]
        now = fields.get(f["name"].lower())
        if now is None:
            return f"column {name!r} is not in the read schema"
        if now["name"] != f["name"]:
            return f"column {name!r} is {prefix + now['name']!r} in the read schema"
        if f.get("nullable", True) and not now.get("nullable", True):
            return f"column {name!r} became NOT NULL"
        problem = _type_change(f["type"], now["type"], name)
        if problem:
            return problem
    return None


def read_incompatibility(
    schema: Mapping[str, Any], mode: str, read_schema: Mapping[str, Any], read_mode: str
) -> str | None:
    """Why rows written under ``schema`` (column-mapping ``mode``) cannot be read in ``read_schema``, a later
    version's; None when they can (columns added since read as null)."""
    return _mapping_change(schema, mode, read_schema, read_mode) or _struct_change(schema, read_schema)


__all__ = [
    "CHANGE_COLUMNS",
    "CHANGE_COLUMN_TYPES",
    "CHANGE_TYPE",
    "CHANGE_TYPES",
    "COMMIT_TIMESTAMP",
    "COMMIT_VERSION",
    "DELETE",
    "INSERT",
    "UPDATE_POSTIMAGE",
    "UPDATE_PREIMAGE",
    "ChangeFile",
    "VersionChanges",
    "inserted",
    "read_incompatibility",
    "recorded",
    "removes_data",
    "version_files",
]
