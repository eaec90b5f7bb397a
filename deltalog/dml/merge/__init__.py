"""MERGE and UPDATE: rows changed in place by deletion vectors (or rewritten files), in bounded memory, with
Delta Spark's semantics. :mod:`~deltalog.dml.merge.plan` binds the statement, :mod:`~deltalog.dml.merge.scan`
finds what changes, :mod:`~deltalog.dml.merge.changes` writes it, :mod:`~deltalog.dml.merge.execute` runs the
transaction; :mod:`~deltalog.dml.merge.builder` is the API's builder."""
