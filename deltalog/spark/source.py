"""``format("deltalog")``: deltalog as a PySpark data source (``pyspark.sql.datasource``), batch and streaming.

Spark calls a Python data source in three kinds of place: Python workers beside the driver's JVM plan reads and
writes and commit them (``schema``, ``reader``/``partitions``, ``writer``/``commit``/``abort``, the stream
reader's offsets); executors read and write files (``read``, ``write``). The objects made on the driver are
pickled to the executors, so they carry small plans (:class:`~deltalog.spark.read_plan.TableRead`,
:class:`~deltalog.spark.write_plan.WritePlan`), never a snapshot. The work is done by the pure modules beside this
one; these classes only adapt them to Spark's interfaces:

* reads: :mod:`deltalog.spark.read_plan` on the driver, :mod:`deltalog.spark._scan_io` on the executors;
* writes: :mod:`deltalog.spark.write_plan` on the driver, :func:`deltalog.spark._files.write_task` on the
  executors;
* options: :mod:`deltalog.spark.options`.

A deltalog error raised in any of these calls reaches the caller inside Spark's own exception, as text; each
is marked (:func:`deltalog.spark._files.carry_error`), so :func:`deltalog.spark.carried_error` gives it back
typed, with its fields.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
from collections.abc import Iterator, Sequence
from typing import Any

import orjson
import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamArrowWriter,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from deltalog.errors import DeltaLogError
from deltalog.spark import options as O
from deltalog.spark._files import TaskFiles, carry_error, write_task
from deltalog.spark._scan_io import FileRow, read_group
from deltalog.spark.read_plan import TableRead, open_read, plan_groups, requested_columns
from deltalog.spark.stream_write import app_id
from deltalog.spark.write_plan import Control, SinkResult, WritePlan, abort_write, commit_write, plan_write

logger = logging.getLogger(__name__)

NAME = O.NAME
#: options only a streaming read takes
_STREAM_ONLY = frozenset(s.name.lower() for s in O.SPECS if O.STREAM_READ in s.contexts and O.READ not in s.contexts)


@contextlib.contextmanager
def carried() -> Iterator[None]:
    """Mark a deltalog error raised inside, so the caller can rebuild it from Spark's exception."""
    try:
        yield
    except DeltaLogError as exc:
        raise carry_error(exc) from None


def decode_control(text: str | None) -> Control | None:
    """The wrappers' :class:`Control` from its option (pickled with pyspark's cloudpickle, which also carries a
    hook defined in the caller's code); None without one."""
    if not text:
        return None
    import base64

    from pyspark import cloudpickle

    control = cloudpickle.loads(base64.b64decode(text))
    if not isinstance(control, Control):
        raise TypeError(f"option {O.CONTROL} does not hold a deltalog write control")
    return control


def encode_control(control: Control) -> str:
    import base64

    from pyspark import cloudpickle

    data: bytes = cloudpickle.dumps(control)  # type: ignore[no-untyped-call]
    return base64.b64encode(data).decode()


# ---------------------------------------------------------------------------------------------- reading
class FileGroup(InputPartition):
    """One read task: the live files it reads (:data:`~deltalog.spark._scan_io.FileRow`)."""

    def __init__(self, files: Sequence[FileRow]) -> None:
        super().__init__(None)
        self.files = tuple(files)


class DeltaLogReader(DataSourceReader):
    """A batch read of one table version: planned on the driver, files read on the executors."""

    def __init__(self, read: TableRead, target: pa.Schema) -> None:
        self.table = read
        self.target = target
        self.pushed: list[Any] = []

    def pushFilters(self, filters: list[Any]) -> Any:
        """Keep every pushed filter for pruning and skipping, and hand them all back: Spark evaluates them on
        the rows (deltalog only rules out files that hold no match)."""
        self.pushed = list(filters)
        return filters

    def partitions(self) -> list[InputPartition]:
        with carried():
            return [FileGroup(g) for g in plan_groups(self.table, self.pushed)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        t = self.table
        yield from read_group(
            getattr(partition, "files", ()),
            root=t.root,
            storage_options=t.storage_options,
            schema=t.schema,
            partition_columns=t.partition_columns,
            column_mapping=t.column_mapping,
            columns=t.columns,
            target=self.target,
        )


# ---------------------------------------------------------------------------------------------- writing
class Written(WriterCommitMessage):
    """What one write task sends the driver."""

    def __init__(self, files: TaskFiles) -> None:
        self.files = files


def _write(plan: WritePlan, batches: Iterator[pa.RecordBatch]) -> Written:
    if plan.skip:  # the table holds this exactly-once batch: its rows are not even computed
        return Written(TaskFiles((), 0, plan.read_version))
    files = write_task(
        batches,
        root=plan.root,
        storage_options=plan.storage_options,
        target=plan.target,
        read_version=plan.read_version,
        checks=plan.checks,
        inside=plan.inside(),
        max_rows_per_file=plan.max_rows_per_file,
    )
    return Written(files)


def _files(messages: Sequence[WriterCommitMessage | None]) -> list[TaskFiles | None]:
    return [m.files if isinstance(m, Written) else None for m in messages]


def _report(plan: WritePlan, result: SinkResult) -> None:
    """Leave the result where :func:`deltalog.spark.write` reads it; never fails a commit that landed."""
    if plan.result_path is None:
        return
    try:
        with open(plan.result_path, "wb") as out:
            out.write(result.to_json())
    except OSError as exc:
        logger.warning("cannot record the write's result at %s: %s", plan.result_path, exc)


class DeltaLogWriter(DataSourceArrowWriter):
    """A batch write: executors write files, the driver commits them as one version."""

    def __init__(self, plan: WritePlan) -> None:
        self.plan = plan

    def write(self, iterator: Iterator[pa.RecordBatch]) -> Written:
        return _write(self.plan, iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        with carried():
            result = commit_write(self.plan, _files(messages))
        _report(self.plan, result)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        with carried():
            abort_write(self.plan, _files(messages))


class DeltaLogStreamWriter(DataSourceStreamArrowWriter):
    """A streaming sink: each micro-batch commits once, under the query's ``txn`` (version = batch id)."""

    def __init__(self, plan: WritePlan) -> None:
        self.plan = plan

    def write(self, iterator: Iterator[pa.RecordBatch]) -> Written:
        return _write(self.plan, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        with carried():
            commit_write(self.plan, _files(messages), app_version=batchId)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        with carried():
            abort_write(self.plan, _files(messages))


# ---------------------------------------------------------------------------------------------- the source
class DeltaLogDataSource(DataSource):
    """``spark.read.format("deltalog")``, ``df.write.format("deltalog")`` and their streaming forms."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def _parsed(self, context: str) -> O.Parsed:
        return O.parse(self.options, context)

    def schema(self) -> StructType:
        """The schema of the version read (pinned here, so the files planned later belong to it)."""
        with carried():
            # Spark does not say whether the read is a stream's: options only a stream takes tell
            streaming = any(str(k).lower() in _STREAM_ONLY for k in self.options)
            read = open_read(self._parsed(O.STREAM_READ if streaming else O.READ))
        self._version = read.version
        return StructType.fromJson(dict(read.schema))

    def reader(self, schema: StructType) -> DataSourceReader:
        with carried():
            parsed = self._parsed(O.READ)
            read = open_read(parsed, getattr(self, "_version", None))
            read = requested_columns(read, orjson.loads(schema.json()))
        return DeltaLogReader(read, to_arrow_schema(schema, timezone="UTC"))

    def writer(self, schema: StructType, overwrite: bool) -> DeltaLogWriter:
        with carried():
            parsed = self._parsed(O.WRITE)
            plan = plan_write(parsed, orjson.loads(schema.json()), overwrite, decode_control(parsed.control))
        return DeltaLogWriter(plan)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DeltaLogStreamWriter:
        with carried():
            parsed = self._parsed(O.STREAM_WRITE)
            plan = plan_write(parsed, orjson.loads(schema.json()), overwrite, app_id=app_id(parsed))
        return DeltaLogStreamWriter(plan)


class DeltaAsDataSource(DeltaLogDataSource):
    """The same source answering ``format("delta")`` (``register(spark, as_delta=True)``)."""

    @classmethod
    def name(cls) -> str:
        return "delta"


def result_file() -> str:
    """A fresh local file for a sink's result (the commit runs on this machine, in a Python worker)."""
    handle, path = tempfile.mkstemp(prefix="deltalog-write-", suffix=".json")
    os.close(handle)
    return path


__all__ = [
    "NAME",
    "DeltaAsDataSource",
    "DeltaLogDataSource",
    "DeltaLogReader",
    "DeltaLogStreamWriter",
    "DeltaLogWriter",
    "FileGroup",
    "Written",
    "carried",
    "decode_control",
    "encode_control",
    "result_file",
]
