"""Values as Spark casts them to STRING: Java's ``Double.toString``/``Float.toString`` (shortest digits, plain
between 1e-3 and 1e7, else ``d.dddE±n``), decimals in plain notation, dates and timestamps in ISO form."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import numpy as np

_EPOCH_DATE = dt.date(1970, 1, 1)


def _digits(text: str) -> tuple[str, int]:
    """Shortest round-trip digits of a positive finite number written as ``text`` (Python's repr or numpy's),
    and the decimal exponent of its first digit."""
    mantissa, _, exp = text.lower().partition("e")
    exponent = int(exp) if exp else 0
    whole, _, frac = mantissa.partition(".")
    digits = (whole + frac).lstrip("0")
    lead = len(whole.lstrip("0")) if whole.strip("0") else -(len(frac) - len(frac.lstrip("0")))
    point = exponent + lead
    digits = digits.rstrip("0") or "0"
    return digits, point - 1


def java_float_text(value: float, single: bool = False) -> str:
    """``Double.toString`` (or ``Float.toString`` when ``single``) of ``value``."""
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if str(value).startswith("-") else "0.0"
    sign = "-" if value < 0 else ""
    magnitude = abs(value)
    shortest = np.format_float_scientific(np.float32(magnitude), unique=True) if single else repr(magnitude)
    digits, exponent = _digits(shortest)
    if 1e-3 <= magnitude < 1e7:
        if exponent >= 0:
            whole = digits[: exponent + 1].ljust(exponent + 1, "0")
            frac = digits[exponent + 1 :] or "0"
        else:
            whole = "0"
            frac = "0" * (-exponent - 1) + digits
        return f"{sign}{whole}.{frac}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exponent}"


def decimal_text(value: Decimal) -> str:
    """A decimal as Spark prints it: plain notation with the type's scale (the value carries it)."""
    return format(value, "f")


def date_text(days: int) -> str:
    """``yyyy-MM-dd``; years before 1 as Spark prints them (``-0001``) via the proleptic calendar."""
    try:
        return (_EPOCH_DATE + dt.timedelta(days=days)).isoformat()
    except OverflowError:
        return _far_date_text(days)


def _far_date_text(days: int) -> str:
    # civil-from-days (Howard Hinnant), for years outside Python's 1..9999
    z = days + 719468
    era = (z if z >= 0 else z - 146096) // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    y = y + (1 if m <= 2 else 0)
    year = f"{y:04d}" if y >= 0 else f"-{-y:04d}"
    if y > 9999:
        year = f"+{y}"
    return f"{year}-{m:02d}-{d:02d}"


def timestamp_text(wall_micros: int) -> str:
    """``yyyy-MM-dd HH:mm:ss[.f]``: the fraction without trailing zeros, as Spark casts timestamps."""
    days, rest = divmod(wall_micros, 86_400_000_000)
    seconds, micros = divmod(rest, 1_000_000)
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    text = f"{date_text(days)} {h:02d}:{m:02d}:{s:02d}"
    if micros:
        text += "." + f"{micros:06d}".rstrip("0")
    return text


__all__ = ["date_text", "decimal_text", "java_float_text", "timestamp_text"]
