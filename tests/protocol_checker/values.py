"""Value-level knowledge: deletion-vector ids, per-file stats, partition value serialization.

Sources: PROTOCOL.md "Deletion Vector Descriptor Schema" (and its "Derived Fields"), "Per-file
Statistics", "Partition Value Serialization", "Primitive Types".
"""

from __future__ import annotations

import re
from datetime import date
from decimal import ROUND_DOWN, Decimal, InvalidOperation, localcontext
from typing import Any

import orjson

from .features import is_int

Z85_ALPHABET = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#")

INT_RANGES = {
    "byte": (-(2**7), 2**7 - 1),
    "short": (-(2**15), 2**15 - 1),
    "integer": (-(2**31), 2**31 - 1),
    "long": (-(2**63), 2**63 - 1),
}
_DATE = re.compile(r"^(-?\d{4,})-(\d{2})-(\d{2})$")
_TIME = r"(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?"
_TS_PLAIN = re.compile(r"^(-?\d{4,})-(\d{2})-(\d{2}) " + _TIME + "$")
_TS_ISO_UTC = re.compile(r"^(-?\d{4,})-(\d{2})-(\d{2})T" + _TIME + "Z$")
_DECIMAL_TYPE = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$")
_JAVA_FLOAT = re.compile(r"^[+-]?(NaN|Infinity|(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)$")


def dv_unique_id(dv: Any) -> str | None:
    """``uniqueId`` of a descriptor (``<storageType><pathOrInlineDv>[@<offset>]``); ``None`` for no DV."""
    if not isinstance(dv, dict):
        return None
    base = f"{dv.get('storageType')}{dv.get('pathOrInlineDv')}"
    offset = dv.get("offset")
    return base if offset is None else f"{base}@{offset}"


def file_key(body: Any) -> tuple[str, str | None]:
    """The logical-file key of an add or remove: ``(path, dvId)`` (PROTOCOL.md "Add File and Remove File")."""
    path = body.get("path") if isinstance(body, dict) else None
    return (path if isinstance(path, str) else "<no path>", dv_unique_id(body.get("deletionVector")))


def parse_stats(body: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
    """The ``stats`` JSON of a file action: (object, None), (None, None) when absent, (None, why) when bad."""
    raw = body.get("stats")
    if raw is None:
        return None, None
    if not isinstance(raw, str):
        return None, f"stats is {type(raw).__name__}, not a JSON string"
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        return None, f"stats is not JSON: {exc}"
    if not isinstance(obj, dict):
        return None, "stats is not a JSON object"
    return obj, None


def num_records(body: dict[str, Any]) -> int | None:
    stats, _ = parse_stats(body)
    n = stats.get("numRecords") if stats else None
    return n if is_int(n) else None


def descriptor_problems(dv: Any) -> list[str]:
    """What is wrong with a deletion-vector descriptor (empty when nothing is)."""
    if not isinstance(dv, dict):
        return [f"deletionVector is {type(dv).__name__}, not an object"]
    out = []
    st, where = dv.get("storageType"), dv.get("pathOrInlineDv")
    if st not in ("u", "i", "p"):
        out.append(f"storageType {st!r} is not one of 'u', 'i', 'p'")
    if not isinstance(where, str) or not where:
        out.append("pathOrInlineDv is missing or not a string")
    elif st == "u" and (len(where) < 20 or not set(where[-20:]) <= Z85_ALPHABET):
        out.append("a 'u' descriptor must end in a 20-character Z85-encoded UUID")
    elif st == "i" and not set(where) <= Z85_ALPHABET:
        out.append("an inline DV must be Z85-encoded")
    offset = dv.get("offset")
    if st == "i" and offset is not None:
        out.append("offset must be absent for an inline ('i') DV")
    elif offset is not None and (not is_int(offset) or offset < 0):
        out.append(f"offset {offset!r} is not a non-negative integer")
    for name in ("sizeInBytes", "cardinality"):
        v = dv.get(name)
        if not is_int(v) or v < 0:
            out.append(f"{name} {v!r} is not a non-negative integer")
    return out


def partition_value_problem(value: Any, typ: Any) -> str | None:
    """Why a serialized partition value does not parse as ``typ`` (``None`` when it does, or is null)."""
    if value is None or value == "":
        return None  # "An empty string for any type translates to a null partition value."
    if not isinstance(value, str):
        return f"value {value!r} is not a string"
    if not isinstance(typ, str):
        return f"partition column has a non-primitive type {typ!r}"
    if typ in ("string", "binary"):
        return None
    if typ in INT_RANGES:
        lo, hi = INT_RANGES[typ]
        if not re.fullmatch(r"[+-]?\d+", value) or not lo <= int(value) <= hi:
            return f"{value!r} is not a {typ}"
        return None
    if typ in ("float", "double"):
        return None if _JAVA_FLOAT.match(value) else f"{value!r} is not a {typ}"
    if typ == "boolean":
        return None if value in ("true", "false") else f"{value!r} is not 'true' or 'false'"
    if typ == "date":
        m = _DATE.match(value)
        return None if m and _valid_date(m) else f"{value!r} is not a date {{year}}-{{month}}-{{day}}"
    if typ == "timestamp":
        m = _TS_PLAIN.match(value) or _TS_ISO_UTC.match(value)
        return None if m and _valid_date(m) and _valid_time(m) else f"{value!r} is not a timestamp"
    if typ == "timestamp_ntz":
        m = _TS_PLAIN.match(value)
        return None if m and _valid_date(m) and _valid_time(m) else f"{value!r} is not a timestamp_ntz"
    if m := _DECIMAL_TYPE.match(typ):
        return _decimal_problem(value, int(m[1]), int(m[2]))
    return None  # a type the protocol gives no serialization for: nothing to check


def _valid_date(m: re.Match[str]) -> bool:
    year, month, day = int(m[1]), int(m[2]), int(m[3])
    try:
        date(2000 if not 1 <= year <= 9999 else year, month, day)
    except ValueError:
        return False
    return True


def _valid_time(m: re.Match[str]) -> bool:
    return int(m[4]) < 24 and int(m[5]) < 60 and int(m[6]) < 60


def _decimal_problem(value: str, precision: int, scale: int) -> str | None:
    with localcontext() as ctx:
        ctx.prec = 200
        try:
            d = Decimal(value)
        except InvalidOperation:
            return f"{value!r} is not a decimal"
        if not d.is_finite():
            return f"{value!r} is not a finite decimal"
        if d != d.quantize(Decimal(1).scaleb(-scale), rounding=ROUND_DOWN):
            return f"{value!r} has more than {scale} fraction digits for decimal({precision},{scale})"
        int_digits = len(str(int(abs(d)))) if abs(d) >= 1 else 0
    if int_digits > precision - scale:
        return f"{value!r} does not fit decimal({precision},{scale})"
    return None
