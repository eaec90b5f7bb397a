"""DataFrames and Arrow, both ways: pandas frames in with their index handled as a pandas user means it, and
Arrow tables out as pandas or polars frames for the reader that asked.

pandas' own Arrow export (``__arrow_c_stream__``, ``pyarrow.Table.from_pandas``) keeps any index that is not a
plain ``RangeIndex`` as a column named ``__index_level_0__``: every boolean mask, ``groupby``, ``sort_values``
or ``concat`` makes such an index, so the frame a user filtered would write a column they never asked for (and
a table created from it would hold it forever). An index is one of two things, told apart by its name:

* unnamed: row positions left over from the frame's history; it holds no data and is dropped;
* named (after ``set_index("ts")`` or a ``groupby("day").sum()``): it holds data. It is written as column(s)
  when the caller says ``preserve_index=True``, dropped when they say ``False``, and otherwise refused with
  a hint, never dropped silently.

pandas is never imported to recognise a frame: a frame can only exist if the caller already imported it. The
frame libraries are optional: asking for a frame from one that is not installed is a
:class:`~deltalog.errors.SetupError` saying what to install.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import pyarrow as pa

from deltalog.errors import InvalidArgumentError, SetupError

#: how pandas names the columns of an unnamed index it keeps (``__index_level_0__``, ...)
INDEX_COLUMN_PREFIX = "__index_level_"


def is_pandas_frame(data: Any) -> bool:
    """Whether ``data`` is a pandas DataFrame (without importing pandas: if it is not loaded, it is not one)."""
    pandas = sys.modules.get("pandas")
    return pandas is not None and isinstance(data, pandas.DataFrame)


def looks_like_index(name: str) -> bool:
    """Whether a column name is one pandas gave an index it exported (``__index_level_0__``)."""
    return name.startswith(INDEX_COLUMN_PREFIX) and name.endswith("__")


def _index_names(frame: Any) -> list[str | None]:
    return [None if n is None else str(n) for n in frame.index.names]


def _reset_names(names: list[str | None]) -> list[str]:
    """The column names ``DataFrame.reset_index()`` gives an index: its own, else ``index`` / ``level_N``."""
    if len(names) == 1:
        return [names[0] if names[0] is not None else "index"]
    return [n if n is not None else f"level_{i}" for i, n in enumerate(names)]


def frame_to_arrow(frame: Any, preserve_index: bool | None = None) -> pa.Table:
    """``frame`` (a pandas DataFrame) as an Arrow table without pandas' schema metadata.

    ``preserve_index``: None drops an unnamed index and refuses a named one; True writes the index as
    column(s) named as ``reset_index()`` names them; False drops any index.
    """
    names = _index_names(frame)
    named = [n for n in names if n is not None]
    if preserve_index is None and named:
        raise InvalidArgumentError(
            f"the DataFrame's index {named if len(named) > 1 else named[0]!r} holds data: "
            "write it as a column with preserve_index=True (or df.reset_index()), or drop it with "
            "preserve_index=False"
        )
    keep = preserve_index is True
    try:
        table = pa.Table.from_pandas(frame, preserve_index=keep)
    except (pa.ArrowException, ValueError, TypeError) as exc:
        raise InvalidArgumentError(f"the DataFrame cannot be converted to Arrow: {exc}") from None
    if keep:  # the index columns come last; pandas' own names for unnamed levels become reset_index()'s
        columns = table.column_names[: len(table.column_names) - len(names)]
        wanted = _reset_names(names)
        clash = sorted(set(wanted) & set(columns))
        if clash:
            raise InvalidArgumentError(
                f"the DataFrame's index and a column are both named {clash}: rename one before writing"
            )
        table = table.rename_columns([*columns, *wanted])
    return table.replace_schema_metadata(None)


def _library(name: str, call: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        raise SetupError(f"{call} needs {name}, which is not installed: pip install {name}") from None


def to_pandas(table: pa.Table) -> Any:
    """``table`` as a pandas DataFrame (pyarrow's conversion: timestamps stay zone-aware, nulls as pandas has
    them); :class:`SetupError` when pandas is not installed."""
    _library("pandas", "to_pandas()")
    return table.to_pandas()


def to_polars(table: pa.Table) -> Any:
    """``table`` as a polars DataFrame (zero-copy where polars can); :class:`SetupError` when polars is not
    installed."""
    polars = _library("polars", "to_polars()")
    return polars.from_arrow(table)


__all__ = ["INDEX_COLUMN_PREFIX", "frame_to_arrow", "is_pandas_frame", "looks_like_index", "to_pandas", "to_polars"]
