"""Writing data into a table from outside the facade: :func:`deltalog.write` and the table opening it shares
with Spark's writer (created when missing, exactly-once bookkeeping). An edge, as Spark's writer is: it calls
:class:`~deltalog.DeltaLog`, nothing below the facade calls it."""
