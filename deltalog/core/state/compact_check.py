"""Whether a log compaction file found in a listing may stand in for its commits, judged on the file alone.

PROTOCOL.md ("Log Compaction Files") says such a file holds the *reconciled* actions of commits ``x..y`` and
that a reader *may* read it instead of them. Reconciled means what a single commit must be too ("Delta Log
Entries"): no two actions that reconcile with each other. A file that breaks that was written by a writer
that did not reconcile: delta-kernel-rs, for one, wrote files that list the actions of the newest commit
first and keep every superseded add and remove, so reading them in file order brings removed files back.
Such a file is no accelerator but a second, wrong account of the commits, and since the commits are there
(a segment only names a compaction file whose commits are all listed), the reader reads those instead.

The check never compares the file with its commits (that would read them, which is what the file is there
to save); it looks for what no reconciled file holds:

* two ``add``/``remove`` actions for one file key (:func:`deltalog.core.pathkeys.file_key`: path and
  deletion-vector id, as replay keys them), or one without a path;
* two ``protocol`` or two ``metaData`` actions, two ``txn`` for one app id, two ``domainMetadata`` for one
  domain;
* a line that is not a JSON object.

``commitInfo`` and ``cdc`` lines are ignored, as replay ignores them: reconciliation keeps neither, and a
writer that left them in has not changed the table state the file describes. Unknown actions are ignored
for the same reason. Whether an action that passes decodes is replay's to say, as for a commit.
"""

from __future__ import annotations

from typing import Any

from deltalog.core.jsonlines import parse_lines
from deltalog.core.pathkeys import dv_id_of, file_key
from deltalog.errors import CorruptLogError

#: the non-file actions a reconciled file holds at most once per identity
_ONE_EACH = {"protocol": None, "metaData": None, "txn": "appId", "domainMetadata": "domain"}


def _identity(key: str, body: dict[str, Any], root: str | None) -> tuple[str, str] | str:
    """What an action replaces, or why it has no identity (a file action without a path)."""
    if key in ("add", "remove"):
        path = body.get("path")
        if not isinstance(path, str):
            return f"{key} action without a path"
        return ("file", file_key(path, dv_id_of(body.get("deletionVector")), root))
    field = _ONE_EACH[key]
    return (key, "" if field is None else str(body.get(field)))


def _describe(ident: tuple[str, str]) -> str:
    kind, name = ident
    if kind == "file":
        path, _, dv = name.partition("\x00")
        return f"file {path!r}" + (f" (deletion vector {dv})" if dv else "")
    return kind if not name else f"{kind} {name!r}"


def unusable_reason(data: bytes, path: str, root: str | None) -> str | None:
    """Why compaction file ``path`` (holding ``data``) cannot stand in for its commits, or ``None`` if it can.

    ``root`` is the table root file keys are made relative to, as in replay.
    """
    try:
        lines = parse_lines(data, path)
    except CorruptLogError as exc:
        return str(exc)
    seen: dict[tuple[str, str], int] = {}
    for line_no, obj in enumerate(lines, start=1):
        if obj is None:
            continue
        if type(obj) is not dict:
            return f"{path} line {line_no}: a log line must be a JSON object"
        for key, body in obj.items():
            if body is None or (key not in _ONE_EACH and key not in ("add", "remove")):
                continue  # no action, or one reconciliation keeps none of (commitInfo, cdc, unknown)
            if not isinstance(body, dict):
                return f"{path} line {line_no}: {key} is not a JSON object"
            ident = _identity(key, body, root)
            if isinstance(ident, str):
                return f"{path} line {line_no}: {ident}"
            if ident in seen:
                return (
                    f"{path} line {line_no}: a second action for {_describe(ident)} (the first is on line "
                    f"{seen[ident]}): the file does not hold reconciled actions"
                )
            seen[ident] = line_no
    return None


__all__ = ["unusable_reason"]
