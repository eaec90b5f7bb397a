"""No credential reaches a log record, even with DEBUG on for every library (docs/storage.md's promise).

Real clients against real servers: botocore/aiobotocore/s3fs talking to a moto server with a session token
(botocore sends it as ``X-Amz-Security-Token`` and logs its request headers at DEBUG), and adlfs/azure-core
talking to Azurite with an account key and a SAS token. Every logger is set to DEBUG and every record is
captured where it is made and where it ends up, then formatted (exceptions included) and searched.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import quote

import pyarrow as pa
import pytest

from deltalog import DeltaLog
from deltalog import actions as A
from deltalog.errors import DeltaLogError
from deltalog.storage.options import EMULATOR_ACCOUNT, EMULATOR_KEY, emulator_connection_string
from tests.storage.servers import BUCKET, CONTAINER, FSSPEC, S3_SECRET, Server, s3_options, unique

SESSION_TOKEN = "FwoGZXIvYXdzEDelTaLoGsEsSiOnToKeN/with+base64=chars0123456789abcdefXYZ"
SAS_TOKEN = "sv=2022-11-02&ss=b&srt=sco&sp=rwdlac&se=2030-01-01T00:00:00Z&sig=DeLtAlOgSaSsIgNaTuRe%2Babc%3D"
SCHEMA = pa.schema([("id", pa.int64())])
MASK = "***"


class Capture(logging.Handler):
    """Keeps every record it is handed, formatted with the exception and stack the way a handler prints them."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.texts: list[str] = []
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.texts.append(self.format(record))


@contextmanager
def debug_everywhere() -> Iterator[Capture]:
    """DEBUG on the root and on every logger that exists, with the capture on each (propagating or not)."""
    capture = Capture()
    manager = logging.Logger.manager
    saved: dict[logging.Logger, int] = {}
    loggers = [logging.getLogger()] + [lg for lg in list(manager.loggerDict.values()) if isinstance(lg, logging.Logger)]
    for lg in loggers:
        saved[lg] = lg.level
        lg.setLevel(logging.DEBUG)
        lg.addHandler(capture)
    try:
        yield capture
    finally:
        for lg, level in saved.items():
            lg.setLevel(level)
            lg.removeHandler(capture)


def test_s3_session_token_and_secret_never_reach_a_record(moto_server: Server) -> None:
    # the S3 store (and with it botocore's loggers) is made inside the DEBUG window, so nothing is missed
    options = s3_options(moto_server.endpoint, AWS_SESSION_TOKEN=SESSION_TOKEN, **FSSPEC)  # botocore logs headers
    with debug_everywhere() as capture:
        log = DeltaLog.for_table(f"s3://{BUCKET}/{unique()}", options)
        log.create(SCHEMA)
        log.start_transaction().commit([A.Add("a.parquet", {}, 1, 0, True)])
        assert log.snapshot().version == 1
        with pytest.raises(DeltaLogError):
            log.snapshot(version=7)
    text = "\n".join(capture.texts)
    assert "X-Amz-Security-Token" in text  # botocore did log the request headers: the check has teeth
    for secret in (SESSION_TOKEN, quote(SESSION_TOKEN, safe=""), S3_SECRET):
        assert secret not in text
    assert MASK in text


def test_azure_account_key_and_sas_token_never_reach_a_record(azurite_server: Server) -> None:
    account_key = {"connection_string": emulator_connection_string(azurite_server.endpoint, EMULATOR_ACCOUNT)}
    with debug_everywhere() as capture:
        log = DeltaLog.for_table(f"abfs://{CONTAINER}/{unique()}", account_key)
        log.create(SCHEMA)
        assert log.snapshot().version == 0
        endpoint = f"{azurite_server.endpoint}/{EMULATOR_ACCOUNT}"
        sas = DeltaLog.for_table(
            f"abfs://{CONTAINER}/{unique()}",
            {"connection_string": f"BlobEndpoint={endpoint};SharedAccessSignature={SAS_TOKEN}"},
        )
        with pytest.raises(DeltaLogError):  # Azurite refuses the made-up signature: logged with the request
            sas.snapshot()
    text = "\n".join(capture.texts)
    assert "http_logging_policy" in text or "azure" in text  # the SDK's records were captured
    for secret in (EMULATOR_KEY, SAS_TOKEN, "DeLtAlOgSaSsIgNaTuRe"):
        assert secret not in text


def test_a_record_holding_a_secret_in_its_args_or_exception_is_masked() -> None:
    from deltalog.storage.redaction import mask, scrub_record

    secrets = ("s3cr3t-token-value",)
    try:
        raise RuntimeError("failed with token s3cr3t-token-value")
    except RuntimeError:
        import sys

        record = logging.LogRecord(
            "botocore.endpoint", logging.DEBUG, __file__, 1, "headers=%s", ({"t": secrets[0]},), sys.exc_info()
        )
    scrub_record(record, secrets)
    text = logging.Formatter().format(record)
    assert secrets[0] not in text and MASK in text
    assert mask("a s3cr3t-token-value b", secrets) == "a *** b"
