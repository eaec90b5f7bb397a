"""Columns of one value (deltalog.data.constants): equal to ``pa.repeat``, sharing one buffer per value within a
read, bounded, and kept per thread."""

from __future__ import annotations

import datetime as dt
import threading
from decimal import Decimal

import pyarrow as pa
import pytest

from deltalog.data.constants import MAX_BYTES, MAX_ENTRIES, Constants

UTC = dt.timezone.utc

VALUES = [
    pa.scalar("p1"),
    pa.scalar(None, pa.string()),
    pa.scalar(7, pa.int64()),
    pa.scalar(7, pa.int32()),
    pa.scalar(None, pa.int64()),
    pa.scalar(Decimal("1.50"), pa.decimal128(5, 2)),
    pa.scalar(dt.datetime(2024, 5, 1, 12, tzinfo=UTC), pa.timestamp("us", tz="UTC")),
    pa.scalar(dt.date(2024, 5, 1)),
    pa.scalar(True),
    pa.scalar(float("nan")),
]


def data_buffer(column: pa.Array) -> int:
    """The address of the column's last buffer (its values, or a string's bytes)."""
    buffers = [b for b in column.buffers() if b is not None]
    return buffers[-1].address


@pytest.mark.parametrize("value", VALUES, ids=lambda v: f"{v.type}:{v}")
def test_a_column_is_the_repeated_value(value: pa.Scalar) -> None:
    constants = Constants()
    for n in (5, 3, 8, 0, 8):
        column = constants.column(value, n)
        assert column.type == value.type
        assert column.equals(pa.repeat(value, n)) or value.as_py() != value.as_py()  # NaN is not equal to itself
        assert len(column) == n and column.null_count == (n if not value.is_valid else 0)


def test_one_buffer_per_value_the_longest_built_sliced_for_shorter_batches() -> None:
    constants = Constants()
    first = constants.column(pa.scalar("p1"), 100)
    shorter = constants.column(pa.scalar("p1"), 40)
    assert data_buffer(shorter) == data_buffer(first)
    other_type = constants.column(pa.scalar(1, pa.int32()), 100)
    assert constants.column(pa.scalar(1, pa.int64()), 100).type == pa.int64()  # same number, another type
    longer = constants.column(pa.scalar("p1"), 200)  # built again, and kept for what follows
    assert data_buffer(constants.column(pa.scalar("p1"), 150)) == data_buffer(longer) != data_buffer(first)
    assert data_buffer(constants.column(pa.scalar(1, pa.int32()), 10)) == data_buffer(other_type)


def test_bounded_in_values_and_bytes_least_recently_used_dropped() -> None:
    constants = Constants()
    oldest = constants.column(pa.scalar(-1, pa.int64()), 10)
    recent = constants.column(pa.scalar(-2, pa.int64()), 10)
    for i in range(MAX_ENTRIES - 1):
        constants.column(pa.scalar(i, pa.int64()), 10)
        constants.column(pa.scalar(-2, pa.int64()), 10)  # used again: stays
    assert data_buffer(constants.column(pa.scalar(-2, pa.int64()), 10)) == data_buffer(recent)
    assert data_buffer(constants.column(pa.scalar(-1, pa.int64()), 10)) != data_buffer(oldest)
    rows = MAX_BYTES // 8 + 1  # an int64 column over the byte bound: built for its batch alone
    big = constants.column(pa.scalar(5, pa.int64()), rows)
    assert data_buffer(constants.column(pa.scalar(5, pa.int64()), rows)) != data_buffer(big)
    assert data_buffer(constants.column(pa.scalar(-2, pa.int64()), 10)) == data_buffer(recent)


def test_each_thread_keeps_its_own_columns() -> None:
    constants = Constants()
    mine = constants.column(pa.scalar("p1"), 10)
    seen: list[int] = []
    thread = threading.Thread(
        target=lambda: seen.extend(data_buffer(constants.column(pa.scalar("p1"), 10)) for _ in range(2))
    )
    thread.start()
    thread.join()
    assert seen[0] == seen[1] != data_buffer(mine)
    assert data_buffer(constants.column(pa.scalar("p1"), 5)) == data_buffer(mine)
