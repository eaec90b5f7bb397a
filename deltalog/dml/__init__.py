"""Data manipulation on a Delta table: write Arrow data (:mod:`~deltalog.writing.write`) and delete rows
(:mod:`~deltalog.dml.delete`), each as one commit.

These sit above the data plane (:mod:`deltalog.data`: files in, adds out; files in, rows out) and the table
layer (:class:`~deltalog.DeltaLog`, transactions): they decide which files to write, rewrite or mark with
deletion vectors, apply the rules the table's features put on that commit, and commit it. The table a writer
needs (created when missing, exactly-once bookkeeping) is :mod:`~deltalog.writing.tables`, shared with the Spark
writer.
"""
