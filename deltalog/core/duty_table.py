"""The duty table: what each writer feature obliges each operation to do.

PROTOCOL "Table Features": to write a table a writer must implement every feature in ``writerFeatures``. What
"implement" asks depends on what the writer does: row tracking numbers the rows of new files, change data feed
wants change files only when rows are copied, CHECK constraints concern new rows, and a checkpoint or a vacuum
adds no rows at all. So each known feature states, per operation, its duty:

* none: nothing to do for that operation (a CHECK constraint and a checkpoint);
* a rule module: deltalog meets the duty in that module (``row_tracking`` for an append to a row-tracking
  table). The duty counts as met only when the caller's path calls that module;
* refused, with the reason (identity values, Iceberg conversion, catalog ownership, unknown features).

This module is only the table, kept apart from the checks that apply it (:mod:`deltalog.core.feature_gate`) so
that supporting a new feature is one row here. Feature names are PROTOCOL.md's "Valid Feature Names in Table
Features", Delta Spark's ``TableFeature.scala`` and the ``protocol_rfcs/`` proposals.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from deltalog.core import properties
from deltalog.core.actions import Protocol
from deltalog.core.features import CATALOG_FEATURES
from deltalog.core.property_rules import CONSTRAINT_PREFIX
from deltalog.core.schema import walk_fields

# ------------------------------------------------------------------------------------------------ operations
APPEND = "append"  # new rows in new files, nothing removed
DELETE = "delete"  # whole files removed with dataChange=true
OVERWRITE = "overwrite"  # whole files removed and new rows added (partition replaceWhere, full overwrite)
REWRITE = "rewrite"  # files removed and some of their rows copied into new files (update, merge, delete)
REARRANGE = "rearrange"  # dataChange=false: the same rows in other files (compaction, OPTIMIZE)
#: a rearrangement whose data writer stored every copied row's id and commit version in the table's materialized
#: row-tracking columns (deltalog's OPTIMIZE and REORG PURGE); named by the caller, as RESTORE is
REARRANGE_KEEPING_IDS = "rearrange_keeping_ids"
DV_DELETE = "dv_delete"  # remove(path, old DV) + add(path, new DV)
METADATA = "metadata"  # metaData, protocol or domain changes only
RESTORE = "restore"
CHECKPOINT = "checkpoint"
CLEANUP = "cleanup"
VACUUM = "vacuum"
WRITE = "write"  # a commit of undeclared kind: every commit operation's duties (features.check_writable)

COMMITS = (APPEND, DELETE, OVERWRITE, REWRITE, REARRANGE, REARRANGE_KEEPING_IDS, DV_DELETE, METADATA, RESTORE)
MAINTENANCE = (CHECKPOINT, CLEANUP, VACUUM)
OPERATIONS = (*COMMITS, *MAINTENANCE, WRITE)
NEW_ROWS = frozenset({APPEND, OVERWRITE, REWRITE})
COPIES_ROWS = frozenset({REWRITE, REARRANGE, REARRANGE_KEEPING_IDS})
ADDS_FILES = frozenset({APPEND, OVERWRITE, REWRITE, REARRANGE, REARRANGE_KEEPING_IDS, DV_DELETE, RESTORE})
REMOVES_FILES = frozenset({DELETE, OVERWRITE, REWRITE, REARRANGE, REARRANGE_KEEPING_IDS, DV_DELETE, RESTORE})
REMOVES_DATA = frozenset({DELETE, OVERWRITE, REWRITE, DV_DELETE})

# ------------------------------------------------------------------------------------------------ rule modules
#: the modules whose duties deltalog's paths meet today: per-commit rules (append-only), the checkpoint
#: writer (V2 policy, physical names, DV and row-tracking fields, domains), checkpoint protection (log
#: cleanup keeps every checkpoint below ``delta.requireCheckpointProtectionBeforeVersion`` unless it
#: truncates past it, and a checkpoint is gated on its own version's protocol), the feature duties every
#: commit runs (:mod:`deltalog.core.feature_duties`), and in-commit timestamps and row tracking
#: (:mod:`deltalog.table.attempts`). Wiring a module adds its name.
DEFAULT_IMPLEMENTED: frozenset[str] = frozenset(
    {
        "commit_rules",
        "checkpoint",
        "checkpoint_protection",
        "cdf",
        "clustering",
        "column_mapping",
        "constraints",
        "deletion_vectors",
        "ict",
        "row_tracking",
    }
)
#: every rule module, for callers (and tests) whose path calls them all
ALL_MODULES: frozenset[str] = DEFAULT_IMPLEMENTED | {
    "cdf",
    "clustering",
    "column_mapping",
    "constraints",
    "deletion_vectors",
}


@dataclass(frozen=True)
class Duty:
    """What a feature asks of one operation: nothing, a rule ``module``, or a refusal (``refused``)."""

    reason: str = ""
    module: str | None = None
    refused: bool = False


NONE = Duty()


def _refuse(reason: str) -> Duty:
    return Duty(reason, refused=True)


@dataclass(frozen=True)
class Table:
    """The plain values gating looks at: protocol, configuration and schema JSON."""

    protocol: Protocol
    configuration: Mapping[str, str]
    schema: Any

    def flag(self, key: str) -> bool:
        return properties.get_bool(self.configuration, key)

    def column_metadata(self, marker: str) -> bool:
        """Whether any column's metadata has key ``marker`` (or a key starting with it, when it ends in '.')."""
        for at in walk_fields(self.schema):
            meta = at.field.get("metadata")
            for key in meta if isinstance(meta, Mapping) else ():
                if key == marker or (marker.endswith(".") and str(key).startswith(marker)):
                    return True
        return False


# ------------------------------------------------------------------------------------------------ duties
Rule = Callable[[str, Table], Duty]


def _none(op: str, t: Table) -> Duty:
    return NONE


def _append_only(op: str, t: Table) -> Duty:
    if op in REMOVES_DATA and t.flag("delta.appendOnly"):
        return Duty("delta.appendOnly=true forbids removing data", "commit_rules")
    return NONE


def _row_rules(active: Callable[[Table], bool], what: str) -> Rule:
    def rule(op: str, t: Table) -> Duty:
        if op in NEW_ROWS and active(t):
            return Duty(
                f"new rows must satisfy the table's {what}: a data writer checks them and the commit "
                "records that it did",
                "constraints",
            )
        return NONE

    return rule


def _identity(op: str, t: Table) -> Duty:
    if op in NEW_ROWS and t.column_metadata("delta.identity."):
        return _refuse(
            "identity columns need values generated above delta.identity.highWaterMark and the mark "
            "advanced in the same commit, which deltalog does not do"
        )
    return NONE


def _cdf(op: str, t: Table) -> Duty:
    on = t.flag("delta.enableChangeDataFeed") or t.flag("delta.enableChangeDataCapture")
    if on and op == REWRITE:  # appends, whole-file deletes and dataChange=false commits need none
        return Duty("change data feed is on: rows copied by a rewrite need change files (cdc actions)", "cdf")
    return NONE


def _column_mapping(op: str, t: Table) -> Duty:
    mode = properties.column_mapping_mode(t.configuration)
    if mode != "none" and op in ADDS_FILES | {METADATA} and op != RESTORE:
        return Duty(
            f"column mapping ({mode} mode): new columns get ids and physical names, and partition values "
            "and stats are keyed by physical names",
            "column_mapping",
        )
    return NONE


def _deletion_vectors(op: str, t: Table) -> Duty:
    if t.flag("delta.enableDeletionVectors") and op in (ADDS_FILES | REMOVES_FILES) - {RESTORE}:
        return Duty(
            "deletion vectors are on: new DVs are validated and removes carry the file's current DV", "deletion_vectors"
        )
    return NONE


def _ict(op: str, t: Table) -> Duty:
    if op in COMMITS and t.flag("delta.enableInCommitTimestamps"):
        return Duty(
            "in-commit timestamps are on: commitInfo comes first with a strictly increasing inCommitTimestamp", "ict"
        )
    return NONE


def _row_tracking(op: str, t: Table) -> Duty:
    if t.flag("delta.rowTrackingSuspended") or op not in ADDS_FILES | REMOVES_FILES:
        return NONE
    if op in COPIES_ROWS and op != REARRANGE_KEEPING_IDS and t.flag("delta.enableRowTracking"):
        return _refuse(
            "row tracking is enabled: rows copied to new files must keep their row ids and commit "
            "versions in materialized columns, which deltalog does not write"
        )
    return Duty(
        "row tracking: new files get baseRowId above the high-water mark and defaultRowCommitVersion", "row_tracking"
    )


def _on(operations: Collection[str], duty: Duty) -> Rule:
    """A rule that depends on the operation only: ``duty`` for ``operations``, nothing for the others."""
    ops = frozenset(operations)
    return lambda op, t: duty if op in ops else NONE


_clustering = _on(
    (ADDS_FILES - {RESTORE}) | {METADATA},
    Duty(
        "clustered table: new files need stats on the clustering columns and the delta.clustering "
        "domain follows schema and clustering changes",
        "clustering",
    ),
)


def _iceberg(op: str, t: Table) -> Duty:
    active = any(t.flag(k) for k in ("delta.enableIcebergCompatV1", "delta.enableIcebergCompatV2"))
    if active and (op in COMMITS or op == VACUUM):
        return _refuse(
            "Iceberg compatibility (UniForm) is on: commits must keep Iceberg's metadata, partition "
            "values inside data files and field ids, and its metadata files live in the table "
            "directory; deltalog does none of that"
        )
    return NONE


_checkpoint_protection = _on(
    (CHECKPOINT, CLEANUP),
    Duty(
        "checkpoint protection (protocol_rfcs/checkpoint-protection.md) restricts checkpoints and "
        "cleanup below delta.requireCheckpointProtectionBeforeVersion",
        "checkpoint_protection",
    ),
)
_materialize_partitions = _on(
    NEW_ROWS, _refuse("materializePartitionColumns needs partition columns inside every data file")
)


def _always_refused(reason: str) -> Rule:
    return lambda op, t: _refuse(reason)


_v2_checkpoint = _on(
    (CHECKPOINT,),
    Duty("V2 checkpoints: never multi-part, classic or UUID-named per delta.checkpointPolicy", "checkpoint"),
)


_CATALOG = _always_refused("the table's commits are owned by a catalog, not by the file system")
_PROPOSAL = "is a proposal (protocol_rfcs/) whose duties deltalog does not implement"
#: every writer feature deltalog knows, with its duty per operation
RULES: Mapping[str, Rule] = {
    "appendOnly": _append_only,
    "invariants": _row_rules(lambda t: t.column_metadata("delta.invariants"), "column invariants"),
    "checkConstraints": _row_rules(
        lambda t: any(str(k).lower().startswith(CONSTRAINT_PREFIX) for k in t.configuration), "CHECK constraints"
    ),
    "generatedColumns": _row_rules(lambda t: t.column_metadata("delta.generationExpression"), "generated columns"),
    "allowColumnDefaults": _row_rules(lambda t: t.column_metadata("CURRENT_DEFAULT"), "column defaults"),
    "identityColumns": _identity,
    "changeDataFeed": _cdf,
    "columnMapping": _column_mapping,
    "deletionVectors": _deletion_vectors,
    "inCommitTimestamp": _ict,
    "rowTracking": _row_tracking,
    "domainMetadata": _none,
    "clustering": _clustering,
    "v2Checkpoint": _v2_checkpoint,
    "timestampNtz": _none,
    "vacuumProtocolCheck": _none,  # this gate is the writer-protocol check it asks VACUUM to run
    "typeWidening": _none,  # duties arise only when a type is changed (core.type_widening, change_column_type)
    "typeWidening-preview": _none,
    "variantType": _none,
    "variantType-preview": _none,
    "variantShredding": _none,  # writers may shred variants, never must; deltalog writes them unshredded
    "variantShredding-preview": _none,
    "icebergCompatV1": _iceberg,
    "icebergCompatV2": _iceberg,
    "checkpointProtection": _checkpoint_protection,
    "materializePartitionColumns": _materialize_partitions,
    **{name: _CATALOG for name in CATALOG_FEATURES},
    "coordinatedCommits-preview": _always_refused("commits go through a commit coordinator"),
    **{
        n: _always_refused(_PROPOSAL)
        for n in ("collations", "icebergCompatV3", "icebergWriterCompatV1", "icebergWriterCompatV3")
    },
}


# ------------------------------------------------------------------------------------------------ lookup
def duty(feature: str, operation: str, table: Table) -> Duty:
    """The duty ``feature`` puts on ``operation`` for this table; unknown features are refused."""
    rule = RULES.get(feature)
    if rule is None:
        return _refuse("is unknown to deltalog, so it may add duties deltalog cannot meet")
    if operation == WRITE:
        duties = [rule(op, table) for op in COMMITS]
        return next((d for d in duties if d.refused), next((d for d in duties if d.module), NONE))
    return rule(operation, table)


__all__ = [
    "ADDS_FILES",
    "ALL_MODULES",
    "APPEND",
    "CHECKPOINT",
    "CLEANUP",
    "COMMITS",
    "COPIES_ROWS",
    "DEFAULT_IMPLEMENTED",
    "DELETE",
    "DV_DELETE",
    "MAINTENANCE",
    "METADATA",
    "NEW_ROWS",
    "NONE",
    "OPERATIONS",
    "OVERWRITE",
    "REARRANGE",
    "REARRANGE_KEEPING_IDS",
    "REMOVES_DATA",
    "REMOVES_FILES",
    "RESTORE",
    "REWRITE",
    "RULES",
    "VACUUM",
    "WRITE",
    "Duty",
    "Rule",
    "Table",
    "duty",
]
