"""The ``commit`` verb: commit a file of actions, for scripts and operators.

Its input is a file of actions in the log's own JSON spelling, checked line by line here before the
engine sees it: a value of the wrong JSON type is refused with the file and line, never written as given.
"""

from __future__ import annotations

import functools
import sys
from typing import Any

import click
import orjson

from deltalog import InvalidArgumentError, InvalidCommitError
from deltalog.actions import Action
from deltalog.cli import documents, render
from deltalog.cli.options import emit, json_flag, open_log, parse_json_object, parse_read_where, table_argument
from deltalog.core.codec import decode_commit
from deltalog.core.conflicts import ISOLATION_LEVELS


@click.command("commit")
@table_argument
@click.option(
    "--actions",
    "actions_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False, allow_dash=True),
    metavar="FILE",
    help='Actions to commit, one JSON object per line as the log spells them ({"add": {...}}); - is stdin.',
)
@click.option("--operation", required=True, metavar="OP", help="Operation name for commitInfo (WRITE, DELETE, ...).")
@click.option(
    "--operation-parameters",
    "operation_parameters",
    callback=parse_json_object,
    metavar="JSON",
    help="Operation parameters for commitInfo, a JSON object.",
)
@click.option("--app-id", "app_id", metavar="ID", help="Commit exactly once per application ID and version.")
@click.option("--app-version", "app_version", type=click.IntRange(min=0), metavar="N", help="The version for --app-id.")
@click.option(
    "--isolation",
    type=click.Choice(ISOLATION_LEVELS),
    help="Isolation level (default: the table's delta.isolationLevel, else Serializable).",
)
@click.option(
    "--read-where",
    "read_where",
    multiple=True,
    callback=parse_read_where,
    metavar="COLUMN=VALUE",
    help="Record a read of these partitions, so a concurrent append into them conflicts (repeatable; "
    "a column given again reads each value).",
)
@json_flag
def commit(
    table: str,
    actions_path: str,
    operation: str,
    operation_parameters: dict[str, Any] | None,
    app_id: str | None,
    app_version: int | None,
    isolation: str | None,
    read_where: dict[str, str | list[str]],
    fmt: str,
) -> None:
    """Commit the actions in FILE to TABLE as one new version."""
    if (app_id is None) != (app_version is None):
        raise click.UsageError("--app-id and --app-version must be given together", click.get_current_context())
    actions = read_actions(actions_path)  # before the table is opened: a bad file costs no listing
    log = open_log(table)
    txn = log.start_transaction(isolation, app_id=app_id, app_version=app_version)
    if read_where:
        txn.read(where=read_where)
    result = txn.commit(actions, operation=operation, operation_parameters=operation_parameters)
    reached = txn.snapshot.app_version(app_id) if app_id is not None else None
    human = functools.partial(render.commit, app_id=app_id, app_version=app_version, reached=reached)
    emit(documents.commit(log, result), fmt, human)


# ---------------------------------------------------------------------------------------------- actions file

#: lines a commit file may not hold, and why
_RESERVED = {
    "commitInfo": "a commitInfo line cannot be committed: the transaction writes its own",
    "checkpointMetadata": "a checkpointMetadata line cannot be committed: it belongs only in checkpoints",
    "sidecar": "a sidecar line cannot be committed: it belongs only in checkpoints",
}

_STR, _INT, _BOOL, _OBJ = "a string", "an integer", "true or false", "an object"
_STR_MAP, _NULLABLE_STR_MAP, _STR_LIST = "an object of strings", "an object of strings or nulls", "an array of strings"

#: the JSON type of every field an action line may carry (absent or null is left to the engine's rules)
_FIELD_TYPES: dict[str, dict[str, str]] = {
    "add": {
        "path": _STR,
        "partitionValues": _NULLABLE_STR_MAP,
        "size": _INT,
        "modificationTime": _INT,
        "dataChange": _BOOL,
        "stats": _STR,
        "tags": _NULLABLE_STR_MAP,
        "deletionVector": _OBJ,
        "baseRowId": _INT,
        "defaultRowCommitVersion": _INT,
        "clusteringProvider": _STR,
    },
    "remove": {
        "path": _STR,
        "deletionTimestamp": _INT,
        "dataChange": _BOOL,
        "extendedFileMetadata": _BOOL,
        "partitionValues": _NULLABLE_STR_MAP,
        "size": _INT,
        "stats": _STR,
        "tags": _NULLABLE_STR_MAP,
        "deletionVector": _OBJ,
        "baseRowId": _INT,
        "defaultRowCommitVersion": _INT,
    },
    "metaData": {
        "id": _STR,
        "name": _STR,
        "description": _STR,
        "format": _OBJ,
        "schemaString": _STR,
        "partitionColumns": _STR_LIST,
        "configuration": _STR_MAP,
        "createdTime": _INT,
    },
    "protocol": {
        "minReaderVersion": _INT,
        "minWriterVersion": _INT,
        "readerFeatures": _STR_LIST,
        "writerFeatures": _STR_LIST,
    },
    "txn": {"appId": _STR, "version": _INT, "lastUpdated": _INT},
    "domainMetadata": {"domain": _STR, "configuration": _STR, "removed": _BOOL},
    "cdc": {"path": _STR, "partitionValues": _NULLABLE_STR_MAP, "size": _INT, "dataChange": _BOOL, "tags": _OBJ},
}


def _is(value: Any, kind: str) -> bool:
    if kind == _STR:
        return isinstance(value, str)
    if kind == _INT:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == _BOOL:
        return isinstance(value, bool)
    if kind == _OBJ:
        return isinstance(value, dict)
    if kind == _STR_LIST:
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    nullable = kind == _NULLABLE_STR_MAP
    return isinstance(value, dict) and all(isinstance(v, str) or (nullable and v is None) for v in value.values())


def _check_line(obj: Any) -> str | None:
    """Why ``obj`` cannot be a committable action line, or None when its shape is sound."""
    if not isinstance(obj, dict) or len(obj) != 1:
        return "a line must be a JSON object holding exactly one action"
    ((key, body),) = obj.items()
    fields = _FIELD_TYPES.get(key)
    if fields is None:
        return f"unknown action {key!r} (expected one of {', '.join(sorted(_FIELD_TYPES))})"
    if not isinstance(body, dict):
        return f"{key} must be a JSON object"
    for name, kind in fields.items():
        value = body.get(name)
        if value is not None and not _is(value, kind):
            return f"{key}.{name} must be {kind}, not {orjson.dumps(value).decode()[:40]}"
    if key in ("add", "remove", "cdc") and body.get("path") == "":
        return f"{key}.path is empty"
    return None


def parse_actions(data: bytes, label: str) -> list[Action]:
    """The actions of a commit file (:func:`~deltalog.core.codec.decode_commit`), each line first checked to
    be one committable action of sound shape; errors name ``label`` and the 1-based line at fault."""

    def bad_line(line: int, why: str) -> InvalidArgumentError:
        return InvalidArgumentError(f"{label}:{line}: {why}")

    def check(line: int, obj: Any) -> None:
        key = next(iter(obj)) if isinstance(obj, dict) and len(obj) == 1 else None
        if key in _RESERVED:
            raise InvalidCommitError(f"{label}:{line}: {_RESERVED[key]}", rule="no-reserved-actions")
        problem = _check_line(obj)
        if problem is not None:
            raise bad_line(line, problem)

    actions = list(decode_commit(data, label, check, bad_line).actions)
    if not actions:
        # An empty file is far more often a producer that failed than a wish for an empty commit, and with
        # --app-id it would mark the batch done. A deliberate no-op can commit its txn line explicitly.
        raise InvalidArgumentError(f"{label} holds no actions: nothing to commit")
    return actions


def read_actions(path: str) -> list[Action]:
    """Read and parse ``--actions`` (``-``: stdin, read to its end before anything is committed)."""
    if path == "-":
        return parse_actions(sys.stdin.buffer.read(), "<stdin>")
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise click.FileError(path, exc.strerror or str(exc)) from None
    return parse_actions(data, path)


__all__ = ["commit", "parse_actions", "read_actions"]
