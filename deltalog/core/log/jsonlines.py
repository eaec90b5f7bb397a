"""Newline-delimited JSON as the log stores it: one object per line, errors naming the file and line.

Every reader of log files (replay, V2 JSON checkpoints, history, the commit decoder
:func:`deltalog.core.log.codec.decode_commit`, cleanup, the Spark checkpoint) goes through here, so a
malformed line is reported the same way wherever it is met: as a :class:`CorruptLogError` naming the
file and line, or as what ``error`` makes of the line and the reason (a file of actions a user gave).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import orjson

from deltalog.errors import CorruptLogError

#: makes the error for a bad line from its number (1-based) and the reason
LineError = Callable[[int, str], Exception]


def corrupt_line(path: str) -> LineError:
    """The log's error for a bad line of ``path``: a :class:`CorruptLogError` naming the file and line."""
    return lambda line, why: CorruptLogError(f"{path} line {line}: {why}", path=path, line=line)


def malformed(exc: orjson.JSONDecodeError) -> str:
    """Why a line is not JSON, with the column at fault (the line is the caller's to say)."""
    return f"malformed JSON at column {exc.colno} ({exc.msg})"


def parse_lines(data: bytes, path: str, error: LineError | None = None) -> list[Any]:
    """Each line parsed, index ``i`` being line ``i + 1``; ``None`` for a blank line.

    One ``orjson.loads`` over the whole file (its lines joined into an array) costs a fraction of a call
    per line; a file with blank lines or bad JSON falls back to line by line, which also finds the line
    at fault.
    """
    body = data.rstrip(b"\r\n")
    if body and b"\n\n" not in body:
        try:
            parsed: list[Any] = orjson.loads(b"[" + body.replace(b"\n", b",") + b"]")
        except orjson.JSONDecodeError:
            pass
        else:
            if len(parsed) == body.count(b"\n") + 1 and None not in parsed:
                return parsed
    fail = error or corrupt_line(path)
    out: list[Any] = []
    for line_no, raw in enumerate(data.split(b"\n"), start=1):
        if not raw or raw.isspace():
            out.append(None)
            continue
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise fail(line_no, malformed(exc)) from None
        if obj is None:
            # ``None`` stands for a blank line here; a literal ``null`` is a damaged line, never a blank one.
            raise fail(line_no, "a log line must be a JSON object, not null")
        out.append(obj)
    return out


def objects(data: bytes, path: str, error: LineError | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for every non-blank line; a line that is not an object is corrupt."""
    for line_no, obj in enumerate(parse_lines(data, path, error), start=1):
        if obj is None:
            continue
        if type(obj) is not dict:
            raise (error or corrupt_line(path))(line_no, "a log line must be a JSON object")
        yield line_no, obj


def last_commit_info(data: bytes, path: str) -> dict[str, Any] | None:
    """The commit's commitInfo (the last one, as replay keeps it), or None without one.

    Writers put it on the first line: when it is there and the only one, that line alone is parsed (a
    ``\\u`` escape anywhere could spell another commitInfo key, so then every line is).
    """
    if data.startswith(b'{"commitInfo"') and data.count(b'"commitInfo"') == 1 and b"\\u" not in data:
        try:
            obj = orjson.loads(data.partition(b"\n")[0])
        except orjson.JSONDecodeError:
            pass
        else:
            info = obj.get("commitInfo") if isinstance(obj, dict) else None
            return info if isinstance(info, dict) else None
    last = None
    for _, obj in objects(data, path):
        if "commitInfo" in obj:
            body = obj["commitInfo"]
            last = body if isinstance(body, dict) else None
    return last


def commit_info_of(data: bytes, path: str) -> dict[str, Any]:
    """The commitInfo of a commit file (``{}`` without one)."""
    return last_commit_info(data, path) or {}


__all__ = ["LineError", "commit_info_of", "corrupt_line", "last_commit_info", "malformed", "objects", "parse_lines"]
