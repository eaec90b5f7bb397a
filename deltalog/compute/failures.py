"""How a kernel reports a value Spark's ANSI mode refuses: one error type, Spark's error class, the value."""

from __future__ import annotations

from deltalog.errors import ExpressionValueError


def refuse(error_class: str, message: str, value: object = None) -> ExpressionValueError:
    return ExpressionValueError(f"[{error_class}] {message}", error_class=error_class, value=value)


def shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


__all__ = ["refuse", "shown"]
