"""The public API explains itself: every public DeltaLog and Snapshot member has a docstring, and the Spark
entry points show their real parameters (equal to the implementations', so they cannot drift)."""

from __future__ import annotations

import inspect

import pytest

import deltalog.spark
from deltalog import DeltaLog, Snapshot
from deltalog.spark import distributed_checkpoint, reader, writer


def _doc(cls: type, name: str) -> str | None:
    raw = inspect.getattr_static(cls, name)
    target = raw.fget if isinstance(raw, property) else getattr(raw, "__func__", raw)
    return getattr(target, "__doc__", None)


@pytest.mark.parametrize("cls", [DeltaLog, Snapshot])
def test_every_public_member_has_a_docstring(cls: type) -> None:
    missing = [name for name in sorted(vars(cls)) if not name.startswith("_") and not _doc(cls, name)]
    assert missing == []


@pytest.mark.parametrize(
    ("public", "implementation"),
    [
        (deltalog.spark.write, writer.write),
        (deltalog.spark.read, reader.read),
        (deltalog.spark.checkpoint, distributed_checkpoint.checkpoint),
    ],
)
def test_spark_entry_points_have_the_implementations_signatures(public: object, implementation: object) -> None:
    def shape(f: object) -> list[tuple[str, object, object]]:
        return [(p.name, p.kind, p.default) for p in inspect.signature(f).parameters.values()]  # type: ignore[arg-type]

    assert shape(public) == shape(implementation)
    assert inspect.getdoc(public)
