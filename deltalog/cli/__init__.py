"""The ``deltalog`` command line: ``describe``, ``history``, ``files`` and ``snapshot`` of a table.

:mod:`deltalog.cli.main` holds the verbs and the error contract, :mod:`deltalog.cli.documents` the
JSON shape of each verb (the ``--json`` contract), :mod:`deltalog.cli.render` the rich and JSON output.
"""
