"""Plans of maintenance, decided without IO: log cleanup, vacuum, restore, log compaction ranges, and the clock
a deletion judges a file's age by (``file_age``)."""
