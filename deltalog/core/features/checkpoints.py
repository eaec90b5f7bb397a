"""Checkpoint features: V2 checkpoints and checkpoint protection.

``v2Checkpoint`` (PROTOCOL "V2 Checkpoint Table Feature"): checkpoints are never multi-part, and are classic or
UUID-named V2 checkpoints with sidecars as ``delta.checkpointPolicy`` says; the checkpoint writer
(:mod:`deltalog.checkpoint`) meets it. ``checkpointProtection`` (``protocol_rfcs/checkpoint-protection.md``):
checkpoints below ``delta.requireCheckpointProtectionBeforeVersion`` are kept unless a cleanup truncates past
that version in one go (:func:`protected_before`, applied by :func:`deltalog.core.plans.cleanup.protect_checkpoints`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from deltalog.core.features.kinds import CHECKPOINT, CLEANUP, Obligation, Rule, on

V2_CHECKPOINT = "v2Checkpoint"
PROTECTION = "checkpointProtection"
PROTECTION_KEY = "delta.requireCheckpointProtectionBeforeVersion"


def protected_before(configuration: Mapping[str, str], features: Collection[str]) -> int | None:
    """The version below which checkpoints are protected, or None.

    Only tables whose protocol supports ``checkpointProtection`` (``features``, the supported ones) have one. A
    value that is not a version protects every checkpoint: keeping files is the side a misread property may err
    on.
    """
    if PROTECTION not in features or PROTECTION_KEY not in configuration:
        return None
    raw = str(configuration[PROTECTION_KEY]).strip()
    return int(raw) if raw.isdigit() else 2**63 - 1


OBLIGATIONS: Mapping[str, Rule] = {
    V2_CHECKPOINT: on(
        (CHECKPOINT,),
        Obligation("V2 checkpoints: never multi-part, classic or UUID-named per delta.checkpointPolicy", "checkpoint"),
    ),
    PROTECTION: on(
        (CHECKPOINT, CLEANUP),
        Obligation(
            "checkpoint protection (protocol_rfcs/checkpoint-protection.md) restricts checkpoints and "
            "cleanup below delta.requireCheckpointProtectionBeforeVersion",
            "checkpoint_protection",
        ),
    ),
}

__all__ = ["OBLIGATIONS", "PROTECTION", "PROTECTION_KEY", "V2_CHECKPOINT", "protected_before"]
