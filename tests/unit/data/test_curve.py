"""Space-filling curve keys (``deltalog.data.curve``): quantile range ids of any orderable column, Z-order bit
interleaving, and the Hilbert index, whose consecutive keys are neighbouring points."""

from __future__ import annotations

import datetime as dt
import itertools

import numpy as np
import pyarrow as pa
import pytest

from deltalog.data import curve
from deltalog.errors import InvalidArgumentError


@pytest.mark.parametrize(
    "values",
    [
        [3, None, 1, 2, 2],
        [2.5, -1.0, None, 7.0, 0.0],
        ["b", "a", None, "c", "a"],
        [dt.date(2020, 1, 3), dt.date(2020, 1, 1), None, dt.date(2021, 1, 1), dt.date(2020, 1, 2)],
        [True, False, None, True, False],
    ],
    ids=["int", "float", "string", "date", "bool"],
)
def test_range_ids_follow_the_order_with_nulls_first(values: list[object]) -> None:
    ids = curve.range_ids(pa.array(values), 4)
    assert ids.dtype == np.uint64 and ids.max() < 16
    present = [(v, int(i)) for v, i in zip(values, ids, strict=True) if v is not None]
    for v1, i1 in present:
        for v2, i2 in present:
            if v1 < v2:  # type: ignore[operator]
                assert i1 <= i2
            if v1 == v2:
                assert i1 == i2
    assert all(int(i) == 0 for v, i in zip(values, ids, strict=True) if v is None)


def test_range_ids_spread_equal_frequency_buckets() -> None:
    values = np.random.default_rng(7).integers(0, 1_000_000, 200_000)
    counts = np.bincount(curve.range_ids(pa.array(values), 4).astype(np.int64), minlength=16)
    assert counts.min() > 0.8 * len(values) / 16 and counts.max() < 1.2 * len(values) / 16


def test_z_order_interleaves_bits_first_column_most_significant() -> None:
    x, y = np.array([1, 0, 3, 2], np.uint64), np.array([0, 1, 3, 1], np.uint64)
    assert curve.interleave([x, y], 2).tolist() == [0b10, 0b01, 0b1111, 0b1001]


@pytest.mark.parametrize(("dims", "bits"), [(2, 3), (3, 2), (2, 5)])
def test_hilbert_visits_every_cell_once_moving_to_a_neighbour_each_step(dims: int, bits: int) -> None:
    side = 1 << bits
    grid = np.indices((side,) * dims).reshape(dims, -1).astype(np.uint64)
    keys = curve.hilbert(list(grid), bits)
    assert sorted(keys.tolist()) == list(range(side**dims))
    path = grid[:, np.argsort(keys)].astype(np.int64)
    steps = np.abs(np.diff(path, axis=1)).sum(axis=0)
    assert set(steps.tolist()) == {1}


def test_curve_order_sorts_rows_and_refuses_what_it_cannot_order() -> None:
    a = pa.array([3, 1, 2, 0])
    b = pa.array([0, 0, 0, 0])
    assert curve.curve_order([a, b]).to_pylist() == [3, 1, 2, 0]
    with pytest.raises(InvalidArgumentError, match="curve"):
        curve.curve_keys([a], "peano")
    with pytest.raises(InvalidArgumentError, match="order"):
        curve.range_ids(pa.array([[1], [2]]), 4)
    with pytest.raises(InvalidArgumentError, match="columns"):
        curve.bits_for(0)


def test_files_end_at_the_coarsest_cell_boundaries_that_fit() -> None:
    keys = np.arange(16, dtype=np.uint64)
    assert curve.file_cuts(keys, 4) == [4, 8, 12]  # four aligned cells of four
    assert curve.file_cuts(keys, 7) == [4, 8, 12]  # an 8-row cell does not fit: cells of 4, one per file
    assert curve.file_cuts(keys, 16) == []
    assert curve.file_cuts(np.zeros(10, np.uint64), 4) == [4, 8]  # one repeated key: split by rows
    uneven = np.array([0, 0, 0, 1, 2, 3, 8, 9, 10, 11, 12, 13], np.uint64)
    assert curve.file_cuts(uneven, 4) == [4, 6, 10]  # cells {0..3}, {8, 9}, {10, 11}... each a box


def test_z_ordered_files_of_whole_cells_are_boxes_a_box_filter_skips() -> None:
    rng = np.random.default_rng(27)
    a, b = rng.integers(0, 1_000_000, 64_000), rng.integers(0, 1_000_000, 64_000)
    order, keys = curve.sorted_by_curve([pa.array(a), pa.array(b)])
    positions = order.to_numpy()
    bounds = [0, *curve.file_cuts(keys, 4_000), len(a)]
    kept = 0
    for start, end in itertools.pairwise(bounds):
        rows = positions[start:end]
        if a[rows].min() < 250_000 and b[rows].min() < 250_000:
            kept += len(rows)
    matching = int(((a < 250_000) & (b < 250_000)).sum())
    # the box's cell, and the neighbours whose edge the sampled quantiles put a little inside the box
    assert kept < 2.5 * matching
