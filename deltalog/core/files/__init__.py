"""Data files as the log names them: their identity (``pathkeys``), the facts rules read from an add
(``facts``: statistics, the path's last add), and partition values (``partitions``)."""
