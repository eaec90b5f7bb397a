"""The ``deltalog`` command line.

:mod:`deltalog.cli.main` holds the group, the error contract and the read verbs; each other module holds
one family of verbs; :mod:`deltalog.cli.documents` the JSON shape of each verb (the ``--json`` contract)
and :mod:`deltalog.cli.render` the rich and JSON output.
"""
