"""The checks every commit runs, one per feature that has any: append-only, deletion vectors, change data feed,
column mapping, clustering, identity columns and the row rules (CHECK constraints, invariants, generated
columns).

Each feature's rules live in its own module (:mod:`~deltalog.core.features.append_only`,
:mod:`~deltalog.core.features.deletion_vectors`, :mod:`~deltalog.core.features.cdf`,
:mod:`~deltalog.core.features.column_mapping`, :mod:`~deltalog.core.features.clustering`,
:mod:`~deltalog.core.features.constraints`); this module decides which of them a commit owes and runs them in one
place, so appends, DDL, restores and data-plane writes all meet them (:mod:`deltalog.table.commit.prepare` calls
:func:`check_commit` after :func:`~deltalog.core.commit.rules.prepare_commit`). Several checks turn on facts only
the writer knows (whether new files hold rows copied from removed ones, whether its change files cover the
commit, whether someone validated the rows): the writer states them in :class:`Declarations`, and what it vouched
for is recorded in ``commitInfo``.

Re-committed files (a path the commit also removes, a ``dataChange=false`` re-add, a RESTORE's re-adds) keep
the statistics and keys they were written with: only new files owe clustering statistics and physical keys.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from deltalog.core import actions as A
from deltalog.core.features import (
    append_only,
    cdf,
    clustering,
    column_mapping,
    constraints,
    deletion_vectors,
    identity,
    row_tracking,
)
from deltalog.core.features.obligations import DEFAULT_IMPLEMENTED
from deltalog.core.files.facts import NO_FILES, KnownFiles, path_key
from deltalog.core.schema import PHYSICAL_NAME, parse_schema, top_level_fields
from deltalog.errors import InvalidArgumentError, UnsupportedFeatureError

#: operation names whose re-adds are old files brought back, not new rows (Delta Spark's RESTORE)
RESTORE_OPERATIONS = frozenset({"RESTORE"})


@dataclass(frozen=True)
class Declarations:
    """What the writer states about its commit, which the log cannot show.

    ``copies_rows``: new files hold rows copied from files the commit removes (an update, a merge, a delete
    without deletion vectors); None: not stated, which counts as copying when the commit removes and adds.
    ``cdc_covers_all``: its ``cdc`` files hold every change of the commit, inserts included.
    ``rows_validated`` / ``existing_rows_validated``: :data:`~deltalog.core.features.constraints.CHECKED` or
    :data:`~deltalog.core.features.constraints.ATTESTED` when the new rows / the table's rows satisfy its row rules.
    ``row_ids_preserved``: rows copied into new files carry their row ids and commit versions in the table's
    materialized row-tracking columns (what a rewrite owes a table with row tracking enabled).
    ``identity_runs``: the identity values the data writer generated (:class:`~deltalog.core.features.identity.Run`).
    ``identity_preserved``: rows copied into new files keep their identity values as they were, and only new rows
    got generated ones (what a rewrite owes a table with identity columns: deltalog's data writer does it).
    """

    copies_rows: bool | None = None
    cdc_covers_all: bool = False
    rows_validated: str | None = None
    existing_rows_validated: str | None = None
    row_ids_preserved: bool = False
    #: the identity values the data writer generated into the commit's files (moved when another writer's
    #: commit took them first)
    identity_runs: tuple[identity.Run, ...] = ()
    identity_preserved: bool = False

    @property
    def implemented(self) -> frozenset[str]:
        """The feature checks this commit meets: every commit's, plus the preservation of row ids and of identity
        values when the writer declared it (:data:`~deltalog.core.features.row_tracking.ROW_ID_PRESERVATION`,
        :data:`~deltalog.core.features.identity.PRESERVATION`)."""
        extra = {row_tracking.ROW_ID_PRESERVATION} if self.row_ids_preserved else set()
        if self.identity_preserved:
            extra.add(identity.PRESERVATION)
        return DEFAULT_IMPLEMENTED | extra if extra else DEFAULT_IMPLEMENTED


NOTHING_DECLARED = Declarations()


def validation(value: bool | str | None, what: str) -> str | None:
    """A public ``*_validated`` argument as the record keeps it: True is the caller's attestation."""
    if value is None or value is False:
        return None
    if value is True:
        return constraints.ATTESTED
    if value in (constraints.ATTESTED, constraints.CHECKED):
        return str(value)
    raise InvalidArgumentError(
        f"{what} is True (you validated the rows), {constraints.CHECKED!r} (deltalog's data writer checked them) "
        f"or False, not {value!r}"
    )


def needs_known_files(actions: Sequence[A.Action], protocol: A.Protocol) -> bool:
    """Whether the deletion-vector rules need the live add of the paths this commit touches: when it removes
    a file on a table that supports deletion vectors (the remove must name the file's live vector), or when
    an action carries a vector. A plain append of new files needs none, so it never loads the file list
    (as Delta Spark, which does not look new files up in the table either)."""
    files = [a for a in actions if isinstance(a, (A.Add, A.Remove))]
    if any(a.deletion_vector is not None for a in files):
        return True
    return deletion_vectors.supported(protocol) and any(isinstance(a, A.Remove) for a in files)


def touched_paths(actions: Sequence[A.Action], root: str | None = None) -> frozenset[str]:
    """The canonical paths of the commit's adds and removes (what :class:`KnownFiles` must hold)."""
    return frozenset(path_key(a.path, root) for a in actions if isinstance(a, (A.Add, A.Remove)))


def new_files(actions: Sequence[A.Action], operation: str) -> list[A.Add]:
    """Adds of files the commit writes: not re-adds of a path it removes, nor a RESTORE's."""
    if operation in RESTORE_OPERATIONS:
        return []
    removed = {path_key(a.path) for a in actions if isinstance(a, A.Remove)}
    return [a for a in actions if isinstance(a, A.Add) and path_key(a.path) not in removed]


def _copies(actions: Sequence[A.Action], stated: bool | None) -> bool:
    """Whether the commit copies rows into new files: as the writer states it, else whenever it removes files
    with ``dataChange=true`` and adds others (what the log alone cannot rule out)."""
    if stated is not None:
        return stated and any(isinstance(a, A.Add) and a.data_change for a in actions)
    removed = {path_key(a.path) for a in actions if isinstance(a, A.Remove) and a.data_change}
    return bool(removed) and any(
        isinstance(a, A.Add) and a.data_change and path_key(a.path) not in removed for a in actions
    )


def _physical_partition_keys(schema: Mapping[str, Any], partition_columns: Sequence[str], mode: str) -> list[str]:
    if mode == "none":
        return list(partition_columns)
    fields = {f["name"]: f for f in top_level_fields(schema)}
    out = []
    for c in partition_columns:
        meta = fields.get(c, {}).get("metadata")
        out.append(str(meta.get(PHYSICAL_NAME, c)) if isinstance(meta, Mapping) else c)
    return out


def _clustering_columns(
    actions: Sequence[A.Action], domains: Mapping[str, A.DomainMetadata]
) -> tuple[bool, tuple[clustering.ColumnPath, ...]]:
    """(whether the commit changes the clustering domain, the clustering columns after the commit)."""
    for a in actions:
        if isinstance(a, A.DomainMetadata) and a.domain == clustering.DOMAIN:
            return True, () if a.removed else clustering.parse(a.configuration)
    current = domains.get(clustering.DOMAIN)
    return False, clustering.parse(current.configuration) if current is not None and not current.removed else ()


def check_commit(
    actions: Sequence[A.Action],
    *,
    protocol: A.Protocol,
    metadata: A.Metadata,
    read_metadata: A.Metadata | None,
    domains: Mapping[str, A.DomainMetadata],
    operation: str,
    declared: Declarations = NOTHING_DECLARED,
    known: KnownFiles = NO_FILES,
    has_rows: Callable[[], bool] = lambda: False,
    source: str = "the table",
) -> dict[str, Any]:
    """Run every feature check this commit owes; returns what to merge into its ``commitInfo``.

    ``actions`` are prepared (:func:`~deltalog.core.commit.rules.prepare_commit`): ``protocol`` and ``metadata``
    are those in force after the commit, ``read_metadata`` the read version's (None for a create),
    ``domains`` the read version's live domains, ``known`` the live add of each path the commit touches,
    ``has_rows`` whether the table holds rows (asked only when a row rule is added), ``source`` names the table
    in refusals. Refusals are typed and name the feature or rule; nothing has been written when they are raised.
    """
    schema = parse_schema(metadata.schema_string)
    mode = column_mapping.mode(protocol, metadata.configuration)
    restore = operation in RESTORE_OPERATIONS
    fresh = new_files(actions, operation)
    record: dict[str, Any] = {}

    # append-only: no data removed, whatever the commit is (a restore too)
    append_only.check_commit(actions, metadata.configuration)

    # deletion vectors: descriptors, numRecords, removes and re-adds naming the live DV, no new DV while disabled
    if restore:
        for a in actions:
            if isinstance(a, (A.Add, A.Remove)) and a.deletion_vector is not None:
                deletion_vectors.check_descriptor(a.deletion_vector, a.path)
    else:
        deletion_vectors.check_commit(actions, protocol, metadata.configuration, known)

    # change data feed: which commits need change files, and the writer's cdc actions
    cdf.check_commit(
        actions,
        protocol,
        metadata.configuration,
        _physical_partition_keys(schema, metadata.partition_columns, mode),
        copies_rows=False if restore else declared.copies_rows,
        covers_all=declared.cdc_covers_all,
    )

    # column mapping: new files keyed by physical names of the current schema
    if mode != "none":
        column_mapping.check_file_keys(fresh, schema, mode, metadata.partition_columns)

    # clustering: the domain follows the schema, new files carry statistics for every clustering column
    changed, columns = _clustering_columns(actions, domains)
    if clustering.clustered(protocol):
        if changed or any(isinstance(a, A.Metadata) for a in actions):
            clustering.check_change(protocol, metadata.partition_columns, schema, columns, mode)
        clustering.check_stats(fresh, columns)
    elif changed:
        raise UnsupportedFeatureError(
            f"a {clustering.DOMAIN} domain on a table without the clustering feature: cluster the table with "
            "create(clustering_columns=...) or cluster_by",
            feature=clustering.FEATURE,
        )

    # identity columns: only deltalog's data writer generates their values and advances the mark, and keeps the
    # values of the rows a rewrite copies (a dataChange=false re-add moves the same rows: it owes nothing)
    named = identity.columns(schema) if not restore else ()
    if named and any(a.data_change for a in fresh) and declared.rows_validated != constraints.CHECKED:
        raise UnsupportedFeatureError(
            f"cannot write {source}: identity column {named[0].name!r} ({identity.FEATURE}): new rows need "
            f"values generated above {identity.HIGH_WATER_MARK} and the mark advanced in the same commit; "
            "write them with deltalog.write, which does both (a commit of files written elsewhere cannot)",
            feature=identity.FEATURE,
            path=source,
        )
    if named and _copies(actions, declared.copies_rows) and not declared.identity_preserved:
        raise UnsupportedFeatureError(
            f"cannot write {source}: identity column {named[0].name!r} ({identity.FEATURE}): rows this commit copies "
            "into new files must keep their identity values, which only deltalog's DELETE, UPDATE, MERGE and "
            "replace_where vouch for (identity_preserved)",
            feature=identity.FEATURE,
            path=source,
        )

    # row tracking: rows the writer says it copied keep their ids, whatever kind the operation's name makes the
    # commit (a WRITE that removes and adds files counts as an overwrite, which copies nothing, unless it says so)
    if not restore and declared.copies_rows and _copies(actions, True) and not declared.row_ids_preserved:
        row_tracking.check_rewrite(protocol, metadata.configuration)

    # row rules: new rows validated by someone, rules added to a table with rows validated against its rows
    if not restore:
        record.update(
            constraints.check_commit(actions, metadata.configuration, schema, rows_validated=declared.rows_validated)
        )
        if any(isinstance(a, A.Metadata) for a in actions):
            existing = constraints.check_metadata_change(
                read_metadata,
                metadata,
                existing_rows=declared.existing_rows_validated,
                has_rows=has_rows,
            )
            if existing:
                merged = {**record.get(constraints.VALIDATION_KEY, {}), **existing[constraints.VALIDATION_KEY]}
                record[constraints.VALIDATION_KEY] = merged
    return record


__all__ = [
    "NOTHING_DECLARED",
    "RESTORE_OPERATIONS",
    "Declarations",
    "check_commit",
    "needs_known_files",
    "new_files",
    "touched_paths",
    "validation",
]
