"""A deterministic interleaving harness for concurrent-writer scenarios.

Why: a conflict scenario is only meaningful if the reader of the test can see *which* writer read, and
which committed, before which. Real concurrency (threads racing, sleeps to "make it likely") gives flaky
tests that prove nothing when they pass. Here each writer runs in its own thread, holding its own
transaction across its steps the way a real writer does, but the steps of all writers run strictly in the
order a :class:`Schedule` names, one at a time, handed from thread to thread through one condition
variable::

    runs = run(
        Schedule("A.read B.read B.write A.write"),
        Writer("A", log_a, read=lambda w: w.begin(where={"date": "x"}), write=lambda w: w.commit([add_x])),
        Writer("B", log_b, read=lambda w: w.begin(), write=lambda w: w.commit([add_x2])),
    )
    assert isinstance(runs["A"].error, ConcurrentAppendError)

A step is any callable taking the writer's :class:`Ctx`. When a step raises, the exception is recorded on
the writer's :class:`Run` (with the step's name) and the writer's later steps are skipped, so the other
writers carry on in the scheduled order. Nothing ever sleeps: a writer that never gets its turn (a wrong
schedule, or an engine that hangs) fails the run after ``timeout`` seconds with :class:`HarnessError`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from deltalog import CommitResult, DeltaLog, Transaction
from deltalog import actions as A


class HarnessError(AssertionError):
    """The schedule could not be played (unknown step, a step never reached, a writer that hung)."""


@dataclass
class Ctx:
    """What one writer carries from step to step: its log, its transaction, what it built and got back."""

    name: str
    log: DeltaLog
    txn: Transaction | None = None
    actions: list[A.Action] = field(default_factory=list)
    result: CommitResult | None = None
    vars: dict[str, Any] = field(default_factory=dict)

    def begin(self, where: Mapping[str, Any] | None = None, *, read: bool = False, **kwargs: Any) -> Transaction:
        """Start the transaction (``kwargs`` go to ``start_transaction``); read ``where`` if given or ``read``."""
        self.txn = self.log.start_transaction(**kwargs)
        if where is not None or read:
            self.txn.read(where)
        return self.txn

    def commit(self, actions: Iterable[A.Action] = (), operation: str = "WRITE", **declared: Any) -> CommitResult:
        """Commit ``self.actions`` plus ``actions`` (starting a blind transaction if none was begun); ``declared``
        goes to :meth:`Transaction.commit` (``cdc_covers_all``, ``copies_rows``, ``data_validated``...)."""
        if self.txn is None:
            self.txn = self.log.start_transaction()
        self.result = self.txn.commit([*self.actions, *actions], operation=operation, **declared)
        return self.result


Step = Callable[[Ctx], Any]


@dataclass
class Writer:
    """A named writer and its steps, in the order it runs them (e.g. ``read``, ``prepare``, ``write``)."""

    name: str
    log: DeltaLog
    steps: dict[str, Step]

    def __init__(self, name: str, log: DeltaLog, **steps: Step) -> None:
        self.name = name
        self.log = log
        self.steps = steps


@dataclass
class Run:
    """What happened to one writer: each step's return value, and the exception that stopped it, if any."""

    ctx: Ctx
    values: dict[str, Any] = field(default_factory=dict)
    error: BaseException | None = None
    failed_step: str | None = None

    @property
    def result(self) -> CommitResult:
        """The commit result; re-raises the writer's error if it did not commit, so a test fails loudly."""
        if self.error is not None:
            raise self.error
        if self.ctx.result is None:
            raise HarnessError(f"writer {self.ctx.name} never committed")
        return self.ctx.result


class Schedule:
    """A total order of ``"<writer>.<step>"`` names; whitespace-separated text or a sequence."""

    def __init__(self, order: str | Sequence[str]) -> None:
        self.order: tuple[str, ...] = tuple(order.split() if isinstance(order, str) else order)

    def validate(self, writers: Sequence[Writer]) -> None:
        """Every step of every writer appears once, and each writer's steps appear in its own order."""
        expected = {f"{w.name}.{s}" for w in writers for s in w.steps}
        named = list(self.order)
        if len(set(named)) != len(named):
            raise HarnessError(f"a step is scheduled twice: {named}")
        if set(named) != expected:
            raise HarnessError(f"schedule {named} does not name exactly the writers' steps {sorted(expected)}")
        for w in writers:
            mine = [n.split(".", 1)[1] for n in named if n.split(".", 1)[0] == w.name]
            if mine != list(w.steps):
                raise HarnessError(f"schedule runs {w.name}'s steps as {mine}, but the writer defines {list(w.steps)}")

    def __repr__(self) -> str:
        return f"Schedule({' '.join(self.order)!r})"


def run(schedule: Schedule, *writers: Writer, timeout: float = 60.0) -> dict[str, Run]:
    """Play ``schedule``: each writer in its own thread, one step at a time, in the scheduled order."""
    if len({w.name for w in writers}) != len(writers):
        raise HarnessError("writer names must be unique")
    schedule.validate(writers)
    runs = {w.name: Run(Ctx(w.name, w.log)) for w in writers}
    turn = 0
    cond = threading.Condition()
    stuck: list[str] = []

    def my_turn(me: str) -> bool:
        return bool(stuck) or schedule.order[turn] == me

    def play(w: Writer) -> None:
        nonlocal turn
        r = runs[w.name]
        for step, fn in w.steps.items():
            me = f"{w.name}.{step}"
            with cond:
                if not cond.wait_for(partial(my_turn, me), timeout=timeout):
                    stuck.append(f"{me} waited {timeout}s for its turn; step {schedule.order[turn]} never finished")
                    cond.notify_all()
                    return
                if stuck:
                    return
            if r.error is None:
                try:
                    r.values[step] = fn(r.ctx)
                except BaseException as exc:  # recorded for the test to judge; never leaks from the thread
                    r.error, r.failed_step = exc, step
            with cond:
                turn += 1
                cond.notify_all()

    threads = [threading.Thread(target=play, args=(w,), name=f"writer-{w.name}", daemon=True) for w in writers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout + 5)
    if stuck or any(t.is_alive() for t in threads):
        raise HarnessError(f"{schedule} did not complete: {stuck or 'a step is still running'}")
    return runs


__all__ = ["Ctx", "HarnessError", "Run", "Schedule", "Step", "Writer", "run"]
