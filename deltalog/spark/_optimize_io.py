"""Executor side of :func:`deltalog.spark.optimize`: pyarrow only (no pyspark), so it runs inside Spark tasks.

Each task rewrites the bins it is handed with the one rewrite of the data plane
(:func:`deltalog.data.rearrange.rewrite`: the table's reader, the one data-file writer) through the table's store,
rebuilt on the executor from the root and the storage options, and sends back the adds of the files it wrote; the
data never passes through the driver. A bin that fails deletes its own files; a task that succeeded in a job that
failed elsewhere reports its files through the ``written`` accumulator, and the driver deletes them. A deltalog
error travels to the driver typed (:func:`~deltalog.spark._files.carry_error`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from deltalog.core.optimize_plan import Bin
from deltalog.data.read import DataFile
from deltalog.data.rearrange import rewrite
from deltalog.dml.optimize_commit import Rewritten
from deltalog.dml.optimize_job import Job
from deltalog.errors import DeltaLogError
from deltalog.spark._files import carry_error
from deltalog.storage.uri import store_for


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
) -> Iterator[Rewritten]:
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
            raise carry_error(exc) from exc
        if written is not None:
            written.add([a.path for a in adds])
        yield Rewritten(b, tuple(adds))


__all__ = ["PathList", "rewrite_bins"]
