"""Where the data plane's bulk Arrow memory comes from: the rows it decodes, copies and writes.

:data:`DATA_POOL` is the system allocator, passed explicitly to the calls that allocate rows; the process's
default pool is left as it is (a library does not choose a process's allocator). Arrow's default, mimalloc,
hands freed pages back to the OS and takes fresh ones for the next allocation: a writer paid a third of its
CPU faulting zeroed pages in again batch after batch, and a reader paid more, because mimalloc backs its
arenas with transparent huge pages, whose first touch can stall while the kernel compacts memory to find one
(decoding the 3.2M rows of a change-feed read took 0.15 s of CPU in a quiet moment and 0.45 s in a fragmented
one; the system allocator took 0.20 s every time).

pyarrow's ``ParquetFile`` always decodes into the default pool; only the reader underneath it takes a pool.
:func:`parquet_file` opens a file as ``ParquetFile`` would, with that reader bound to :data:`DATA_POOL`; should
a pyarrow release change the reader's construction, it falls back to a plain ``ParquetFile`` (same rows,
default pool) and says so once in the log.
"""

from __future__ import annotations

import inspect
import logging
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

logger = logging.getLogger(__name__)

#: the pool the data plane decodes rows into and copies them in (reads, writes, rewrites)
DATA_POOL = pa.system_memory_pool()

#: options ``ParquetFile`` passes its reader on its own (its defaults, which the reader's ``open`` does not share)
_FILE_DEFAULTS = {
    name: p.default
    for name, p in inspect.signature(pq.ParquetFile.__init__).parameters.items()
    if name == "arrow_extensions_enabled"
}


class _PooledParquetFile(pq.ParquetFile):  # type: ignore[misc]  # pyarrow is untyped: the base is Any
    """A ``ParquetFile`` whose reader decodes into :data:`DATA_POOL`: what ``ParquetFile.__init__`` does for an
    open file, with the reader built on the pool."""

    def __init__(self, source: Any, **options: Any) -> None:
        from pyarrow._parquet import ParquetReader

        self._close_source = getattr(source, "closed", True)
        self.reader = ParquetReader(memory_pool=DATA_POOL)
        self.reader.open(source, **{**_FILE_DEFAULTS, **options})
        self.common_metadata = None
        self._nested_paths_by_prefix = self._build_nested_paths()


#: the pyarrow releases whose ``ParquetFile`` construction :class:`_PooledParquetFile` follows (CI runs 25 and 26);
#: older ones read the public way
_pooled = int(pa.__version__.split(".")[0]) >= 25


def parquet_file(source: Any, **options: Any) -> pq.ParquetFile:
    """``source`` (an open pyarrow file) as ``pq.ParquetFile(source, **options)`` opens it, its rows decoded into
    :data:`DATA_POOL`. ``options`` are those ``ParquetFile`` and its reader's ``open`` share (``pre_buffer``,
    ``buffer_size``, ``coerce_int96_timestamp_unit``, ...)."""
    global _pooled
    if _pooled:
        try:
            return _PooledParquetFile(source, **options)
        except (ImportError, AttributeError, TypeError) as exc:  # pyarrow's internals moved: read it the public way
            _pooled = False
            logger.info("parquet files decode into Arrow's default memory pool (%s: %s)", type(exc).__name__, exc)
    return pq.ParquetFile(source, **options)


__all__ = ["DATA_POOL", "parquet_file"]
