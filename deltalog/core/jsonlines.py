"""Newline-delimited JSON as the log stores it: one object per line, errors naming the file and line.

Every reader of log files (replay, V2 JSON checkpoints, history, conflict checks, cleanup) goes through
here, so a malformed line is reported the same way wherever it is met.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from deltalog.errors import CorruptLogError


def _corrupt(path: str, line: int, why: str) -> CorruptLogError:
    return CorruptLogError(f"{path} line {line}: {why}", path=path, line=line)


def parse_lines(data: bytes, path: str) -> list[Any]:
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
    out: list[Any] = []
    for line_no, raw in enumerate(data.split(b"\n"), start=1):
        if not raw or raw.isspace():
            out.append(None)
            continue
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise _corrupt(path, line_no, f"malformed JSON ({exc})") from None
        if obj is None:
            # ``None`` stands for a blank line here; a literal ``null`` is a damaged line, never a blank one.
            raise _corrupt(path, line_no, "a log line must be a JSON object, not null")
        out.append(obj)
    return out


def objects(data: bytes, path: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for every non-blank line; a line that is not an object is corrupt."""
    for line_no, obj in enumerate(parse_lines(data, path), start=1):
        if obj is None:
            continue
        if type(obj) is not dict:
            raise _corrupt(path, line_no, "a log line must be a JSON object")
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


__all__ = ["commit_info_of", "last_commit_info", "objects", "parse_lines"]
