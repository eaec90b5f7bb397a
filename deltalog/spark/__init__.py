"""Spark integration: ``format("deltalog")`` for batch and streaming reads and writes, checkpoints, and
:class:`DeltaTable`, Delta Spark's ``delta.tables`` API (:mod:`deltalog.spark.delta_table`).

pyspark is imported only inside this package (and lazily: ``import deltalog.spark`` works without it; the
functions need it). Install it with ``pip install 'deltalog[spark]'``.

:func:`register` makes ``spark.read.format("deltalog")``, ``df.write.format("deltalog")`` and their streaming
forms known to a session (:mod:`deltalog.spark.source`). :func:`write`, :func:`read` and :func:`read_changes` are
that sink and source behind Python arguments, :func:`checkpoint` writes a checkpoint and :func:`optimize` rewrites
files with Spark's executors. They are the implementations in :mod:`deltalog.spark.registration`,
:mod:`~deltalog.spark.writer`, :mod:`~deltalog.spark.reader`, :mod:`~deltalog.spark.changes`,
:mod:`~deltalog.spark.distributed_checkpoint` and :mod:`~deltalog.spark.distributed_optimize`,
wrapped (on first use, so that
importing this package stays cheap) by the two checks every entry point makes: calling one without pyspark, or
on a cluster whose executors cannot import deltalog, raises :class:`~deltalog.errors.SetupError` saying what to
install. The wrapper carries the implementation's signature and docstring (``functools.wraps``), so ``help()``,
IDEs and the API docs show the real parameters from their one definition.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from deltalog.errors import DeltaLogError
    from deltalog.spark.changes import read_changes
    from deltalog.spark.delta_table import DeltaTable
    from deltalog.spark.distributed_checkpoint import checkpoint
    from deltalog.spark.distributed_optimize import optimize
    from deltalog.spark.reader import read
    from deltalog.spark.registration import register
    from deltalog.spark.table_builders import (
        DeltaMergeBuilder,
        DeltaOptimizeBuilder,
        DeltaTableBuilder,
        IdentityGenerator,
    )
    from deltalog.spark.writer import write

__all__ = [
    "DeltaMergeBuilder",
    "DeltaOptimizeBuilder",
    "DeltaTable",
    "DeltaTableBuilder",
    "IdentityGenerator",
    "carried_error",
    "checkpoint",
    "optimize",
    "read",
    "read_changes",
    "register",
    "write",
]

#: public name -> the module that implements it
_ENTRY_POINTS = {
    "register": "deltalog.spark.registration",
    "write": "deltalog.spark.writer",
    "read": "deltalog.spark.reader",
    "read_changes": "deltalog.spark.changes",
    "checkpoint": "deltalog.spark.distributed_checkpoint",
    "optimize": "deltalog.spark.distributed_optimize",
}
#: Delta Spark's classes (``delta.tables``), by name -> the module that defines them
_CLASSES = {
    "DeltaTable": "deltalog.spark.delta_table",
    "DeltaMergeBuilder": "deltalog.spark.table_builders",
    "DeltaOptimizeBuilder": "deltalog.spark.table_builders",
    "DeltaTableBuilder": "deltalog.spark.table_builders",
    "IdentityGenerator": "deltalog.spark.table_builders",
}


def _entry_point(name: str) -> Callable[..., Any]:
    """The public ``name``: its implementation behind the pyspark and executor-setup checks."""
    implementation = getattr(importlib.import_module(_ENTRY_POINTS[name]), name)

    @functools.wraps(implementation)
    def entry(*args: Any, **kwargs: Any) -> Any:
        from deltalog.spark.session import executor_setup_errors, require_pyspark

        require_pyspark(f"deltalog.spark.{name}")
        with executor_setup_errors():
            return implementation(*args, **kwargs)

    entry.__module__ = __name__
    return entry


def __getattr__(name: str) -> Any:
    if name in _CLASSES:
        cls = getattr(importlib.import_module(_CLASSES[name]), name)
        globals()[name] = cls
        return cls
    if name not in _ENTRY_POINTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    entry = _entry_point(name)
    globals()[name] = entry  # built once
    return entry


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


def carried_error(exc: BaseException) -> DeltaLogError | None:
    """The deltalog error (typed, with its fields) that failed a Spark task behind ``exc``, or None.

    A task cannot raise a typed error to the driver: Spark hands back its text. deltalog's executor code marks
    its errors in that text, and the entry points above re-raise them typed; an action on the DataFrame
    :func:`read` returns runs after ``read`` has returned, and ``format("deltalog")`` is called by Spark, not
    by deltalog's functions, so their callers rebuild the error with this.
    """
    from deltalog.spark._files import carried_error as _carried

    return _carried(exc)
