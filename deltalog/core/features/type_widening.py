"""Type widening (PROTOCOL "Type Widening", ``protocol_rfcs/accepted/type-widening.md``): which type changes a
writer may commit and how it records them.

Allowed, and nothing else: integers ``byte -> short -> int -> long``; ``float -> double``; ``byte``, ``short``
or ``int -> double``; ``date -> timestamp_ntz``; ``byte``, ``short`` or ``int -> decimal(10 + k1, k2)`` and
``long -> decimal(20 + k1, k2)``; ``decimal(p, s) -> decimal(p + k1, s + k2)``; always with ``k1 >= k2 >= 0``
(so every value keeps its integer digits). ``long -> double`` loses digits and is not one. A writer changes a
type only with ``delta.enableTypeWidening=true`` and the ``typeWidening`` feature, and records each change in
the field's ``delta.typeChanges`` metadata (``fromType``/``toType``), which readers use to cast older files.
With Iceberg compatibility on, the changes Iceberg cannot follow are refused; deltalog refuses them all, as
it does not write Iceberg-compatible tables.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from deltalog.core.features import properties
from deltalog.core.features.kinds import Rule, nothing
from deltalog.errors import SchemaError

FEATURE = "typeWidening"
PROPERTY = "delta.enableTypeWidening"
TYPE_CHANGES = "delta.typeChanges"
#: Spark SQL's spellings of the protocol's primitive type names
_ALIASES = {
    "tinyint": "byte",
    "smallint": "short",
    "int": "integer",
    "bigint": "long",
    "real": "float",
    "timestampntz": "timestamp_ntz",
    "dec": "decimal",
    "numeric": "decimal",
}
_INTEGERS = ("byte", "short", "integer", "long")
#: the integer digits an integral type needs as a decimal (byte, short and int: 10; long: 20)
_DIGITS = {"byte": 10, "short": 10, "integer": 10, "long": 20}
_DECIMAL = re.compile(r"(?:decimal|dec|numeric)\s*\(\s*(\d+)\s*,\s*(\d+)\s*\)")


def type_name(text: str) -> str:
    """A type as the protocol names it (``bigint`` -> ``long``, ``DECIMAL(12, 2)`` -> ``decimal(12,2)``)."""
    low = str(text).strip().lower()
    m = _DECIMAL.fullmatch(low)
    if m:
        return f"decimal({int(m[1])},{int(m[2])})"
    if low in ("decimal", "dec", "numeric"):
        return "decimal(10,0)"
    return _ALIASES.get(low, low)


def _decimal(t: str) -> tuple[int, int] | None:
    m = _DECIMAL.fullmatch(t)
    return (int(m[1]), int(m[2])) if m else None


def allowed(old: Any, new: Any) -> bool:
    """Whether ``old -> new`` is one of the protocol's widenings (types as the schema JSON holds them)."""
    if not isinstance(old, str) or not isinstance(new, str) or old == new:
        return False
    if old in _INTEGERS and new in _INTEGERS:
        return _INTEGERS.index(old) < _INTEGERS.index(new)
    if new == "double":
        return old in ("float", "byte", "short", "integer")
    if (old, new) == ("date", "timestamp_ntz"):
        return True
    to = _decimal(new)
    if to is None:
        return False
    if old in _DIGITS:
        old_precision, old_scale = _DIGITS[old], 0
    elif (frm := _decimal(old)) is not None:
        old_precision, old_scale = frm
    else:
        return False
    k1, k2 = to[0] - old_precision, to[1] - old_scale
    return k1 >= k2 >= 0


def check_change(column: str, old: Any, new: str, configuration: Mapping[str, str]) -> None:
    """Refuse, naming ``column``, a type change the protocol does not allow on this table."""
    if not allowed(old, new):
        shown = old if isinstance(old, str) else "a complex type"
        raise SchemaError(
            f"cannot change column {column!r} from {shown} to {new}: type widening allows only byte->short->int->long, "
            "float->double, byte/short/int->double, date->timestamp_ntz, integers to a decimal with room for their "
            "digits, and decimal(p,s)->decimal(p+k1,s+k2) with k1 >= k2 >= 0",
            field=column,
        )
    iceberg = [
        k
        for k in ("delta.enableIcebergCompatV1", "delta.enableIcebergCompatV2")
        if properties.get_bool(configuration, k)
    ]
    if iceberg:
        raise SchemaError(
            f"cannot change the type of column {column!r}: {iceberg[0]}=true, and Iceberg readers would not follow",
            field=column,
        )


def recorded(metadata: Mapping[str, Any], old: str, new: str) -> dict[str, Any]:
    """Field metadata with the change ``old -> new`` appended to ``delta.typeChanges``."""
    changes = metadata.get(TYPE_CHANGES)
    history = list(changes) if isinstance(changes, list) else []
    return {**metadata, TYPE_CHANGES: [*history, {"fromType": old, "toType": new}]}


#: a type change is a metadata commit whose rules are :func:`check_change`'s; no kind of commit owes more, and
#: columns another engine widened are read through their recorded changes
OBLIGATIONS: Mapping[str, Rule] = {FEATURE: nothing, f"{FEATURE}-preview": nothing}

__all__ = ["FEATURE", "OBLIGATIONS", "PROPERTY", "TYPE_CHANGES", "allowed", "check_change", "recorded", "type_name"]
