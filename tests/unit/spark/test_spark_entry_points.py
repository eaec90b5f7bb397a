"""deltalog.spark's entry points explain themselves without pyspark installed: ``help()`` shows their typed
parameters and docstrings, calling one says what to install, and a failed Spark action's text gives back the
typed deltalog error it carried. Checked in a fresh interpreter where ``import pyspark`` fails."""

from __future__ import annotations

import json
import subprocess
import sys

from deltalog.errors import CorruptDataError
from deltalog.spark import carried_error
from deltalog.spark._files import carry_error

WITHOUT_PYSPARK = """
import importlib.abc, json, pydoc, sys

class NoPyspark(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "pyspark" or name.startswith("pyspark."):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return None

sys.meta_path.insert(0, NoPyspark())
import deltalog.spark
from deltalog.errors import SetupError

out = {"help": {n: pydoc.render_doc(getattr(deltalog.spark, n), renderer=pydoc.plaintext)
                for n in ("read", "write", "checkpoint", "read_changes", "optimize")}}
try:
    deltalog.spark.read(None, "/nowhere")
except SetupError as exc:
    out["error"] = str(exc)
out["pyspark_loaded"] = any(m == "pyspark" or m.startswith("pyspark.") for m in sys.modules)
print(json.dumps(out))
"""


def test_help_shows_typed_parameters_and_a_call_says_what_to_install_without_pyspark() -> None:
    run = subprocess.run([sys.executable, "-c", WITHOUT_PYSPARK], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout.strip().splitlines()[-1])
    read_help = out["help"]["read"]
    assert "spark: 'SparkSession'" in read_help and "table_uri: 'str'" in read_help
    assert "columns: 'Sequence[str] | None' = None" in read_help and "-> 'DataFrame'" in read_help
    assert "deletion vectors are applied" in read_help
    assert "storage_options: 'dict[str, Any] | None' = None" in out["help"]["write"]
    assert "-> 'WriteResult'" in out["help"]["write"]
    assert "parts: 'int | None' = None" in out["help"]["checkpoint"]
    assert "starting_version: 'int | None' = None" in out["help"]["read_changes"]
    assert "z_order_by: 'Sequence[str] | None' = None" in out["help"]["optimize"]
    assert "-> 'OptimizeResult'" in out["help"]["optimize"]
    assert out["error"] == "deltalog.spark.read needs pyspark, which is not installed: pip install 'deltalog[spark]'"
    assert out["pyspark_loaded"] is False


def test_a_carried_error_comes_back_typed_with_its_fields() -> None:
    original = CorruptDataError("part-0.parquet: the file does not exist", path="part-0.parquet")
    spark_text = RuntimeError(f"Job aborted: PythonException: Traceback ...\n{carry_error(original)}\n  at org.apache")
    rebuilt = carried_error(spark_text)
    assert isinstance(rebuilt, CorruptDataError)
    assert str(rebuilt) == str(original) and rebuilt.path == "part-0.parquet"
    assert carried_error(RuntimeError("an executor was lost")) is None
