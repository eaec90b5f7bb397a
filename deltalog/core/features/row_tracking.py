"""Row tracking: the row ids and row commit versions a commit assigns, and how a retry renumbers them.

PROTOCOL "Row Tracking": **supported** when ``rowTracking`` is in ``writerFeatures`` (with ``domainMetadata``),
**enabled** when ``delta.enableRowTracking=true`` as well, **suspended** when ``delta.rowTrackingSuspended=true``.
While supported and not suspended, every committed ``add`` carries ``baseRowId`` (its rows take the ids
``baseRowId .. baseRowId + numRecords - 1``, numRecords counting *physical* rows) above the table's high-water
mark, and ``defaultRowCommitVersion`` = the version it is committed in; the commit records the new mark in the
``delta.rowTracking`` domain as ``{"rowIdHighWaterMark": n}``. Re-committed adds and removes copy both fields
from the path's last committed add. When enabled, rows copied into new files must keep their ids in
materialized columns; enabling needs materialized column names and a backfill of every live file.

Delta Spark (facts, ``spark/src/main/scala/org/apache/spark/sql/delta/``): ``RowId.assignFreshRowIds`` numbers
adds without a ``baseRowId`` from the read mark + 1 and fails an add without stats
(``DeltaErrors.rowIdAssignmentWithoutStats``); ``ConflictChecker.reassignOverlappingRowIds`` renumbers, from
the winner's mark + 1, the adds whose ``baseRowId`` is missing or above *our read* mark and replaces our
domain action; ``reassignRowCommitVersions`` moves a ``defaultRowCommitVersion`` equal to the winner's
version, or missing (the winner added the feature), to the next version. A missing domain means mark -1.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

import orjson

from deltalog.core import actions as A
from deltalog.core.features import properties
from deltalog.core.features.configuration import TableConfiguration
from deltalog.core.features.kinds import (
    ADDS_FILES,
    COPIES_ROWS,
    NONE,
    REARRANGE_KEEPING_IDS,
    REMOVES_FILES,
    Obligation,
    Rule,
)
from deltalog.core.features.protocol import supported_features
from deltalog.core.files.facts import NO_FILES, KnownFiles, num_records
from deltalog.core.log.paths import LOG_DIR, commit_name
from deltalog.core.schema import parse_schema, physical_names, walk_fields
from deltalog.errors import CorruptLogError, InvalidCommitError, UnsupportedFeatureError

FEATURE = "rowTracking"
DOMAIN = "delta.rowTracking"
ENABLED = "delta.enableRowTracking"
SUSPENDED = "delta.rowTrackingSuspended"
MATERIALIZED_ROW_ID = "delta.rowTracking.materializedRowIdColumnName"
MATERIALIZED_COMMIT_VERSION = "delta.rowTracking.materializedRowCommitVersionColumnName"
PRESERVED_TAG = "delta.rowTracking.preserved"
#: the mark of a table that has assigned no row id yet: the first id is 0
NO_MARK = -1


def supported(protocol: A.Protocol) -> bool:
    return FEATURE in supported_features(protocol)


def enabled(protocol: A.Protocol, configuration: Mapping[str, str]) -> bool:
    return supported(protocol) and properties.get_bool(configuration, ENABLED)


def suspended(configuration: Mapping[str, str]) -> bool:
    return properties.get_bool(configuration, SUSPENDED)


def assigns(protocol: A.Protocol, configuration: Mapping[str, str]) -> bool:
    """Whether commits must assign row ids: supported (enabled or not) and not suspended."""
    return supported(protocol) and not suspended(configuration)


# ------------------------------------------------------------------------------------------------ the domain


def parse_mark(configuration: str, source: str = DOMAIN) -> int:
    """The ``rowIdHighWaterMark`` of a ``delta.rowTracking`` domain configuration (other keys are ignored)."""
    try:
        doc = orjson.loads(configuration)
    except orjson.JSONDecodeError as exc:
        raise CorruptLogError(f"{source}: domain {DOMAIN} is not valid JSON ({exc})", path=source) from None
    mark = doc.get("rowIdHighWaterMark") if isinstance(doc, dict) else None
    if not isinstance(mark, int) or isinstance(mark, bool) or mark < NO_MARK:
        raise CorruptLogError(
            f"{source}: domain {DOMAIN} has no integer rowIdHighWaterMark: {configuration!r}", path=source
        )
    return mark


def high_water_mark(domains: Mapping[str, str] | Iterable[A.DomainMetadata]) -> int:
    """The mark of a snapshot's (or a winner's) domains: ``{domain: configuration}`` or domain actions.
    Without a ``delta.rowTracking`` domain (or with its tombstone) it is :data:`NO_MARK`."""
    if isinstance(domains, Mapping):
        conf = domains.get(DOMAIN)
        return parse_mark(conf) if conf is not None else NO_MARK
    for d in domains:
        if d.domain == DOMAIN and not d.removed:
            return parse_mark(d.configuration)
    return NO_MARK


def domain_action(mark: int) -> A.DomainMetadata:
    return A.DomainMetadata(DOMAIN, orjson.dumps({"rowIdHighWaterMark": mark}).decode())


# ------------------------------------------------------------------------------------------------ assigning


@dataclass(frozen=True)
class Assignment:
    """A commit's actions with row tracking applied, and the high-water mark they leave."""

    actions: tuple[A.Action, ...]
    high_water_mark: int


def _fresh(add: A.Add, mark: int) -> tuple[int, int]:
    """(baseRowId, new mark) for an add numbered after ``mark``: physical numRecords is required."""
    n = num_records(add)
    if n is None:
        raise InvalidCommitError(
            f"{add.path}: row tracking numbers rows by the file's numRecords, and its stats have none",
            rule="row-tracking",
        )
    return mark + 1, mark + n


def _copy_fields(action: A.Add | A.Remove, base: int | None, version: int | None) -> tuple[int | None, int | None]:
    """The fields a re-committed action keeps: the path's last add's; the action's own must agree with them."""
    for mine, theirs, name in (
        (action.base_row_id, base, "baseRowId"),
        (action.default_row_commit_version, version, "defaultRowCommitVersion"),
    ):
        if mine is not None and theirs is not None and mine != theirs:
            raise InvalidCommitError(
                f"{action.path}: {name}={mine} differs from the {theirs} of the path's last add; re-committed "
                "files keep their row ids",
                rule="row-tracking",
            )
    return (base if base is not None else action.base_row_id), (
        version if version is not None else action.default_row_commit_version
    )


def assign(actions: Sequence[A.Action], *, read_mark: int, version: int, known: KnownFiles = NO_FILES) -> Assignment:
    """Row tracking for a first attempt at ``version``, the read snapshot's mark being ``read_mark``.

    ``known`` holds the last committed add of each path the commit re-commits or removes (live files; for a
    restore, the target's). Such adds and removes copy both fields from it; adds of other paths get fresh
    ids above the mark, in order, and ``defaultRowCommitVersion`` = ``version``. A fresh add that already
    carries either field is refused: row ids come from the commit, never from the caller. The commit may
    not carry its own ``delta.rowTracking`` domain; one with the new mark is appended when ids were assigned.
    """
    mark = read_mark
    out: list[A.Action] = []
    for a in actions:
        if isinstance(a, A.DomainMetadata) and a.domain == DOMAIN:
            raise InvalidCommitError(
                f"domain {DOMAIN} is written by the commit, not by the caller", rule="row-tracking"
            )
        if isinstance(a, (A.Add, A.Remove)):
            last = known.get(a.path)
            if last is not None and (last.base_row_id is not None or isinstance(a, A.Remove)):
                base, dv = _copy_fields(a, last.base_row_id, last.default_row_commit_version)
                if dv is None and isinstance(a, A.Add):
                    dv = version  # its last add predates commit versions: this commit is its first with one
                a = replace(a, base_row_id=base, default_row_commit_version=dv)
            elif isinstance(a, A.Add):
                if last is None and (a.base_row_id is not None or a.default_row_commit_version is not None):
                    raise InvalidCommitError(
                        f"{a.path}: a new file's baseRowId/defaultRowCommitVersion are assigned by the commit",
                        rule="row-tracking",
                    )
                base, mark = _fresh(a, mark)
                a = replace(a, base_row_id=base, default_row_commit_version=version)
        out.append(a)
    if mark != read_mark:
        out.append(domain_action(mark))
    return Assignment(tuple(out), mark)


def reassign(
    actions: Sequence[A.Action], *, read_mark: int, winner_mark: int, attempted_version: int, new_version: int
) -> Assignment:
    """Row tracking for a retry at ``new_version`` after a winner took ``attempted_version``.

    Adds whose ``baseRowId`` is missing or above ``read_mark`` (numbered by us, or never numbered because the
    winner just added the feature) are renumbered from ``winner_mark`` + 1; copied ids, at or below the read
    mark, stay. A ``defaultRowCommitVersion`` equal to ``attempted_version``, or missing, becomes
    ``new_version``. Our ``delta.rowTracking`` domain is replaced by one with the new mark. Pass the result's
    ``high_water_mark`` as ``read_mark`` and ``winner_mark`` of the next retry's winner.
    """
    if winner_mark < read_mark:
        raise CorruptLogError(
            f"version {attempted_version}: its row-id high-water mark {winner_mark} is below the {read_mark} "
            "it was committed over (the mark never decreases)"
        )
    mark = winner_mark
    out: list[A.Action] = []
    for a in actions:
        if isinstance(a, A.DomainMetadata) and a.domain == DOMAIN:
            continue
        if isinstance(a, A.Add):
            if a.base_row_id is not None and (not isinstance(a.base_row_id, int) or isinstance(a.base_row_id, bool)):
                raise InvalidCommitError(
                    f"{a.path}: baseRowId {a.base_row_id!r} is not an integer", rule="row-tracking"
                )
            if a.base_row_id is None or a.base_row_id > read_mark:
                base, mark = _fresh(a, mark)
                a = replace(a, base_row_id=base)
            if a.default_row_commit_version in (None, attempted_version):
                a = replace(a, default_row_commit_version=new_version)
        out.append(a)
    if mark != winner_mark:
        out.append(domain_action(mark))
    return Assignment(tuple(out), mark)


# ------------------------------------------------------------------------------------------------ attempts


def mark_after(read_mark: int, winners: Iterable[tuple[int, Sequence[A.Action]]]) -> int:
    """The high-water mark a retry numbers from: the last mark among ``(version, actions)`` of the winners,
    in order, over ``read_mark``; a winner whose mark is below the one before is a damaged log."""
    mark = read_mark
    for version, actions in winners:
        domains = [a for a in actions if isinstance(a, A.DomainMetadata)]
        if not any(d.domain == DOMAIN and not d.removed for d in domains):
            continue
        theirs = high_water_mark(domains)
        if theirs < mark:
            raise CorruptLogError(
                f"version {version}: its row-id high-water mark {theirs} is below {mark} (the mark never decreases)",
                path=f"{LOG_DIR}/{commit_name(version)}",
            )
        mark = theirs
    return mark


def attempt(
    actions: Sequence[A.Action],
    info: A.CommitInfo,
    *,
    protocol: A.Protocol,
    configuration: Mapping[str, str],
    mark: int,
    version: int,
    known: KnownFiles,
) -> tuple[list[A.Action], A.CommitInfo]:
    """What row tracking makes of one attempt at ``version`` numbering from ``mark`` (:func:`mark_after`): the
    actions with row ids (:func:`assign`), and the commitInfo with the preserved tag an enabled table records.
    The caller asks :func:`assigns` first (``known`` may cost the file list, and is needed only then)."""
    assigned = list(assign(actions, read_mark=mark, version=version, known=known).actions)
    tags = preserved_tags(protocol, configuration, copies_rows=False)
    if tags:
        other = dict(info.other)
        other["tags"] = {**dict(other.get("tags") or {}), **tags}
        info = replace(info, other=other)
    return assigned, info


def enable(
    metadata: A.Metadata,
    before: Mapping[str, str] | None,
    protocol: A.Protocol,
    live_files: Callable[[], int],
) -> A.Metadata:
    """A metaData switching ``delta.enableRowTracking`` on, with its materialized column names chosen (as Delta
    Spark names them) and the enablement checked (:func:`check_enablement`: refused on a table with live files,
    which would need a backfill); any other metaData as it is. ``before`` is the read version's configuration
    (None for a create), ``live_files`` asked only when the commit enables it on an existing table."""
    conf = dict(metadata.configuration)
    if not properties.get_bool(conf, ENABLED) or (before is not None and properties.get_bool(before, ENABLED)):
        return metadata
    conf.setdefault(MATERIALIZED_ROW_ID, f"_row-id-col-{uuid.uuid4()}")
    conf.setdefault(MATERIALIZED_COMMIT_VERSION, f"_row-commit-version-col-{uuid.uuid4()}")
    schema = parse_schema(metadata.schema_string)
    names = [at.field.get("name", "") for at in walk_fields(schema)]
    mode = properties.column_mapping_mode(metadata.configuration)
    check_enablement(
        before,
        conf,
        protocol,
        live_files=live_files() if before is not None else 0,
        column_names=[*names, *physical_names(schema, mode).values()],
    )
    return replace(metadata, configuration=conf)


# ------------------------------------------------------------------------------------------------ refusals


def check_rewrite(protocol: A.Protocol, configuration: Mapping[str, str], *, preserves_ids: bool = False) -> None:
    """A commit that copies rows into new files (update, merge, compaction). Where row tracking is only
    supported the copies simply get fresh ids; where it is enabled their ids must be preserved in the
    materialized columns, which only a data writer can do (``preserves_ids``)."""
    if enabled(protocol, configuration) and not suspended(configuration) and not preserves_ids:
        raise UnsupportedFeatureError(
            "cannot rewrite rows: row tracking is enabled (delta.enableRowTracking=true), so copied rows must keep "
            "their row ids and commit versions in materialized columns, which this write does not do",
            feature=FEATURE,
        )


def preserved_tags(protocol: A.Protocol, configuration: Mapping[str, str], *, copies_rows: bool) -> dict[str, str]:
    """The commitInfo ``tags`` entry PROTOCOL asks for on enabled tables: ``true`` when no row was copied (or
    all ids were preserved, which deltalog never claims), ``false`` otherwise; nothing when not enabled."""
    if not enabled(protocol, configuration):
        return {}
    return {PRESERVED_TAG: "false" if copies_rows else "true"}


def check_enablement(
    before: Mapping[str, str] | None,
    after: Mapping[str, str],
    protocol_after: A.Protocol,
    *,
    live_files: int,
    column_names: Collection[str] = (),
) -> None:
    """Refuse switching ``delta.enableRowTracking`` on where it needs what deltalog does not do.

    PROTOCOL: enabling needs the feature (with ``domainMetadata``), materialized column names that no column
    uses, and ``baseRowId``/``defaultRowCommitVersion`` on every live add (a backfill). deltalog has no
    backfill: enabling is refused on a table with live files; on an empty or new table it needs the feature
    and both column names, distinct from each other and from ``column_names`` (every logical and physical
    column name of the schema).
    """
    if not properties.get_bool(after, ENABLED) or (before is not None and properties.get_bool(before, ENABLED)):
        return
    if not supported(protocol_after) or "domainMetadata" not in supported_features(protocol_after):
        raise UnsupportedFeatureError(
            f"{ENABLED}=true needs the rowTracking and domainMetadata writer features in the protocol", feature=FEATURE
        )
    if suspended(after):
        raise UnsupportedFeatureError(f"{ENABLED}=true cannot be set while {SUSPENDED}=true", feature=FEATURE)
    if live_files:
        raise UnsupportedFeatureError(
            f"cannot enable row tracking on a table with {live_files} live files: every one needs row ids first "
            "(a backfill), which deltalog does not implement",
            feature=FEATURE,
        )
    names = [after.get(MATERIALIZED_ROW_ID), after.get(MATERIALIZED_COMMIT_VERSION)]
    if not all(names) or names[0] == names[1]:
        raise UnsupportedFeatureError(
            f"{ENABLED}=true needs distinct {MATERIALIZED_ROW_ID} and {MATERIALIZED_COMMIT_VERSION}", feature=FEATURE
        )
    taken = {str(c).lower() for c in column_names}
    clash = [n for n in names if str(n).lower() in taken]
    if clash:
        raise UnsupportedFeatureError(
            f"materialized row-tracking column name {clash[0]!r} is already a column of the table", feature=FEATURE
        )


#: the check a rewrite owes a table with row tracking enabled: copied rows keep their row ids and commit versions
#: in the materialized columns. Met only by a commit whose writer declares it wrote them (MERGE, UPDATE, and the
#: rewrites of DELETE and replace_where; the ``row_ids_preserved`` declaration), never by default: a commit of files
#: it did not write cannot say what they hold
ROW_ID_PRESERVATION = "row_id_preservation"


def obligation(kind: str, table: TableConfiguration) -> Obligation:
    """Commits that add or remove files number rows; copying rows, where ids must be preserved, is met only by a
    writer that declares it preserved them (:data:`ROW_ID_PRESERVATION`)."""
    if table.properties.row_tracking_suspended or kind not in ADDS_FILES | REMOVES_FILES:
        return NONE
    if kind in COPIES_ROWS and kind != REARRANGE_KEEPING_IDS and table.properties.enable_row_tracking:
        return Obligation(
            "row tracking is enabled: rows copied to new files must keep their row ids and commit "
            "versions in materialized columns, which only deltalog's data writers (MERGE, UPDATE, DELETE, "
            "replace_where, OPTIMIZE) write",
            ROW_ID_PRESERVATION,
        )
    return Obligation(
        "row tracking: new files get baseRowId above the high-water mark and defaultRowCommitVersion", "row_tracking"
    )


OBLIGATIONS: Mapping[str, Rule] = {FEATURE: obligation}


__all__ = [
    "OBLIGATIONS",
    "DOMAIN",
    "ENABLED",
    "FEATURE",
    "MATERIALIZED_COMMIT_VERSION",
    "MATERIALIZED_ROW_ID",
    "NO_MARK",
    "PRESERVED_TAG",
    "ROW_ID_PRESERVATION",
    "SUSPENDED",
    "Assignment",
    "assign",
    "assigns",
    "attempt",
    "enable",
    "mark_after",
    "check_enablement",
    "check_rewrite",
    "domain_action",
    "enabled",
    "high_water_mark",
    "parse_mark",
    "preserved_tags",
    "reassign",
    "supported",
    "suspended",
]
