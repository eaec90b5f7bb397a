"""Partition pruning and statistics-based file skipping for any pyarrow filter expression.

A pyarrow ``Expression`` cannot be walked from Python (pyarrow 26 has no accessors), so deltalog does not
evaluate the filter against statistics itself. Instead each file gets a *guarantee*: an expression true for
every live row of the file, built from its partition values and statistics (:mod:`deltalog.data.bounds`).
The guarantees become the ``partition_expression`` of dataset fragments that are never opened, and pyarrow's
own simplifier drops every fragment on which the filter simplifies to false or null, as deltalake's
``to_pyarrow_dataset`` does. Whatever the filter, skipping is then exactly as sound as the guarantees.

Names: the fragments' dataset schema is the table's schema in *logical* names, and guarantees name columns
logically while reading statistics by physical name, so a user's filter binds as written and needs no
rebinding (the Substrait route, ``to_substrait`` then ``from_substrait`` against physical names, would
serialise and re-parse every filter and fail on functions Substrait cannot express).

Guarantee forms, chosen for what Arrow's simplifier infers from them:

* a partition value ``p == v`` (typed from the schema) or ``is_null(p)``;
* ``nullCount == numRecords``: ``is_null(c)``. ``nullCount == 0`` at top level: ``is_valid(c)``, which lets
  the bounds be stated plainly. Any other count says nothing (with ``tightBounds=false`` it may count deleted
  rows; for nested fields writers disagree on whether a null parent counts);
* otherwise ``(c >= min) | is_null(c)`` and ``(c <= max) | is_null(c)``: a plain ``c >= min`` would tell Arrow
  that ``c`` is never null. A string's upper bound is a successor, above every value: ``c < bound``.

Floating-point columns need more care: a NaN row satisfies no bound, and some writers (deltalake 1.6.6) leave
NaN out of min/max, so a bound would let Arrow prune ``~(x < 5)`` from a file whose NaN rows match it. Each
file is therefore tried twice per bounded float column the filter reads: once with its bounds (the non-NaN
rows) and once with the column pinned to NaN (the NaN rows), and it is skipped only when every variant is.
Beyond two such columns the others get no bounds. A dataset handed to the user gets no float bounds at all,
because pyarrow also rewrites the row filter with the guarantee.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.fs as pafs

from deltalog.core.schema import top_level_fields
from deltalog.data.bounds import Leaf, Stats, column_bounds, leaves, parse_stats
from deltalog.data.read import DataFile, ReadSchema, partition_scalars, read_schema
from deltalog.errors import CorruptDataError, InvalidArgumentError

#: bounded float columns per file tried both with bounds and as NaN (2 ** n variants each)
MAX_FLOAT_VARIANTS = 2
_FORMAT = ds.ParquetFileFormat()
#: the pruning fragments are never opened; any file system serves
_NOWHERE = pafs.LocalFileSystem()
_NO_MATCH = re.compile(r"No match for (FieldRef\.[^\n]*?) in ")
_NAME = re.compile(r"Name\(([^)]*)\)")
_TRUE = pc.scalar(True)


# ---------------------------------------------------------------------------------------------- the filter
def _bind(filter: pc.Expression, schema: pa.Schema) -> None:
    """Bind ``filter`` to ``schema`` (an empty dataset's fragment listing binds it and raises what binding does)."""
    list(ds.FileSystemDataset([], schema, _FORMAT, _NOWHERE).get_fragments(filter=filter))


def shown(filter: pc.Expression, limit: int = 200) -> str:
    """A filter for a message: pyarrow's own text cuts long string literals mid-character and then fails."""
    try:
        text = str(filter)
    except (UnicodeDecodeError, pa.ArrowException):
        return "<a filter pyarrow cannot print>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_filter(filter: Any, schema: pa.Schema) -> pc.Expression:
    """``filter`` when it is a boolean expression over ``schema``'s columns; otherwise an
    :class:`InvalidArgumentError` naming the unknown column or saying why it does not apply."""
    if not isinstance(filter, pc.Expression):
        raise InvalidArgumentError(f"a filter must be a pyarrow compute Expression, not {type(filter).__name__}")
    try:
        _bind(filter, schema)
    except (pa.ArrowException, TypeError, ValueError) as exc:
        found = _NO_MATCH.search(str(exc))
        if found:
            name = ".".join(_NAME.findall(found.group(1))) or found.group(1)
            raise InvalidArgumentError(
                f"the filter names column {name!r}, which the table does not have; it has {schema.names}"
            ) from None
        raise InvalidArgumentError(f"the filter {shown(filter)} does not apply to the table's columns: {exc}") from None
    try:
        _bind(pc.and_kleene(filter, _TRUE), schema)  # only a boolean binds here
    except (pa.ArrowException, TypeError, ValueError):
        raise InvalidArgumentError(f"a filter must be a boolean expression; {shown(filter)} is not") from None
    return filter


def referenced_columns(filter: pc.Expression, schema: pa.Schema) -> list[str]:
    """The top-level columns ``filter`` reads (it must bind to ``schema``): those without which it cannot bind."""
    out = []
    for i, name in enumerate(schema.names):
        try:
            _bind(filter, schema.remove(i))
        except (pa.ArrowException, TypeError, ValueError):
            out.append(name)
    return out


# ---------------------------------------------------------------------------------------------- guarantees
@dataclass(frozen=True)
class _Term:
    """What one leaf's statistics guarantee in a file, as expression pieces."""

    plain: tuple[pc.Expression, ...]
    #: for a bounded float column: the bounded and the NaN alternatives
    alternatives: tuple[pc.Expression, pc.Expression] | None = None


class Guarantees:
    """Per-file guarantee expressions over some of a table's columns (built once per scan, used per file).

    ``names`` are the logical top-level columns to describe; ``nan_variants`` chooses between trying float
    bounds both ways (for pruning) or leaving floats unbounded (for a dataset whose filters pyarrow rewrites).
    """

    def __init__(
        self,
        schema: Mapping[str, Any],
        partition_columns: Sequence[str],
        mode: str,
        names: Iterable[str],
        nan_variants: bool = True,
    ) -> None:
        wanted = set(names)
        partition = set(partition_columns)
        fields = [f for f in top_level_fields(schema) if f["name"] in wanted]
        self._partition: ReadSchema = read_schema(
            schema, partition_columns, mode, [f["name"] for f in fields if f["name"] in partition]
        )
        self._leaves = tuple(leaves([f for f in fields if f["name"] not in partition], mode))
        self._fields = {leaf.path: ds.field(*leaf.path) for leaf in self._leaves}
        self._nan_variants = nan_variants
        self._partition_cache: dict[tuple[str | None, ...], list[pc.Expression]] = {}

    def for_files(self, candidates: Sequence[Candidate]) -> list[list[pc.Expression]]:
        """Per file, expressions one of which holds for each of its live rows (one, unless float bounds split
        it). Statistics are converted column by column across all files."""
        exact = any(leaf.decimal for leaf in self._leaves)
        parsed = [parse_stats(c.stats, exact) for c in candidates] if self._leaves else [None] * len(candidates)
        columns = [column_bounds(leaf, parsed) for leaf in self._leaves]
        out = []
        for i, candidate in enumerate(candidates):
            plain = self._partition_terms(candidate)
            split: list[tuple[pc.Expression, pc.Expression]] = []
            stats = parsed[i]
            if stats is not None:
                for leaf, column in zip(self._leaves, columns, strict=True):
                    term = self._leaf_term(leaf, stats, column[i], allow_split=len(split) < MAX_FLOAT_VARIANTS)
                    plain = plain + list(term.plain)
                    if term.alternatives is not None:
                        split.append(term.alternatives)
            if not split:
                out.append([_conjunction(plain)])
            else:
                out.append([_conjunction([*plain, *choice]) for choice in itertools.product(*split)])
        return out

    def _partition_terms(self, candidate: Candidate) -> list[pc.Expression]:
        """The partition guarantee, built once per distinct set of partition values."""
        if not self._partition.columns:
            return []
        key = tuple(candidate.partition_values.get(c.physical) for c in self._partition.columns)
        terms = self._partition_cache.get(key)
        if terms is None:
            try:
                file = DataFile(candidate.path, candidate.partition_values)
                scalars = partition_scalars(self._partition, file, candidate.path)
                terms = [ds.field(n) == v if v.is_valid else ds.field(n).is_null() for n, v in scalars.items()]
            except CorruptDataError:
                terms = []  # an unparsable value guarantees nothing; reading the file reports it
            self._partition_cache[key] = terms
        return terms

    def _leaf_term(
        self, leaf: Leaf, stats: Stats, bound: tuple[pa.Scalar | None, pa.Scalar | None], allow_split: bool
    ) -> _Term:
        field = self._fields[leaf.path]
        nulls = stats.nulls(leaf)
        if nulls is not None and nulls == stats.num_records:
            return _Term((field.is_null(),))
        low, high = bound
        if leaf.floating and not (self._nan_variants and allow_split):
            return _Term(())
        exact = nulls == 0 and not leaf.nested
        pieces = [field.is_valid()] if exact else []
        comparisons = [] if low is None else [field >= low]
        comparisons += [] if high is None else [field < high if leaf.strict_upper else field <= high]
        pieces += comparisons if exact else [c | field.is_null() for c in comparisons]
        if not leaf.floating:
            return _Term(tuple(pieces))
        if low is None and high is None:
            return _Term(())
        nan = field == pa.scalar(float("nan"), type=leaf.type)
        return _Term((), (_conjunction(pieces), nan))


def _conjunction(terms: Sequence[pc.Expression]) -> pc.Expression:
    if not terms:
        return _TRUE
    out = terms[0]
    for term in terms[1:]:
        out = out & term
    return out


# ---------------------------------------------------------------------------------------------- pruning
@dataclass(frozen=True)
class Candidate:
    """What the log says about one file that can rule it out: path, partition values (physical keys), stats."""

    path: str
    partition_values: Mapping[str, str | None]
    stats: str | None


class FilterPlan:
    """One filter against one table version: checked, its columns found, guarantees ready for the files.

    Building it checks ``filter``: an unknown column or a filter that does not apply is an
    :class:`InvalidArgumentError` whether or not there are files.
    """

    def __init__(
        self, schema: Mapping[str, Any], partition_columns: Sequence[str], mode: str, filter: pc.Expression
    ) -> None:
        self.schema = read_schema(schema, partition_columns, mode).schema
        self.filter = check_filter(filter, self.schema)
        #: the top-level columns (logical names) the filter reads
        self.columns = tuple(referenced_columns(filter, self.schema))
        self._guarantees = Guarantees(schema, partition_columns, mode, self.columns)

    def surviving(self, candidates: Sequence[Candidate]) -> list[int]:
        """Indexes (ascending) of the candidates that may hold a live row matching the filter."""
        fragments = []
        for i, variants in enumerate(self._guarantees.for_files(candidates)):
            for v, expression in enumerate(variants):
                fragments.append(_FORMAT.make_fragment(f"{i}/{v}", _NOWHERE, partition_expression=expression))
        dataset = ds.FileSystemDataset(fragments, self.schema, _FORMAT, _NOWHERE)
        try:
            kept = {int(f.path.split("/", 1)[0]) for f in dataset.get_fragments(filter=self.filter)}
        except (pa.ArrowException, TypeError, ValueError) as exc:
            raise InvalidArgumentError(
                f"the filter {shown(self.filter)} cannot be applied to the table's files: {exc}"
            ) from None
        return sorted(kept)


__all__ = ["MAX_FLOAT_VARIANTS", "Candidate", "FilterPlan", "Guarantees", "check_filter", "referenced_columns", "shown"]
