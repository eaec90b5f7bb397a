"""Spark integration: distributed writes, reads and checkpoints over deltalog's transaction log.

pyspark is imported only inside this package (and lazily: ``import deltalog.spark`` works without it; the
functions need it). Install it with ``pip install 'deltalog[spark]'``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["checkpoint", "read", "write"]


def write(*args: Any, **kwargs: Any) -> Any:
    """See :func:`deltalog.spark.writer.write`."""
    from deltalog.spark.writer import write as _write

    return _write(*args, **kwargs)


def read(*args: Any, **kwargs: Any) -> Any:
    """See :func:`deltalog.spark.reader.read`."""
    from deltalog.spark.reader import read as _read

    return _read(*args, **kwargs)


def checkpoint(*args: Any, **kwargs: Any) -> Any:
    """See :func:`deltalog.spark.distributed_checkpoint.checkpoint`."""
    from deltalog.spark.distributed_checkpoint import checkpoint as _checkpoint

    return _checkpoint(*args, **kwargs)
