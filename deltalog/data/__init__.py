"""The data plane's file level: data and deletion-vector files read and written through the table's store.

It sits below the table layer: it never commits and never opens a log. :mod:`deltalog.data.files` is the one
data-file writer (input matched and cast by :mod:`~deltalog.data.types`, table rules checked by
:mod:`~deltalog.data.constraints`, paths from :mod:`~deltalog.data.paths`, bytes streamed by
:mod:`~deltalog.data.output`); :mod:`deltalog.data.dv` is Delta's deletion-vector format,
:mod:`deltalog.data.read` turns one data file into the table's logical rows, and :mod:`deltalog.data.locate`
finds the file a log path or DV descriptor names.
"""
