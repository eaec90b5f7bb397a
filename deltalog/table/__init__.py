"""One table: a :class:`~deltalog.table.context.TableContext` plus the pure core.

Listing and loading (segment to snapshot, refresh), the snapshot value and its file list, history, the
commit loop, transactions, DDL and intents. Nothing here imports :mod:`deltalog.log` (the facade) or
anything above it: functions take a context, a snapshot or a transaction. This package's ``__init__``
imports nothing, so naming ``deltalog.table`` costs no more than the module asked for.
"""
