"""``deltalog write TABLE FILE``: a parquet or CSV file's rows into the table, as one commit.

Registered on the main group by :mod:`deltalog.cli.main`. The file is streamed into :func:`deltalog.write`
(pyarrow's parquet and CSV readers, batch by batch), so its size does not matter. CSV values are read as the
table's column types when the table exists (``2024-01-01`` into a date column, ``12.50`` into a decimal);
when it does not, pyarrow infers them and the table is created with those types. A file pyarrow cannot
read is an error naming it, whether that shows at the start or halfway through.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import click
import orjson
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

import deltalog
from deltalog import DeltaLog
from deltalog.cli import render
from deltalog.cli.documents import Document
from deltalog.cli.layout import Screen
from deltalog.cli.options import json_flag, open_log, table_argument
from deltalog.dml.tables import open_table
from deltalog.dml.write import MODES
from deltalog.errors import InvalidArgumentError

FORMATS = {".parquet": "parquet", ".csv": "csv"}


def _named(path: Path, exc: BaseException) -> InvalidArgumentError:
    return InvalidArgumentError(f"{path}: not a readable {FORMATS[path.suffix.lower()]} file: {exc}")


def _batches(path: Path, reader: pa.RecordBatchReader) -> Iterator[pa.RecordBatch]:
    try:
        yield from reader
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise _named(path, exc) from None


def open_input(path: Path, log: DeltaLog) -> pa.RecordBatchReader:
    """The file's rows as a reader; CSV columns typed as the table's where it exists."""
    kind = FORMATS.get(path.suffix.lower())
    if kind is None:
        raise click.BadParameter(f"{path.name}: expected a .parquet or .csv file", param_hint="FILE")
    try:
        if kind == "parquet":
            parquet = pq.ParquetFile(path)
            reader = pa.RecordBatchReader.from_batches(parquet.schema_arrow, parquet.iter_batches())
        else:
            snap = open_table(log)
            types = {f.name: f.type for f in snap.schema} if snap is not None else {}
            reader = pacsv.open_csv(path, convert_options=pacsv.ConvertOptions(column_types=types))
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise _named(path, exc) from None
    return pa.RecordBatchReader.from_batches(reader.schema, _batches(path, reader))


def write_document(table: str, path: Path, result: deltalog.CommitResult) -> Document:
    adds = [a for a in result.actions if isinstance(a, deltalog.actions.Add) and a.deletion_vector is None]
    return {
        "table": table,
        "file": str(path),
        "version": result.version,
        "skipped": result.skipped,
        "num_files": len(adds),
        "num_rows": sum(int(orjson.loads(a.stats or "{}").get("numRecords", 0)) for a in adds),
        "num_bytes": sum(a.size for a in adds),
    }


WRITE_FIELDS: tuple[render.Field, ...] = (
    ("location", "table"),
    ("from", "file"),
    ("committed version", "version"),
    ("rows", lambda doc: render.count(doc["num_rows"], "row")),
    ("files", lambda doc: f"{render.count(doc['num_files'], 'file')}, {render.count(doc['num_bytes'], 'byte')}"),
)


def render_write(doc: Document, screen: Screen) -> None:
    if doc["skipped"]:
        screen.line(f"nothing written: the table at {doc['table']} exists (mode ignore)")
        return
    render.result(screen, "Write", doc, WRITE_FIELDS)


@click.command("write")
@table_argument
@click.argument("file", metavar="FILE.parquet|FILE.csv", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--mode", type=click.Choice(MODES), default="append", show_default=True, help="What to do with rows the table has."
)
@click.option("--partition-by", metavar="A,B", help="Partition columns of a table this creates.")
@click.option(
    "--replace-where",
    metavar="EXPR",
    help="With --mode overwrite: replace only the rows where EXPR (Spark SQL) is true.",
)
@click.option("--merge-schema", is_flag=True, help="Add the file's new columns to the table.")
@json_flag
def write_cmd(
    table: str,
    file: Path,
    mode: str,
    partition_by: str | None,
    replace_where: str | None,
    merge_schema: bool,
    fmt: str,
) -> None:
    """Write the rows of FILE (parquet or CSV) to TABLE as one commit, creating the table if there is none."""
    log = open_log(table)
    parts = [c.strip() for c in partition_by.split(",")] if partition_by else None
    result = deltalog.write(
        open_input(file, log),
        log,
        mode=mode,
        partition_by=parts,
        replace_where=replace_where,
        schema_mode="merge" if merge_schema else None,
    )
    doc = write_document(log.location, file, result)
    if fmt == "json":
        render.write_json(doc)
    else:
        render.show(render_write, doc)


__all__ = ["open_input", "render_write", "write_cmd", "write_document"]
