"""The former home of Delta statistics, kept as an alias: the one implementation is :mod:`deltalog.arrow.stats`."""

from deltalog.arrow.stats import (
    STRING_PREFIX,
    TIE_BREAKER,
    dumps,
    file_stats,
    stats_json,
    truncate_max_string,
    truncate_min_string,
)

__all__ = [
    "STRING_PREFIX",
    "TIE_BREAKER",
    "dumps",
    "file_stats",
    "stats_json",
    "truncate_max_string",
    "truncate_min_string",
]
