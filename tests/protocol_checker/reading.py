"""Reading log files with the stdlib, orjson and pyarrow.parquet only (never deltalog's readers).

JSON files (commits, UUID-named JSON checkpoints, compactions) become one :class:`Action` per line;
parquet files (checkpoints, sidecars) one per non-null action column of a row, with maps turned into
dicts so that both sources look alike to the rules. Unparsable input becomes a :class:`ReadProblem`
instead of an exception: a broken log is a finding, not a crash of the checker.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

#: The action columns read from a checkpoint row: PROTOCOL.md "Checkpoint Schema", the V2 spec actions, and
#: the two kinds a checkpoint must not hold (read so that a rule can say so).
CHECKPOINT_KINDS = (
    "protocol",
    "metaData",
    "txn",
    "add",
    "remove",
    "domainMetadata",
    "checkpointMetadata",
    "sidecar",
    "commitInfo",
    "cdc",
)


@dataclass(frozen=True)
class Action:
    """One action: ``kind`` is its single top-level key, ``body`` the value under it (as read)."""

    file: str
    line: int
    kind: str
    body: Any


@dataclass(frozen=True)
class ReadProblem:
    file: str
    line: int | None
    message: str


@dataclass(frozen=True)
class ParquetFile:
    actions: list[Action]
    schema: pa.Schema | None
    problem: ReadProblem | None


def read_json_actions(path: Path, name: str) -> tuple[list[Action], list[ReadProblem]]:
    """Every line of a newline-delimited JSON file; a line that is not one ``{kind: body}`` object is a problem."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        return [], [ReadProblem(name, None, f"cannot read: {exc}")]
    actions: list[Action] = []
    problems: list[ReadProblem] = []
    for i, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            problems.append(ReadProblem(name, i, f"not JSON: {exc}"))
            continue
        if not isinstance(obj, dict) or len(obj) != 1:
            keys = sorted(obj) if isinstance(obj, dict) else type(obj).__name__
            problems.append(ReadProblem(name, i, f"a line must hold exactly one action, found {keys}"))
            continue
        ((kind, body),) = obj.items()
        actions.append(Action(name, i, kind, body))
    return actions, problems


def _python_value(value: Any, typ: pa.DataType) -> Any:
    """A pyarrow ``to_pylist`` value with maps as dicts (recursively), as JSON would have them."""
    if value is None:
        return None
    if pa.types.is_map(typ):
        return {k: _python_value(v, typ.item_type) for k, v in value}
    if pa.types.is_struct(typ):
        return {f.name: _python_value(value.get(f.name), f.type) for f in typ}
    if pa.types.is_list(typ) or pa.types.is_large_list(typ):
        return [_python_value(v, typ.value_type) for v in value]
    return value


def _drop_nulls(body: dict[str, Any]) -> dict[str, Any]:
    # a parquet row has every column of the schema; a null there is an absent field in JSON terms
    return {k: v for k, v in body.items() if v is not None}


def read_parquet_actions(path: Path, name: str, kinds: tuple[str, ...] = CHECKPOINT_KINDS) -> ParquetFile:
    """Rows of a checkpoint or sidecar; a row with two non-null action columns yields two actions."""
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as exc:
        return ParquetFile([], None, ReadProblem(name, None, f"unreadable parquet: {exc}"))
    columns = [(f.name, f.type, table.column(f.name).to_pylist()) for f in table.schema if f.name in kinds]
    actions: list[Action] = []
    for row in range(table.num_rows):
        for kind, typ, values in columns:
            value = values[row]
            if value is None:
                continue
            body = _python_value(value, typ)
            actions.append(Action(name, row + 1, kind, _drop_nulls(body) if isinstance(body, dict) else body))
    return ParquetFile(actions, table.schema, None)


def read_json_object(path: Path) -> tuple[Any, str | None]:
    try:
        return orjson.loads(path.read_bytes()), None
    except OSError as exc:
        return None, f"cannot read: {exc}"
    except orjson.JSONDecodeError as exc:
        return None, f"not JSON: {exc}"
