"""Executor side of :func:`deltalog.spark.optimize`: pyarrow only (no pyspark), so it runs inside Spark tasks.

Each task rewrites the bins it is handed with the one rewrite of the data plane
(:func:`deltalog.data.rearrange.rewrite`: the table's reader, the one data-file writer) through the table's store,
rebuilt on the executor from the root and the storage options, and sends back the adds of the files it wrote; the
data never passes through the driver. A bin that fails deletes its own files and, on a deltalog error, is
reported as a :class:`BinFailed` result rather than failing the job: the job then ends with every task done, so
the driver knows every file the run wrote and deletes them (a failed job would cancel the other tasks, and a task
that finished after the failure would report nothing: Spark drops late accumulator updates). The error travels
typed (:func:`~deltalog.spark._files.carry_error`). For any other failure of the job, the tasks that succeeded
report their files through the ``written`` accumulator.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from deltalog.core.optimize_plan import Bin
from deltalog.data.read import DataFile
from deltalog.data.rearrange import rewrite
from deltalog.dml.optimize_commit import Rewritten
from deltalog.dml.optimize_job import Job
from deltalog.errors import DeltaLogError
from deltalog.spark._files import carried_error, carry_error
from deltalog.storage.uri import store_for


@dataclass(frozen=True)
class BinFailed:
    """A bin whose rewrite raised a deltalog error (its own files already deleted), carried as text."""

    bin: Bin
    carried: str

    def error(self) -> DeltaLogError:
        """The error, rebuilt typed."""
        typed = carried_error(RuntimeError(self.carried))
        return typed if typed is not None else DeltaLogError(self.carried)


class PathList:
    """A Spark ``AccumulatorParam`` (duck-typed: this module stays free of pyspark) collecting the paths of
    files written by tasks that succeeded: Spark merges their updates on the driver even when the job fails,
    which is the one way the driver learns what to delete then."""

    def zero(self, value: list[str]) -> list[str]:
        return []

    def addInPlace(self, value1: list[str], value2: list[str]) -> list[str]:
        return [*value1, *value2]


def rewrite_bins(
    bins: Iterator[Bin],
    *,
    root: str,
    storage_options: Mapping[str, Any] | None,
    job: Job,
    written: Any = None,
) -> Iterator[Rewritten | BinFailed]:
    """The ``mapPartitions`` body: rewrite each bin, report its new files to ``written``, yield what it did."""
    store = store_for(root, dict(storage_options) if storage_options else None)
    for b in bins:
        try:
            adds = rewrite(
                store,
                job.spec,
                job.target,
                [DataFile.of(a) for a in b.files],
                layout=job.layout,
                target_file_size=job.settings.target_size,
                encoders=1,  # Spark already runs a task per core
                input_bytes=b.size,
            )
        except DeltaLogError as exc:
            yield BinFailed(b, str(carry_error(exc)))
            continue
        if written is not None:
            written.add([a.path for a in adds])
        yield Rewritten(b, tuple(adds))


__all__ = ["BinFailed", "PathList", "rewrite_bins"]
