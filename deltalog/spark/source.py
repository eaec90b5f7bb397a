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
    DataSourceStreamReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxBytes,
    ReadMaxFiles,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from deltalog.data.changes import with_change_columns
from deltalog.dml.changes import Bounds
from deltalog.errors import DeltaLogError, InvalidArgumentError
from deltalog.spark import options as O
from deltalog.spark._changes_io import read_change_group
from deltalog.spark._files import TaskFiles, carry_error, write_task
from deltalog.spark._scan_io import read_group
from deltalog.spark.read_plan import (
    ChangeRead,
    TableRead,
    change_columns,
    change_read,
    grouped,
    open_changes,
    open_read,
    plan_change_groups,
    plan_groups,
    requested_columns,
)
from deltalog.spark.stream_read import StreamOptions, StreamPlanner
from deltalog.spark.stream_write import app_id
from deltalog.spark.write_plan import Control, SinkResult, WritePlan, abort_write, commit_write, plan_write

logger = logging.getLogger(__name__)

NAME = O.NAME
#: the options of a range of versions: a batch read takes them only with readChangeFeed
_RANGE_OPTIONS = ("startingVersion", "startingTimestamp", "endingVersion", "endingTimestamp")
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
    """One read task: the files it reads (:data:`~deltalog.spark._scan_io.FileRow`, or change rows)."""

    def __init__(self, files: Sequence[Any]) -> None:
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
        yield from read_group(getattr(partition, "files", ()), t.task(), self.target)


class ChangesReader(DataSourceReader):
    """A batch read of the change data feed: the range planned and checked on the driver, files read on the
    executors with the data plane's change reader."""

    def __init__(self, read: ChangeRead, planned: list[list[Any]] | None, target: pa.Schema) -> None:
        self.changes = read
        self.planned = planned
        self.target = target

    def partitions(self) -> list[InputPartition]:
        with carried():
            planned = self.planned if self.planned is not None else plan_change_groups(self.changes)
        return [FileGroup(g) for g in planned]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        yield from read_change_group(getattr(partition, "files", ()), self.changes.table.task(), self.target)


class DeltaLogStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """A streaming read: offsets and batches planned on the driver (:class:`StreamPlanner`, which lives as
    long as the query), files read on the executors as a batch read reads them."""

    def __init__(self, planner: StreamPlanner, target: pa.Schema) -> None:
        self.planner = planner
        self.target = target

    def initialOffset(self) -> dict[str, Any]:
        with carried():
            return self.planner.initial_offset()

    def getDefaultReadLimit(self) -> ReadLimit:
        files, size = self.planner.options.default_limit()
        if files is not None:
            return ReadMaxFiles(files)  # with maxBytesPerTrigger too, latestOffset applies both
        assert size is not None
        return ReadMaxBytes(size)

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        with carried():
            return self.planner.latest_offset(start, self._budget(limit))

    def _budget(self, limit: ReadLimit) -> tuple[int | None, int | None] | None:
        if isinstance(limit, ReadAllAvailable):
            return None
        if isinstance(limit, ReadMaxFiles):
            return limit.max_files, self.planner.options.max_bytes
        if isinstance(limit, ReadMaxBytes):
            return None, limit.max_bytes
        raise carry_error(InvalidArgumentError(f"the deltalog source has no way to honour the read limit {limit!r}"))

    def prepareForTriggerAvailableNow(self) -> None:
        with carried():
            self.planner.prepare_available_now()

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        with carried():
            rows = self.planner.rows(start, end)
        return [FileGroup(g) for g in grouped(rows)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        files = getattr(partition, "files", ())
        task = self.planner.table.task()
        if self.planner.options.change_feed:
            yield from read_change_group(files, task, self.target)
        else:
            yield from read_group(files, task, self.target)

    def commit(self, end: dict[str, Any]) -> None:
        with carried():
            self.planner.committed(end)


# ---------------------------------------------------------------------------------------------- writing
class Written(WriterCommitMessage):
    """What one write task sends the driver."""

    def __init__(self, files: TaskFiles) -> None:
        self.files = files


def _write(plan: WritePlan, batches: Iterator[pa.RecordBatch]) -> Written:
    if plan.skip:  # the table holds this exactly-once batch: its rows are not even computed
        return Written(TaskFiles((), 0, plan.read_version, plan.new_table))
    files = write_task(
        batches,
        root=plan.root,
        storage_options=plan.storage_options,
        target=plan.target,
        read_version=plan.read_version,
        new_table=plan.new_table,
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
        """The schema of the version read (pinned here, so the files planned later belong to it). A batch read
        of the change data feed plans its range here too: a range Delta Spark refuses fails at ``load()``."""
        with carried():
            # Spark does not say whether the read is a stream's: options only a stream takes tell
            streaming = any(str(k).lower() in _STREAM_ONLY for k in self.options)
            parsed = self._parsed(O.STREAM_READ if streaming else O.READ)
            if change_read(parsed) and not streaming:
                changes = open_changes(parsed)
                self._planned = plan_change_groups(changes)
                self._version = changes.table.version
                return StructType.fromJson(changes.schema())
            read = open_read(parsed)
        self._version = read.version
        if change_read(parsed):  # a stream of the change data feed
            return StructType.fromJson(with_change_columns(read.schema))
        return StructType.fromJson(dict(read.schema))

    def reader(self, schema: StructType) -> DataSourceReader:
        requested = orjson.loads(schema.json())
        target = to_arrow_schema(schema, timezone="UTC")
        with carried():
            parsed = self._parsed(O.READ)
            if change_read(parsed):
                changes = change_columns(open_changes(parsed, getattr(self, "_version", None)), requested)
                return ChangesReader(changes, getattr(self, "_planned", None), target)
            ranged = [n for n in _RANGE_OPTIONS if parsed.get(n) is not None]
            if ranged:
                raise InvalidArgumentError(
                    f"option {ranged[0]} applies to a batch read of the change data feed (readChangeFeed) or to a "
                    "streaming read; to read the table as of a version, use versionAsOf or timestampAsOf"
                )
            read = open_read(parsed, getattr(self, "_version", None))
            read = requested_columns(read, requested)
        return DeltaLogReader(read, target)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        requested = orjson.loads(schema.json())
        target = to_arrow_schema(schema, timezone="UTC")
        with carried():
            parsed = self._parsed(O.STREAM_READ)
            options = StreamOptions.of(parsed)
            read = open_read(parsed, getattr(self, "_version", None))
            if options.change_feed:
                read = change_columns(ChangeRead(read, Bounds()), requested).table
            else:
                read = requested_columns(read, requested)
        return DeltaLogStreamReader(StreamPlanner(read, read.table_id, options), target)

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
    "ChangesReader",
    "DeltaAsDataSource",
    "DeltaLogDataSource",
    "DeltaLogReader",
    "DeltaLogStreamReader",
    "DeltaLogStreamWriter",
    "DeltaLogWriter",
    "FileGroup",
    "Written",
    "carried",
    "decode_control",
    "encode_control",
    "result_file",
]
