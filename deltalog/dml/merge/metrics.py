"""What a MERGE and an UPDATE record in ``commitInfo``: Delta Spark's ``operationParameters`` and
``operationMetrics`` names (``DeltaOperations.Merge``/``Update``, ``DeltaOperationMetrics.MERGE``/``UPDATE``).

Parameters are JSON text, as Spark writes them: ``predicate`` a list of the condition's text; a merge's clause
lists (``matchedPredicates``, ``notMatchedPredicates``, ``notMatchedBySourcePredicates``) hold one object per
clause, ``{"predicate": <condition>, "actionType": "update"|"delete"|"insert"}`` (no ``predicate`` when the
clause has none). Deletion-vector counts are Spark's transformed ones: added and removed each include the
updated vectors (a file whose vector grew lost one and gained one).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from deltalog.dml.merge.changes import Counts
from deltalog.dml.merge.plan import MergePlan
from deltalog.dml.removal import Removal


@dataclass(frozen=True)
class Times:
    """Milliseconds spent: in all, materializing the source, scanning for matches, writing."""

    execution: int = 0
    materialize: int = 0
    scan: int = 0
    rewrite: int = 0


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


def merge_parameters(plan: MergePlan) -> dict[str, str]:
    def listed(kind_clauses: Any) -> str:
        out = []
        for c in kind_clauses:
            entry: dict[str, str] = {}
            if c.text is not None:
                entry["predicate"] = c.text
            entry["actionType"] = c.action
            out.append(entry)
        return _json(out)

    return {
        "predicate": _json([plan.condition_text]),
        "matchedPredicates": listed(plan.matched),
        "notMatchedPredicates": listed(plan.not_matched),
        "notMatchedBySourcePredicates": listed(plan.not_matched_by_source),
    }


def update_parameters(plan: MergePlan) -> dict[str, str]:
    (clause,) = plan.clauses
    return {"predicate": _json([clause.text] if clause.text is not None else [])}


def merge_metrics(source_rows: int, counts: Counts, removal: Removal, times: Times) -> dict[str, str]:
    values = {
        "numSourceRows": source_rows,
        "numTargetRowsInserted": counts.inserted,
        "numTargetRowsUpdated": counts.updated,
        "numTargetRowsMatchedUpdated": counts.matched_updated,
        "numTargetRowsNotMatchedBySourceUpdated": counts.nmbs_updated,
        "numTargetRowsDeleted": counts.deleted,
        "numTargetRowsMatchedDeleted": counts.matched_deleted,
        "numTargetRowsNotMatchedBySourceDeleted": counts.nmbs_deleted,
        "numTargetRowsCopied": counts.copied,
        "numOutputRows": counts.inserted + counts.updated + counts.copied,
        "numTargetFilesAdded": removal.added_files,
        "numTargetFilesRemoved": removal.removed_files,
        "numTargetBytesAdded": removal.added_bytes,
        "numTargetBytesRemoved": removal.removed_bytes,
        "numTargetChangeFilesAdded": removal.change_files,
        "numTargetDeletionVectorsAdded": removal.dvs_added + removal.dvs_updated,
        "numTargetDeletionVectorsRemoved": removal.dvs_removed + removal.dvs_updated,
        "numTargetDeletionVectorsUpdated": removal.dvs_updated,
        "executionTimeMs": times.execution,
        "materializeSourceTimeMs": times.materialize,
        "scanTimeMs": times.scan,
        "rewriteTimeMs": times.rewrite,
    }
    return {k: str(v) for k, v in values.items()}


def update_metrics(counts: Counts, removal: Removal, times: Times) -> dict[str, str]:
    values = {
        "numUpdatedRows": counts.updated,
        "numCopiedRows": counts.copied,
        "numAddedFiles": removal.added_files,
        "numRemovedFiles": removal.removed_files,
        "numAddedChangeFiles": removal.change_files,
        "numDeletionVectorsAdded": removal.dvs_added + removal.dvs_updated,
        "numDeletionVectorsRemoved": removal.dvs_removed + removal.dvs_updated,
        "numDeletionVectorsUpdated": removal.dvs_updated,
        "numAddedBytes": removal.added_bytes,
        "numRemovedBytes": removal.removed_bytes,
        "executionTimeMs": times.execution,
        "scanTimeMs": times.scan,
        "rewriteTimeMs": times.rewrite,
    }
    return {k: str(v) for k, v in values.items()}


__all__ = ["Times", "merge_metrics", "merge_parameters", "update_metrics", "update_parameters"]
