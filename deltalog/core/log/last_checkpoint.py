"""The ``_last_checkpoint`` hint: parsing, and the spec's JSON checksum.

The hint only says where to start listing. It is overwritten in place, so a reader can see a torn or
stale copy; anything doubtful turns it into "no hint" and the caller lists instead.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import orjson


@dataclass(frozen=True)
class LastCheckpoint:
    version: int
    size: int | None = None
    parts: int | None = None
    size_in_bytes: int | None = None
    num_of_add_files: int | None = None
    checksum: str | None = None
    raw: dict[str, Any] | None = None


class HintError(ValueError):
    """Why a hint was rejected (logged by the caller, never raised to users)."""


def _enc(s: str) -> str:
    return quote(s.encode("utf-8"), safe="-._~")


def _leaves(value: Any, path: str, out: list[str]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _leaves(v, f'{path}+"{_enc(k)}"' if path else f'"{_enc(k)}"', out)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _leaves(v, f"{path}+{i}", out)
    elif isinstance(value, str):
        out.append(f'{path}="{_enc(value)}"')
    elif value is True or value is False:
        out.append(f"{path}={'true' if value else 'false'}")
    elif value is None:
        out.append(f"{path}=null")
    else:
        out.append(f"{path}={value}")


def checksum(obj: dict[str, Any]) -> str:
    """MD5 of the canonical form the spec defines: sorted ``path=value`` leaves, without ``checksum``."""
    entries: list[str] = []
    _leaves({k: v for k, v in obj.items() if k != "checksum"}, "", entries)
    # Spark sorts whole "path=value" strings; that is the order its checksums were made with.
    entries.sort()
    return hashlib.md5(",".join(entries).encode("utf-8")).hexdigest()


def parse(data: bytes) -> LastCheckpoint:
    """Parse a hint; :class:`HintError` when it is torn, malformed or fails its checksum."""
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise HintError(f"not valid JSON ({exc})") from None
    if not isinstance(obj, dict):
        raise HintError("not a JSON object")
    version = obj.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise HintError(f"invalid version {version!r}")
    expected = obj.get("checksum")
    if isinstance(expected, str) and checksum(obj) != expected:
        raise HintError("checksum mismatch")

    def opt_int(key: str) -> int | None:
        v = obj.get(key)
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    parts = opt_int("parts")
    return LastCheckpoint(
        version=version,
        size=opt_int("size"),
        parts=parts,
        size_in_bytes=opt_int("sizeInBytes"),
        num_of_add_files=opt_int("numOfAddFiles"),
        checksum=expected if isinstance(expected, str) else None,
        raw=obj,
    )


__all__ = ["HintError", "LastCheckpoint", "checksum", "parse"]
