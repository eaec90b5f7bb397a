"""What one table's write checks came to: each step's outcome and the table's, per group of steps.

Why apart from :mod:`conformance.writes`: the report (:mod:`conformance.write_report`) and the tests read
results without running anything, and the runner is long enough without its result types.
"""

from __future__ import annotations

from dataclasses import dataclass, field

PASSED, REFUSED, FAILED, UNREADABLE, SKIPPED = "passed", "refused", "failed", "unreadable", "skipped"
#: the maintenance steps (their outcome is reported apart from the append's: maintenance may be legal where an
#: append is not)
MAINTENANCE_STEPS = ("checkpoint", "cleanup", "vacuum")
APPEND_STEP = "append"


@dataclass
class Step:
    name: str
    status: str  # passed, refused, failed or skipped
    detail: str = ""
    feature: str | None = None  # the feature a refusal names (UnsupportedFeatureError.feature)


@dataclass
class WriteResult:
    """One table's outcome: ``status`` is ``failed`` if anything failed, else ``refused`` if a step was
    refused, else ``passed`` (or ``unreadable``: skipped, as the read runner expects it to be)."""

    name: str
    features: list[str]
    steps: list[Step] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what passed but is worth knowing
    unreadable: str | None = None
    seconds: float = 0.0

    @property
    def refusals(self) -> list[str]:
        return [f"{s.name}: {s.detail}" for s in self.steps if s.status == REFUSED]

    @property
    def status(self) -> str:
        if self.unreadable is not None:
            return UNREADABLE
        if self.failures:
            return FAILED
        return REFUSED if self.refusals else PASSED

    def outcome(self, names: tuple[str, ...]) -> str:
        """The outcome of the steps ``names`` together: failed, else refused, else passed (skipped steps do not
        count); ``unreadable`` for a table that was not run. A failure is a step's when it starts with the
        step's name; any other (a new protocol violation, a peer's disagreement, a changed version after
        maintenance) fails every group, since no one step owns it."""
        if self.unreadable is not None:
            return UNREADABLE
        steps = (*MAINTENANCE_STEPS, APPEND_STEP)
        for f in self.failures:
            owner = next((n for n in steps if f.startswith(f"{n}: ")), None)
            if owner is None or owner in names:
                return FAILED
        return REFUSED if any(s.status == REFUSED for s in self.steps if s.name in names) else PASSED

    @property
    def maintenance(self) -> str:
        return self.outcome(MAINTENANCE_STEPS)

    @property
    def append(self) -> str:
        return self.outcome((APPEND_STEP,))


__all__ = [
    "APPEND_STEP",
    "FAILED",
    "MAINTENANCE_STEPS",
    "PASSED",
    "REFUSED",
    "SKIPPED",
    "UNREADABLE",
    "Step",
    "WriteResult",
]
