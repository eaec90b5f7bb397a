"""Which columns of a new parquet file are dictionary-encoded.

The parquet writer tries a dictionary for every column and falls back to plain encoding once the dictionary
outgrows its page limit. The attempt is not free: until the fallback it hashes every value, and the abandoned
dictionary page stays in the file beside the plain pages. For unique ids, random floats and instants that was
two fifths of the encoding time and made files larger. So a file's first row group is sampled: a column whose
first values alone already need a dictionary larger than the limit (values are only added as a row group goes
on, so its dictionary would certainly be abandoned) is written plain from the start; every other column keeps
its dictionary. Nested columns keep the writer's default.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

#: bytes a string or binary value adds to a dictionary page beyond its own (its length prefix)
_LENGTH_PREFIX = 4


def _nested(t: pa.DataType) -> bool:
    return bool(pa.types.is_nested(t))


def dictionary_columns(table: pa.Table, page_limit: int) -> bool | list[str]:
    """``use_dictionary`` for a file whose first row group is ``table``: True (every column) or the names of
    the columns whose sampled dictionary fits ``page_limit`` bytes."""
    if any(_nested(f.type) for f in table.schema):
        return True
    keep = []
    for field, column in zip(table.schema, table.columns, strict=True):
        width = field.type.bit_width // 8 if pa.types.is_primitive(field.type) and field.type.bit_width >= 8 else 0
        # enough values that, if all distinct, they would fill the page
        sample = column.slice(0, page_limit // (width or _LENGTH_PREFIX) + 1)
        distinct = pc.unique(sample).drop_null()
        if width:
            size = len(distinct) * width
        elif pa.types.is_string(field.type) or pa.types.is_binary(field.type) or pa.types.is_large_string(field.type):
            size = int(pc.sum(pc.binary_length(distinct)).as_py() or 0) + _LENGTH_PREFIX * len(distinct)
        else:
            size = 0  # booleans and anything else: the writer's own choice
        if size <= page_limit:
            keep.append(field.name)
    return keep


__all__ = ["dictionary_columns"]
