"""How a result value prints: a line a notebook shows whole, not the kilobytes of actions inside it.

Every result (a commit, a vacuum, a cleanup, a restore, a checkpoint, a log compaction, a Spark write) prints
as ``Kind(flag, key=value, ...)``: what happened (``dry_run``, ``skipped``), the version, the counts and the
bytes. The actions, paths and plans stay on the value, as attributes, for whoever asks for them.
"""

from __future__ import annotations


def result_repr(type_name: str, /, *flags: str, **values: object) -> str:
    """``type_name(flag, ..., key=value, ...)``; a value that is None is left out, a flag given as ``""`` too."""
    shown = [f for f in flags if f] + [f"{k}={v!r}" for k, v in values.items() if v is not None]
    return f"{type_name}({', '.join(shown)})"


__all__ = ["result_repr"]
