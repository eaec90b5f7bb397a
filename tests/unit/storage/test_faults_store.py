"""FaultyStore itself: rules match by operation, path and count, faults do what they say, every call is recorded."""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import BinaryIO

import pytest

from deltalog.errors import FileAlreadyExistsError, NotFoundError, StorageError
from deltalog.storage.base import LogStore
from deltalog.storage.faults import (
    Call,
    FaultPlan,
    FaultRule,
    FaultyStore,
    Mode,
    Outcome,
    SimulatedCrash,
    connection_reset,
    crash,
    fail_after,
    fail_before,
    server_error,
    slow,
    throttle,
    timeout,
)
from deltalog.storage.local import LocalLogStore

C1 = "_delta_log/00000000000000000001.json"
C2 = "_delta_log/00000000000000000002.json"
HINT = "_delta_log/_last_checkpoint"


def no_sleep(seconds: float) -> None:
    del seconds


def faulty(tmp_path: Path, *rules: FaultRule | FaultPlan, seed: int | None = None) -> FaultyStore:
    return FaultyStore(LocalLogStore(str(tmp_path)), *rules, seed=seed, sleep=no_sleep)


def outcomes(calls: list[Call]) -> list[Outcome]:
    return [c.outcome for c in calls]


# ------------------------------------------------------------------------------------------ delegation
def test_is_a_log_store_reporting_the_inner_root_and_capabilities(tmp_path: Path) -> None:
    inner = LocalLogStore(str(tmp_path))
    store = FaultyStore(inner)
    assert isinstance(store, LogStore)
    assert store.root == inner.root
    assert store.capabilities == inner.capabilities


def test_without_rules_every_operation_delegates_and_is_recorded(tmp_path: Path) -> None:
    store = faulty(tmp_path)
    store.put_if_absent(C1, b"one\n")
    store.put(HINT, b"{}")
    assert store.read(C1) == b"one\n"
    with store.open(C1) as f:
        assert f.read() == b"one\n"
    assert [i.name for i in store.list_from("_delta_log/0")] == ["00000000000000000001.json", "_last_checkpoint"]
    assert store.exists(C1) is True
    store.delete(HINT)
    assert store.exists(HINT) is False
    assert [(c.op, c.path, c.outcome) for c in store.calls] == [
        ("put_if_absent", C1, Outcome.OK),
        ("put", HINT, Outcome.OK),
        ("read", C1, Outcome.OK),
        ("open", C1, Outcome.OK),
        ("list_from", "_delta_log/0", Outcome.OK),
        ("exists", C1, Outcome.OK),
        ("delete", HINT, Outcome.OK),
        ("exists", HINT, Outcome.OK),
    ]
    assert store.injected() == []
    assert (tmp_path / C1).read_bytes() == b"one\n"


def test_errors_of_the_inner_store_pass_through_and_are_recorded(tmp_path: Path) -> None:
    store = faulty(tmp_path)
    with pytest.raises(NotFoundError):
        store.read(C1)
    store.put_if_absent(C1, b"first")
    with pytest.raises(FileAlreadyExistsError):
        store.put_if_absent(C1, b"second")
    assert [(c.op, c.outcome, c.error) for c in store.calls] == [
        ("read", Outcome.ERROR, "NotFoundError"),
        ("put_if_absent", Outcome.OK, None),
        ("put_if_absent", Outcome.ERROR, "FileAlreadyExistsError"),
    ]
    assert (tmp_path / C1).read_bytes() == b"first"


# ------------------------------------------------------------------------------------------ fault modes
def test_fail_before_raises_a_retryable_error_and_leaves_the_store_untouched(tmp_path: Path) -> None:
    store = faulty(tmp_path, fail_before("put_if_absent", name="lost request"))
    with pytest.raises(StorageError) as info:
        store.put_if_absent(C1, b"data")
    assert info.value.retryable is True
    assert info.value.path == C1
    assert not (tmp_path / C1).exists()
    assert not (tmp_path / "_delta_log").exists()  # not even the directory was created
    assert store.calls == [Call("put_if_absent", C1, Outcome.FAILED_BEFORE, "lost request", "StorageError")]


def test_fail_after_lands_the_write_and_then_raises(tmp_path: Path) -> None:
    store = faulty(tmp_path, fail_after("put_if_absent"))
    with pytest.raises(StorageError) as info:
        store.put_if_absent(C1, b"data")
    assert info.value.retryable is True
    assert (tmp_path / C1).read_bytes() == b"data"
    assert outcomes(store.calls) == [Outcome.FAILED_AFTER]
    assert store.calls[0].injected


def test_fail_after_does_not_hide_a_real_error_of_the_inner_call(tmp_path: Path) -> None:
    fired: list[str] = []
    store = faulty(tmp_path, fail_after("put_if_absent", on_fire=lambda op, path: fired.append(path)))
    LocalLogStore(str(tmp_path)).put_if_absent(C1, b"theirs")
    with pytest.raises(FileAlreadyExistsError):
        store.put_if_absent(C1, b"ours")
    assert fired == []  # nothing landed, so there was no answer to lose
    assert outcomes(store.calls) == [Outcome.ERROR]
    assert (tmp_path / C1).read_bytes() == b"theirs"


def test_fail_after_on_open_closes_the_stream_nobody_will_read(tmp_path: Path) -> None:
    opened: list[BinaryIO] = []

    class Tracking(LocalLogStore):
        def open(self, path: str) -> BinaryIO:
            f = super().open(path)
            opened.append(f)
            return f

    inner = Tracking(str(tmp_path))
    inner.put_if_absent(C1, b"x")
    store = FaultyStore(inner, fail_after("open"))
    with pytest.raises(StorageError):
        store.open(C1)
    assert len(opened) == 1 and opened[0].closed


def test_crash_leaves_a_torn_temp_file_beside_the_target_and_nothing_else(tmp_path: Path) -> None:
    store = faulty(tmp_path, crash("put_if_absent", C1))
    data = b"0123456789" * 10
    with pytest.raises(SimulatedCrash) as info:
        store.put_if_absent(C1, data)
    assert not isinstance(info.value, Exception)  # `except Exception` in the engine cannot swallow a kill
    log_dir = tmp_path / "_delta_log"
    names = [p.name for p in log_dir.iterdir()]
    assert len(names) == 1
    assert re.fullmatch(r"\.00000000000000000001\.json\.[0-9a-f]{32}\.tmp", names[0])
    assert (log_dir / names[0]).read_bytes() == data[:50]
    assert not (tmp_path / C1).exists()
    assert info.value.leftover == f"_delta_log/{names[0]}"
    (call,) = store.calls_to("put_if_absent")
    assert call.outcome is Outcome.CRASHED and call.leftover == info.value.leftover
    assert [c.op for c in store.calls] == ["put_if_absent"]  # the temp write is not a caller's call


def test_slow_sleeps_through_the_injected_sleep_then_succeeds(tmp_path: Path) -> None:
    slept: list[float] = []
    store = FaultyStore(LocalLogStore(str(tmp_path)), slow("read", delay_s=2.5), sleep=slept.append)
    store.put_if_absent(C1, b"x")
    assert store.read(C1) == b"x"
    assert slept == [2.5]
    read = store.calls_to("read")[0]
    assert read.outcome is Outcome.OK and read.delay_s == 2.5
    assert store.injected() == []


def test_delay_composes_with_a_failure(tmp_path: Path) -> None:
    slept: list[float] = []
    store = FaultyStore(
        LocalLogStore(str(tmp_path)),
        slow("put_if_absent", delay_s=1.0),
        fail_before("put_if_absent", error=timeout(), delay_s=30.0),
        sleep=slept.append,
    )
    with pytest.raises(TimeoutError):
        store.put_if_absent(C1, b"x")
    assert slept == [31.0]
    assert store.calls[0].outcome is Outcome.FAILED_BEFORE and store.calls[0].delay_s == 31.0


@pytest.mark.parametrize(
    ("rule", "expected", "text"),
    [
        (fail_before("read", error=server_error(500, "Internal Server Error")), StorageError, "HTTP 500"),
        (fail_before("read", error=server_error()), StorageError, "HTTP 503 Service Unavailable"),
        (throttle("read"), StorageError, "SlowDown"),
        (fail_before("read", error=timeout()), TimeoutError, "timeout"),
        (fail_before("read", error=connection_reset()), ConnectionResetError, "connection reset"),
    ],
)
def test_error_factories(tmp_path: Path, rule: FaultRule, expected: type[BaseException], text: str) -> None:
    store = faulty(tmp_path, rule)
    with pytest.raises(expected, match=text) as info:
        store.read(C1)
    if isinstance(info.value, StorageError):
        assert info.value.retryable is True
    assert store.calls[0].error == expected.__name__


def test_on_fire_runs_inside_the_window_the_mode_describes(tmp_path: Path) -> None:
    seen: dict[str, bool] = {}
    store = faulty(
        tmp_path,
        fail_before("put_if_absent", C1, on_fire=lambda op, path: seen.update(before=(tmp_path / path).exists())),
        fail_after("put_if_absent", C2, on_fire=lambda op, path: seen.update(after=(tmp_path / path).exists())),
    )
    for path in (C1, C2):
        with pytest.raises(StorageError):
            store.put_if_absent(path, b"x")
    assert seen == {"before": False, "after": True}


def test_failures_on_reads_and_listings(tmp_path: Path) -> None:
    store = faulty(tmp_path, fail_before(("read", "list_from", "exists", "open")))
    store.put_if_absent(C1, b"x")
    with pytest.raises(StorageError):
        store.read(C1)
    with pytest.raises(StorageError):
        store.list_from("_delta_log/0")
    with pytest.raises(StorageError):
        store.exists(C1)
    with pytest.raises(StorageError):
        store.open(C1)
    assert [(c.op, c.outcome) for c in store.calls] == [
        ("put_if_absent", Outcome.OK),
        ("read", Outcome.FAILED_BEFORE),
        ("list_from", Outcome.FAILED_BEFORE),
        ("exists", Outcome.FAILED_BEFORE),
        ("open", Outcome.FAILED_BEFORE),
    ]


def test_one_rule_shares_its_count_across_the_operations_it_matches(tmp_path: Path) -> None:
    store = faulty(tmp_path, fail_before(("read", "list_from"), first=2))
    store.put_if_absent(C1, b"x")
    with pytest.raises(StorageError):
        store.read(C1)
    with pytest.raises(StorageError):
        store.list_from("_delta_log/0")
    assert store.read(C1) == b"x"
    assert [(c.op, c.outcome) for c in store.calls] == [
        ("put_if_absent", Outcome.OK),
        ("read", Outcome.FAILED_BEFORE),
        ("list_from", Outcome.FAILED_BEFORE),
        ("read", Outcome.OK),
    ]


# ------------------------------------------------------------------------------------------ matching
def test_rules_match_by_operation(tmp_path: Path) -> None:
    store = faulty(tmp_path, fail_before("put_if_absent"))
    store.put(HINT, b"plain put is not matched")
    assert store.read(HINT) == b"plain put is not matched"
    with pytest.raises(StorageError):
        store.put_if_absent(C2, b"x")
    assert outcomes(store.calls) == [Outcome.OK, Outcome.OK, Outcome.FAILED_BEFORE]


def test_rules_match_by_glob(tmp_path: Path) -> None:
    store = faulty(tmp_path, fail_before("put_if_absent", "_delta_log/*2.json"))
    store.put_if_absent(C1, b"x")
    store.put_if_absent("_delta_log/00000000000000000002.checkpoint.parquet", b"x")
    with pytest.raises(StorageError):
        store.put_if_absent(C2, b"x")
    assert outcomes(store.calls) == [Outcome.OK, Outcome.OK, Outcome.FAILED_BEFORE]


def test_rules_match_by_predicate(tmp_path: Path) -> None:
    store = faulty(tmp_path, fail_before(None, lambda p: p.endswith("_last_checkpoint")))
    store.put_if_absent(C1, b"x")
    assert store.exists(C1)
    for op in (lambda: store.put(HINT, b"{}"), lambda: store.read(HINT), lambda: store.delete(HINT)):
        with pytest.raises(StorageError):
            op()
    assert outcomes(store.calls) == [Outcome.OK, Outcome.OK] + [Outcome.FAILED_BEFORE] * 3


def test_nth_fails_only_that_matching_call_and_other_paths_do_not_count(tmp_path: Path) -> None:
    store = faulty(tmp_path, fail_before("read", C1, nth=2))
    store.put_if_absent(C1, b"x")
    store.put_if_absent(C2, b"y")
    assert store.read(C2) == b"y"  # another path: not counted
    assert store.read(C1) == b"x"  # 1st match
    with pytest.raises(StorageError):
        store.read(C1)  # 2nd match
    assert store.read(C1) == b"x"  # 3rd match
    assert outcomes(store.calls_to("read", C1)) == [Outcome.OK, Outcome.FAILED_BEFORE, Outcome.OK]


def test_first_k_fails_the_first_k_matching_calls(tmp_path: Path) -> None:
    store = faulty(tmp_path, fail_before("put_if_absent", first=3))
    for _ in range(3):
        with pytest.raises(StorageError):
            store.put_if_absent(C1, b"x")
    store.put_if_absent(C1, b"x")
    with pytest.raises(FileAlreadyExistsError):
        store.put_if_absent(C1, b"x")
    assert outcomes(store.calls) == [Outcome.FAILED_BEFORE] * 3 + [Outcome.OK, Outcome.ERROR]


def test_first_rule_that_fires_decides_and_every_rule_keeps_its_own_count(tmp_path: Path) -> None:
    store = faulty(
        tmp_path,
        fail_after("put_if_absent", nth=2, name="after#2"),
        fail_before("put_if_absent", first=2, name="before<=2"),
    )
    with pytest.raises(StorageError):
        store.put_if_absent(C1, b"x")  # only before<=2 fires
    with pytest.raises(StorageError):
        store.put_if_absent(C1, b"x")  # both fire; after#2 comes first
    assert [(c.outcome, c.rule) for c in store.calls] == [
        (Outcome.FAILED_BEFORE, "before<=2"),
        (Outcome.FAILED_AFTER, "after#2"),
    ]
    assert (tmp_path / C1).exists()


def _pattern(store: FaultyStore, n: int) -> list[bool]:
    out = []
    for _ in range(n):
        try:
            store.exists(C1)
            out.append(False)
        except StorageError:
            out.append(True)
    return out


def test_probability_is_reproducible_with_a_seed(tmp_path: Path) -> None:
    rule = fail_before("exists", probability=0.3)
    a = _pattern(faulty(tmp_path, rule, seed=7), 400)
    b = _pattern(faulty(tmp_path, rule, seed=7), 400)
    c = _pattern(faulty(tmp_path, rule, seed=8), 400)
    assert a == b
    assert a != c
    assert 80 <= sum(a) <= 160  # 120 expected
    assert _pattern(faulty(tmp_path, fail_before("exists", probability=0.0)), 50) == [False] * 50


def test_a_plan_carries_its_seed(tmp_path: Path) -> None:
    plan = FaultPlan((fail_before("exists", probability=0.5),), seed=42)
    assert _pattern(faulty(tmp_path, plan), 100) == _pattern(faulty(tmp_path, *plan.rules, seed=42), 100)


def test_probability_applies_within_the_count_window(tmp_path: Path) -> None:
    store = faulty(tmp_path, fail_before("exists", first=10, probability=0.5), seed=3)
    pattern = _pattern(store, 40)
    assert not any(pattern[10:])
    assert 0 < sum(pattern[:10]) < 10


# ------------------------------------------------------------------------------------------ configuration
def test_arm_and_disarm(tmp_path: Path) -> None:
    store = faulty(tmp_path)
    store.put_if_absent(C1, b"x")
    store.arm(fail_before("read", nth=1))
    assert len(store.rules) == 1
    with pytest.raises(StorageError):
        store.read(C1)
    store.arm(fail_before("read", nth=1))  # a newly armed rule counts from when it was armed
    with pytest.raises(StorageError):
        store.read(C1)
    store.arm(fail_before("read"))
    store.disarm()
    assert store.rules == ()
    assert store.read(C1) == b"x"
    assert len(store.calls) == 4
    store.clear_calls()
    assert store.calls == []


def test_calls_to_filters_by_operation_and_path(tmp_path: Path) -> None:
    store = faulty(tmp_path)
    store.put_if_absent(C1, b"x")
    store.put_if_absent(C2, b"x")
    store.read(C2)
    assert [c.path for c in store.calls_to("put_if_absent")] == [C1, C2]
    assert [c.op for c in store.calls_to(None, C2)] == ["put_if_absent", "read"]
    assert store.calls_to("read", C1) == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"op": "rename"}, "unknown operations"),
        ({"nth": 1, "first": 2}, "nth or first"),
        ({"nth": 0}, "counts from 1"),
        ({"first": -1}, "first must be"),
        ({"probability": 1.5}, "probability"),
        ({"delay_s": -1.0}, "delay_s"),
        ({"op": "read", "mode": Mode.CRASH}, "temp file"),
        ({"mode": Mode.CRASH}, "temp file"),
    ],
)
def test_rule_validation(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        FaultRule(**kwargs)  # type: ignore[arg-type]


def test_rules_are_frozen() -> None:
    rule = fail_before("read")
    with pytest.raises(AttributeError):
        rule.nth = 3  # type: ignore[misc]


def test_counts_and_log_are_consistent_under_threads(tmp_path: Path) -> None:
    store = faulty(tmp_path, fail_before("exists", first=50))
    failures: list[int] = []
    lock = threading.Lock()

    def worker() -> None:
        n = sum(_pattern(store, 25))
        with lock:
            failures.append(n)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(failures) == 50
    assert len(store.calls) == 200
    assert len(store.injected()) == 50
