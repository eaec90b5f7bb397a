"""Table maintenance with IO: log cleanup, VACUUM, RESTORE.

Each module lists and reads through the table's store, asks a pure planner in :mod:`deltalog.core` what to
do, and only then deletes or commits, so the rules can be tested without storage and the IO stays thin.
"""
