"""The synthetic table's shape, in a stdlib-only module.

Kept apart from :mod:`benchmarks.synth` (which imports orjson) because child processes import it before
timing an engine's imports: pre-importing a dependency the engine shares would understate its import time.
"""

from __future__ import annotations

SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "value", "type": "double", "nullable": True, "metadata": {}},
        {"name": "name", "type": "string", "nullable": True, "metadata": {}},
        {"name": "event_time", "type": "timestamp", "nullable": True, "metadata": {}},
        {"name": "part", "type": "string", "nullable": True, "metadata": {}},
    ],
}
PARTITION_COLUMN = "part"
#: A partition value no generated file has: engines that prune by partition scan nothing with it.
ABSENT_PARTITION = "zz"

__all__ = ["ABSENT_PARTITION", "PARTITION_COLUMN", "SCHEMA"]
