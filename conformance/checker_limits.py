"""Where the protocol checker's verdict on a corpus table is known not to apply, and why.

The write runner fails a table when the checker finds a violation our writes introduced. The checker compares
paths as written (``tests/protocol_checker/README.md``: no URI canonicalisation), while deltalog, like Delta
Spark, reconciles canonical paths: in the two ``canonicalized-paths`` tables a remove spelled ``file:/p``
cancels the add of ``/p`` (see :mod:`conformance.deviations`). A checkpoint deltalog writes there carries
the canonical state (no live file), which the checker's literal replay (the add still live) calls a mismatch.
Only the named rule is set aside, only for the named table; every other rule still counts.
"""

from __future__ import annotations

PATHS_AS_WRITTEN = "the checker replays paths as written; deltalog and Delta Spark reconcile canonical paths"

#: table name -> rule id -> why a finding of that rule on that table is not held against our writes
ALLOWED: dict[str, dict[str, str]] = {
    "delta/canonicalized-paths-normal-a": {"ckpt.matches-replay": PATHS_AS_WRITTEN},
    "delta/canonicalized-paths-special-a": {"ckpt.matches-replay": PATHS_AS_WRITTEN},
}


def allowance(table: str, rule: str) -> str | None:
    """Why ``rule``'s findings on ``table`` do not count, or ``None`` when they do."""
    return ALLOWED.get(table, {}).get(rule)


__all__ = ["ALLOWED", "PATHS_AS_WRITTEN", "allowance"]
