"""What the checker reports: a :class:`Violation` per broken rule, and the :class:`Rule` registry.

Every rule is a function registered with :func:`rule`, which records its id, the PROTOCOL.md section it
enforces (quoted in the function's docstring too) and whether it is *strict only*: a rule the protocol
words as a SHOULD, or that third-party writers are known to break without harming readers. Lenient mode
skips strict-only rules; the corpus report says which tables break which of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Violation:
    """One broken rule, located as precisely as the log allows.

    ``file`` is relative to ``_delta_log`` (``_last_checkpoint``, ``00000000000000000003.json``,
    ``_sidecars/x.parquet``); ``line`` is the 1-based line of a JSON file or the 1-based row of a
    parquet file; ``action`` the action kind (``add``, ``metaData``, ...) and ``key`` what names the
    action inside its kind (a file path, a domain, an appId).
    """

    rule: str
    version: int | None
    file: str | None
    message: str
    line: int | None = None
    action: str | None = None
    key: str | None = None

    def __str__(self) -> str:
        where = "table" if self.version is None else f"v{self.version}"
        if self.file:
            where += f" {self.file}" + (f":{self.line}" if self.line is not None else "")
        if self.action:
            where += f" {self.action}" + (f"[{self.key}]" if self.key is not None else "")
        return f"{where}: {self.rule}: {self.message}"


@dataclass(frozen=True)
class Finding:
    """What a rule function yields; the checker turns it into a :class:`Violation` with its rule's id.

    Fields left ``None`` are filled from the context the rule ran in (the commit's version and file).
    """

    message: str
    line: int | None = None
    action: str | None = None
    key: str | None = None
    version: int | None = None
    file: str | None = None


@dataclass(frozen=True)
class Rule:
    id: str
    scope: str  # "commit" (per commit), "checkpoint" (per checkpoint file set), "log" (whole listing)
    section: str  # the PROTOCOL.md (or protocol_rfcs/) section it enforces
    strict_only: bool
    check: Callable[[Any], Iterator[Finding]] = field(compare=False)

    @property
    def summary(self) -> str:
        return (self.check.__doc__ or "").strip().splitlines()[0]


RULES: dict[str, Rule] = {}


def rule(
    rule_id: str, *, scope: str, section: str, strict_only: bool = False
) -> Callable[[Callable[[Any], Iterator[Finding]]], Callable[[Any], Iterator[Finding]]]:
    """Register a rule function under ``rule_id`` (ids are unique: a second registration is a bug)."""

    def register(fn: Callable[[Any], Iterator[Finding]]) -> Callable[[Any], Iterator[Finding]]:
        if rule_id in RULES:
            raise ValueError(f"rule {rule_id} registered twice")
        if not (fn.__doc__ or "").strip():
            raise ValueError(f"rule {rule_id} needs a docstring citing its PROTOCOL.md section")
        RULES[rule_id] = Rule(rule_id, scope, section, strict_only, fn)
        return fn

    return register


def rules_for(scope: str, strict: bool) -> list[Rule]:
    return [r for r in RULES.values() if r.scope == scope and (strict or not r.strict_only)]


class ProtocolViolationError(AssertionError):
    """Raised by :func:`tests.protocol_checker.assert_valid`; the message lists every violation."""

    def __init__(self, root: str, violations: list[Violation]) -> None:
        self.violations = violations
        lines = "\n".join(f"  {v}" for v in violations)
        super().__init__(f"{len(violations)} protocol violation(s) in {root}:\n{lines}")
