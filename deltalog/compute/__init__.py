"""Bound expression trees (:mod:`deltalog.expr`) evaluated on Arrow batches with Spark 4's ANSI semantics.

pyarrow compute where it means exactly what Spark means, numpy or small Python kernels where it does not
(Spark's NaN ordering, Java's number formatting, Murmur3 and xxHash64 over Spark's encodings, Java date
patterns); a malformed value raises :class:`~deltalog.errors.ExpressionValueError` naming it, as Spark's
ANSI mode raises, while rows are evaluated and before anything is committed."""

from deltalog.compute.evaluate import Evaluation, evaluate, evaluate_scalar, kernel_names

__all__ = ["Evaluation", "evaluate", "evaluate_scalar", "kernel_names"]
