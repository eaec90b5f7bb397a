"""Change data feed at the log level: which commits need change files, and what a writer's ``cdc`` must be.

PROTOCOL "Change Data Files" and "Add CDC File": with ``delta.enableChangeDataFeed=true`` (on writer versions
4-6, or with ``changeDataFeed`` in ``writerFeatures``) a writer produces change files for operations that
change existing rows; one that only adds rows or removes whole files may omit them, since readers then take
the version's ``add``/``remove`` actions as inserts and deletes. A version with any ``cdc`` action is read from
its ``cdc`` files *only*. A ``cdc`` action has ``dataChange=false``; its file lives under ``_change_data/``, or
is a data file the same commit adds when that file holds no copied rows and fills ``_change_type``.

Delta Spark (facts): ``commands/WriteIntoDelta.scala`` writes change files for row-copying rewrites and, when
it writes any, for the inserts too; ``commands/cdc/CDCReader.scala`` reads a pair remove(p, dv1) + add(p, dv2)
by diffing the vectors (``generateFileActionsWithInlineDv``): rows dv2 masks and dv1 did not are deletes, rows
dv1 masked and dv2 does not are inserts, and a missing vector masks nothing. So a DV delete needs no change
files, nor does a RESTORE that brings a file back with an older, smaller vector or none
(``RestoreTableCommand`` writes none); only a pair where neither side has a vector cannot be read that way.
That deleted rows stay deleted in ordinary writes is a deletion-vector rule
(:mod:`deltalog.core.deletion_vectors`), not a change-feed one. ``cdc`` is a ``FileAction``, so a commit with
one is not a blind append (``OptimisticTransaction.scala``, ``actions/actions.scala``).

"Covers every change" cannot be read from the log: the rows are in files. So a commit with ``cdc`` actions and
data-changing adds or removes is accepted only when its writer declares that the change files hold every
change of the commit (``covers_all``), and a commit that copies rows is accepted only with ``cdc`` actions.
Whether adds hold copied rows is also the writer's to declare (``copies_rows``): a partition overwrite and an
update both remove and add files.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from deltalog.core import actions as A
from deltalog.core import properties
from deltalog.core.features import supported_features
from deltalog.core.file_facts import path_key
from deltalog.errors import InvalidCommitError, UnsupportedFeatureError

FEATURE = "changeDataFeed"
CHANGE_DATA_DIR = "_change_data"


def enabled(protocol: A.Protocol, configuration: Mapping[str, str]) -> bool:
    on = properties.get_bool(configuration, "delta.enableChangeDataFeed") or properties.get_bool(
        configuration, "delta.enableChangeDataCapture"
    )
    return on and FEATURE in supported_features(protocol)


@dataclass(frozen=True)
class Changes:
    """A commit's file actions by what they mean to a change reader (paths as the actions spell them)."""

    inserts: tuple[str, ...]  # adds of new files, dataChange=true
    deletes: tuple[str, ...]  # whole-file removes, dataChange=true
    dv_deletes: tuple[str, ...]  # remove(p, dv1) + add(p, dv2): read as the vectors' difference
    rearranged: int  # adds and removes with dataChange=false
    cdc: tuple[A.Cdc, ...]

    @property
    def changes_data(self) -> bool:
        return bool(self.inserts or self.deletes or self.dv_deletes)


def classify(actions: Sequence[A.Action]) -> Changes:
    adds: dict[str, A.Add] = {}
    removes: dict[str, A.Remove] = {}
    rearranged = 0
    for a in actions:
        if isinstance(a, (A.Add, A.Remove)) and not a.data_change:
            rearranged += 1
        elif isinstance(a, A.Add):
            adds[path_key(a.path)] = a
        elif isinstance(a, A.Remove):
            removes[path_key(a.path)] = a
    pairs = sorted(set(adds) & set(removes))
    return Changes(
        inserts=tuple(a.path for k, a in adds.items() if k not in removes),
        deletes=tuple(r.path for k, r in removes.items() if k not in adds),
        dv_deletes=tuple(adds[k].path for k in pairs),
        rearranged=rearranged,
        cdc=tuple(a for a in actions if isinstance(a, A.Cdc)),
    )


def _check_dv_pair(add: A.Add, remove: A.Remove) -> None:
    """remove(p, dv1) + add(p, dv2) reads as the difference of the vectors, whichever way it goes (rows a
    shrinking vector unmasks are inserts); with no vector on either side there is no difference to read."""
    if add.deletion_vector is None and remove.deletion_vector is None:
        raise UnsupportedFeatureError(
            f"{add.path}: removing and re-adding a file with no deletion vector on either side rewrites it, which "
            "needs change files (cdc) on a change-data-feed table",
            feature=FEATURE,
        )


def check_cdc_action(cdc: A.Cdc, partition_keys: set[str], added: set[str]) -> None:
    """One writer-supplied ``cdc`` action: under ``_change_data/`` (or a file the commit adds),
    ``dataChange=false``, partition values keyed by the table's (physical) partition columns, a size."""
    key = path_key(cdc.path)
    if not key.startswith(CHANGE_DATA_DIR + "/") and key not in added:
        raise InvalidCommitError(
            f"cdc {cdc.path}: change files live under {CHANGE_DATA_DIR}/ (or are data files this commit adds)",
            rule="cdc",
        )
    if cdc.data_change is not False:
        raise InvalidCommitError(f"cdc {cdc.path}: dataChange must be false", rule="cdc")
    if not isinstance(cdc.partition_values, Mapping) or set(cdc.partition_values) != partition_keys:
        raise InvalidCommitError(
            f"cdc {cdc.path}: partition values {sorted(cdc.partition_values or {})} do not match the partition "
            f"columns {sorted(partition_keys)}",
            rule="cdc",
        )
    if any(v is not None and not isinstance(v, str) for v in cdc.partition_values.values()):
        raise InvalidCommitError(f"cdc {cdc.path}: partition values must be strings or null", rule="cdc")
    if not isinstance(cdc.size, int) or isinstance(cdc.size, bool) or cdc.size < 0:
        raise InvalidCommitError(f"cdc {cdc.path}: size {cdc.size!r} is not a non-negative integer", rule="cdc")


def check_commit(
    actions: Sequence[A.Action],
    protocol: A.Protocol,
    configuration: Mapping[str, str],
    partition_keys: Sequence[str],
    *,
    copies_rows: bool | None = None,
    covers_all: bool = False,
) -> Changes:
    """The change-data-feed rules for one commit; returns its classification.

    ``partition_keys``: the physical partition column names. ``copies_rows``: whether new files hold rows
    copied from removed ones (an update, a merge, a delete without deletion vectors); None means the writer
    did not say, which counts as copying when the commit removes and adds data files. ``covers_all``: the
    writer's declaration that its ``cdc`` files hold every change of the commit, inserts included.

    Refused by name: ``cdc`` actions on a table without change data feed, a ``cdc`` without any data change,
    ``cdc`` not declared to cover the commit, and on a change-data-feed table a row-copying commit without
    ``cdc`` or a remove/re-add pair with no deletion vector on either side.
    """
    changes = classify(actions)
    on = enabled(protocol, configuration)
    if changes.cdc:
        if not on:
            raise InvalidCommitError(
                "cdc actions on a table without change data feed (delta.enableChangeDataFeed is not true)", rule="cdc"
            )
        added = {path_key(a.path) for a in actions if isinstance(a, A.Add)}
        for c in changes.cdc:
            check_cdc_action(c, set(partition_keys), added)
        if not changes.changes_data:
            raise InvalidCommitError("cdc actions in a commit that changes no data", rule="cdc")
        if not covers_all:
            raise InvalidCommitError(
                "a version with cdc actions is read from them only, so they must hold every change of the commit, "
                "inserts and deletes included; the writer did not declare that they do (covers_all)",
                rule="cdc",
            )
        return changes
    if not on:
        return changes
    if copies_rows is None:  # an update removes (or deletes rows from) files and adds the rows it changed
        copies_rows = bool(changes.inserts and (changes.deletes or changes.dv_deletes))
    if copies_rows and changes.changes_data:
        raise UnsupportedFeatureError(
            "change data feed is on and this commit removes files and adds others, which readers can only take for "
            "a row-copying rewrite: it needs change files (cdc actions, with cdc_covers_all=True) recording every "
            "change; if the new files hold no rows copied from the removed ones (a partition overwrite), commit "
            "with copies_rows=False",
            feature=FEATURE,
        )
    adds = {path_key(a.path): a for a in actions if isinstance(a, A.Add) and a.data_change}
    removes = {path_key(a.path): a for a in actions if isinstance(a, A.Remove) and a.data_change}
    for key in sorted(set(adds) & set(removes)):
        _check_dv_pair(adds[key], removes[key])
    return changes


def is_blind_append(actions: Sequence[A.Action], read_anything: bool) -> bool:
    """Spark's ``isBlindAppend``: nothing read and only ``add`` file actions; a ``cdc`` is a file action."""
    files = [a for a in actions if isinstance(a, (A.Add, A.Remove, A.Cdc))]
    return not read_anything and all(isinstance(a, A.Add) for a in files)


__all__ = [
    "CHANGE_DATA_DIR",
    "FEATURE",
    "Changes",
    "check_cdc_action",
    "check_commit",
    "classify",
    "enabled",
    "is_blind_append",
]
