"""``storage_options``: one dict, two spellings, and secrets that never leave it.

Users arrive with options written for the ``deltalake`` package (``AWS_ACCESS_KEY_ID``,
``AZURE_STORAGE_ACCOUNT_KEY``, ``azure_storage_use_emulator``, any case) or for fsspec (``key``, ``secret``,
``endpoint_url``, ``connection_string``, ...). Both must work without the user learning a third spelling, so
the deltalake names are translated to the fsspec keyword arguments of s3fs / adlfs and everything else is
passed through unchanged. Options that only configure deltalake's own locking are accepted and ignored (with a
log line naming the key, never its value), because deltalog always uses conditional writes.

Secret values are collected into :class:`StoreOptions.secrets` so every message deltalog builds can be
scrubbed with :func:`scrub` before it reaches an exception, a log record or a ``repr``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from deltalog.errors import InvalidArgumentError
from deltalog.storage.obstore_options import connection_string_parts
from deltalog.storage.redaction import MIN_SECRET_LEN, mask

log = logging.getLogger(__name__)

#: opt-in for committing through a store that cannot put-if-absent atomically (one writer at a time only)
UNSAFE_OPT_IN = "deltalog_allow_unsafe_commits"
#: how many requests a store keeps in flight for bulk reads (default :data:`deltalog.storage.bulk.DEFAULT_CONCURRENCY`)
CONCURRENCY = "deltalog_max_concurrency"
#: which client serves s3:// and Azure tables: ``obstore`` or ``fsspec`` (default: obstore when it is installed)
BACKEND = "deltalog_backend"
#: the environment variable that sets :data:`BACKEND` for every table without the option
BACKEND_ENV = "DELTALOG_STORE_BACKEND"
BACKENDS = ("obstore", "fsspec")
_DELTALOG_OPTIONS = (UNSAFE_OPT_IN, CONCURRENCY, BACKEND)

#: Azurite's well-known development account (public, documented by Microsoft; not a secret)
EMULATOR_ACCOUNT = "devstoreaccount1"
EMULATOR_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

_S3_NAMES: dict[str, str] = {
    "aws_access_key_id": "key",
    "access_key_id": "key",
    "aws_secret_access_key": "secret",
    "secret_access_key": "secret",
    "aws_session_token": "token",
    "aws_token": "token",
    "session_token": "token",
    "aws_endpoint_url": "endpoint_url",
    "aws_endpoint": "endpoint_url",
    "endpoint": "endpoint_url",
    "aws_profile": "profile",
}
_S3_REGION = {"aws_region", "aws_default_region", "region"}
_S3_IGNORED = {
    "aws_allow_http",  # an http:// endpoint is used as given
    "allow_http",
    "aws_s3_allow_unsafe_rename",
    "aws_conditional_put",
    "conditional_put",
    "aws_copy_if_not_exists",
    "copy_if_not_exists",
    "aws_force_credential_load",
}
#: deltalake options saying the table's other writers coordinate through DynamoDB, which deltalog does not join
_S3_LOCKING = {"aws_s3_locking_provider", "delta_dynamo_table_name", "dynamo_lock_table_name"}

_AZURE_NAMES: dict[str, str] = {
    "azure_storage_account_name": "account_name",
    "azure_storage_account_key": "account_key",
    "azure_storage_access_key": "account_key",
    "azure_storage_master_key": "account_key",
    "access_key": "account_key",
    "master_key": "account_key",
    "azure_storage_connection_string": "connection_string",
    "azure_storage_sas_key": "sas_token",
    "azure_storage_sas_token": "sas_token",
    "sas_key": "sas_token",
    "azure_storage_client_id": "client_id",
    "azure_client_id": "client_id",
    "azure_storage_client_secret": "client_secret",
    "azure_client_secret": "client_secret",
    "azure_storage_tenant_id": "tenant_id",
    "azure_tenant_id": "tenant_id",
    "azure_storage_authority_id": "tenant_id",
}
#: deltalake's GCS names (a service-account file, or its JSON) -> gcsfs's ``token``; the endpoint for emulators
_GCS_TOKEN_FILE = {"google_service_account", "google_service_account_path", "google_application_credentials"}
_GCS_TOKEN_JSON = {"google_service_account_key"}
_GCS_ENDPOINT = {"google_base_url", "google_endpoint", "google_storage_endpoint"}
_AZURE_EMULATOR = {"azure_storage_use_emulator", "azure_use_emulator", "use_emulator"}
_AZURE_ENDPOINT = {"azure_storage_endpoint", "azure_endpoint"}
_AZURE_IGNORED = {"azure_allow_http", "allow_http", "azure_storage_allow_http"}

#: fsspec keyword arguments (after translation) whose values are secrets
_SECRET_KWARGS = {"secret", "token", "account_key", "connection_string", "sas_token", "client_secret", "password"}


@dataclass(frozen=True)
class StoreOptions:
    """What a store is built from: fsspec keyword arguments plus deltalog's own switches.

    The ``repr`` shows option names only: a ``StoreOptions`` may end up in a log line or a traceback.
    """

    fs_kwargs: dict[str, Any] = field(default_factory=dict)
    allow_unsafe_commits: bool = False
    secrets: tuple[str, ...] = ()
    max_concurrency: int | None = None
    #: the client asked for (:data:`BACKENDS`), or ``None``: obstore when installed, else fsspec
    backend: str | None = None

    def __repr__(self) -> str:
        return f"StoreOptions(keys={sorted(self.fs_kwargs)}, allow_unsafe_commits={self.allow_unsafe_commits})"


def _truthy(key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise InvalidArgumentError(f"storage option {key} must be true or false")


def secrets_of(kwargs: Mapping[str, Any]) -> tuple[str, ...]:
    """The secret values among fsspec keyword arguments (a connection string's key counted on its own too)."""
    found: list[str] = []
    for k, v in kwargs.items():
        if k == "token" and isinstance(v, dict) and isinstance(v.get("private_key"), str):
            found.append(v["private_key"])  # a GCS service account key given as JSON
        if k in _SECRET_KWARGS and isinstance(v, str) and v:
            found.append(v)
            if k == "connection_string":
                found.extend(_connection_string_secrets(v))
    return tuple(found)


def _connection_string_secrets(cs: str) -> list[str]:
    parts = connection_string_parts(cs)
    return [parts[name] for name in ("accountkey", "sharedaccesssignature") if parts.get(name)]


def emulator_connection_string(
    endpoint: str | None = None, account: str = EMULATOR_ACCOUNT, key: str = EMULATOR_KEY
) -> str:
    """The Azurite connection string; ``endpoint`` as deltalake reads it (``AZURITE_BLOB_STORAGE_URL``)."""
    base = (endpoint or os.environ.get("AZURITE_BLOB_STORAGE_URL") or "http://127.0.0.1:10000").rstrip("/")
    if not base.endswith(f"/{account}"):
        base = f"{base}/{account}"
    return f"DefaultEndpointsProtocol=http;AccountName={account};AccountKey={key};BlobEndpoint={base};"


def backend_choice(key: str, value: Any) -> str | None:
    """``value`` as one of :data:`BACKENDS` (``None`` for an empty value: choose by what is installed)."""
    text = str(value or "").strip().lower()
    if not text:
        return None
    if text not in BACKENDS:
        raise InvalidArgumentError(f"{key} must be one of {', '.join(BACKENDS)}, got {text!r}")
    return text


def _positive_int(key: str, value: Any) -> int:
    try:
        number = int(str(value).strip())
    except ValueError:
        number = 0
    if number < 1:
        raise InvalidArgumentError(f"storage option {key} must be a positive integer")
    return number


def _json_object(key: str, value: Any) -> Any:
    import json

    if isinstance(value, dict):
        return value
    try:
        return json.loads(str(value))
    except ValueError:
        raise InvalidArgumentError(f"storage option {key} must be a service account key in JSON") from None


def _azure_endpoint(kwargs: dict[str, Any], endpoint: str) -> None:
    """Point the adlfs keyword arguments at ``endpoint`` (deltalake's ``azure_storage_endpoint``: the account URL).

    adlfs only takes the host (``account_host``) and always speaks https to it, so an ``http://`` endpoint
    (Azurite, a local gateway) would be reached over https and time out. For http the endpoint goes into a
    connection string, the one place the SDK takes a protocol, with the account key or SAS token.
    """
    if not endpoint.lower().startswith("http://"):
        kwargs.setdefault("account_host", endpoint.split("://", 1)[-1].rstrip("/"))
        return
    if "connection_string" in kwargs:
        return
    if any(k in kwargs for k in ("client_id", "client_secret", "tenant_id", "credential")):
        raise InvalidArgumentError(
            "azure_storage_endpoint is http://: Azure sends tokens (client_id/client_secret/tenant_id) over "
            "https only; use an account key or SAS token with an http endpoint, or an https endpoint"
        )
    account = str(kwargs.pop("account_name", "") or "")
    parts = ["DefaultEndpointsProtocol=http"] + ([f"AccountName={account}"] if account else [])
    if kwargs.get("account_key"):
        parts.append(f"AccountKey={kwargs.pop('account_key')}")
    elif kwargs.get("sas_token"):
        parts.append(f"SharedAccessSignature={str(kwargs.pop('sas_token')).lstrip('?')}")
    parts.append(f"BlobEndpoint={endpoint.rstrip('/')}")
    kwargs["connection_string"] = ";".join(parts) + ";"


#: deltalake's option names its users set as environment variables (upper case), per store kind: what
#: object_store and the cloud SDKs read from the environment. Not AWS_PROFILE (botocore reads it itself, and
#: obstore has no profiles) nor the locking names (deltalog takes no part in DynamoDB locking).
_ENV_NAMES: dict[str, frozenset[str]] = {
    "s3": frozenset(
        {k for k in _S3_NAMES if k.startswith("aws_") and k != "aws_profile"}
        | {"aws_region", "aws_default_region", "aws_allow_http", "aws_virtual_hosted_style_request"}
    ),
    "azure": frozenset(
        {k for k in _AZURE_NAMES if k.startswith("azure_storage_")}
        | {"azure_storage_use_emulator", "azure_storage_endpoint", "azure_storage_allow_http"}
    ),
    "gcs": frozenset(_GCS_TOKEN_FILE | _GCS_TOKEN_JSON | {"google_base_url"}),
}


def environment_options(scheme: str, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The storage options the environment gives a store of ``scheme``, as deltalake reads them
    (``AWS_ENDPOINT_URL``, ``AWS_ALLOW_HTTP``, ``AWS_ACCESS_KEY_ID``, ``AZURE_STORAGE_ACCOUNT_KEY``,
    ``GOOGLE_SERVICE_ACCOUNT``, ...): upper-case names only, empty values left out."""
    names = _ENV_NAMES.get(scheme, frozenset())
    env = os.environ if environ is None else environ
    return {k: v for k, v in env.items() if v and k.isupper() and k.lower() in names}


def parse_options(scheme: str, options: Mapping[str, Any] | None) -> StoreOptions:
    """Translate ``options`` for a store of ``scheme`` (``s3``, ``azure`` or anything fsspec knows), on top of
    what the environment gives it (:func:`environment_options`): an explicit option always wins, whatever its
    spelling, since the environment's are translated first and the caller's over them."""
    kwargs: dict[str, Any] = {}
    allow_unsafe = False
    concurrency: int | None = None
    backend = backend_choice(BACKEND_ENV, os.environ.get(BACKEND_ENV))
    region: str | None = None
    emulator = False
    endpoint: str | None = None
    given = list((options or {}).items())
    for raw_key, value in [*environment_options(scheme).items(), *given]:
        if not isinstance(raw_key, str):
            raise InvalidArgumentError(f"storage option names must be strings, got {type(raw_key).__name__}")
        key = raw_key.lower()
        if key == UNSAFE_OPT_IN:
            allow_unsafe = _truthy(raw_key, value)
        elif key == CONCURRENCY:
            concurrency = _positive_int(raw_key, value)
        elif key == BACKEND:
            backend = backend_choice(raw_key, value)
        elif key.startswith("deltalog_"):
            known = ", ".join(_DELTALOG_OPTIONS)
            raise InvalidArgumentError(f"unknown deltalog storage option {raw_key!r}; known: {known}")
        elif scheme == "s3" and key in _S3_NAMES:
            kwargs[_S3_NAMES[key]] = value
        elif scheme == "s3" and key in _S3_REGION:
            region = str(value)
        elif scheme == "s3" and key in ("aws_virtual_hosted_style_request", "virtual_hosted_style_request"):
            style = "virtual" if _truthy(raw_key, value) else "path"
            kwargs.setdefault("config_kwargs", {}).setdefault("s3", {})["addressing_style"] = style
        elif scheme == "s3" and key in _S3_LOCKING:
            log.warning(
                "storage option %s: deltalog never takes part in DynamoDB locking; writers that commit through "
                "a DynamoDB lock are not safe alongside deltalog (see docs/storage.md)",
                raw_key,
            )
        elif (scheme == "s3" and key in _S3_IGNORED) or (scheme == "azure" and key in _AZURE_IGNORED):
            log.debug("storage option %s does not apply to deltalog; ignored", raw_key)
        elif scheme == "azure" and key in _AZURE_NAMES:
            kwargs[_AZURE_NAMES[key]] = value
        elif scheme == "azure" and key in _AZURE_EMULATOR:
            emulator = _truthy(raw_key, value)
        elif scheme == "azure" and key in _AZURE_ENDPOINT:
            endpoint = str(value)
        elif scheme == "gcs" and key in _GCS_TOKEN_FILE:
            kwargs["token"] = str(value)
        elif scheme == "gcs" and key in _GCS_TOKEN_JSON:
            kwargs["token"] = _json_object(raw_key, value)
        elif scheme == "gcs" and key in _GCS_ENDPOINT:
            kwargs["endpoint_url"] = str(value)
        elif key.startswith(("aws_", "azure_", "google_")):
            log.warning("storage option %s is not one deltalog knows for this location; ignored", raw_key)
        else:
            kwargs[raw_key] = value  # an fsspec name (key, secret, endpoint_url, client_kwargs, ...)
    if region is not None:
        client_kwargs = dict(kwargs.get("client_kwargs") or {})
        client_kwargs.setdefault("region_name", region)
        kwargs["client_kwargs"] = client_kwargs
    if emulator and "connection_string" not in kwargs:
        account = str(kwargs.pop("account_name", EMULATOR_ACCOUNT))
        key = str(kwargs.pop("account_key", EMULATOR_KEY))
        kwargs["connection_string"] = emulator_connection_string(endpoint, account, key)
    elif endpoint is not None and scheme == "azure":
        _azure_endpoint(kwargs, endpoint)
    return StoreOptions(kwargs, allow_unsafe, secrets_of(kwargs), concurrency, backend)


def is_storage_option(key: str) -> bool:
    """Whether ``key`` (any case) is a storage option :func:`parse_options` knows by name: deltalake's S3, Azure
    and GCS keys (those it translates and those it accepts and ignores) and deltalog's own. For callers that must
    tell storage options apart from their other options (Spark's ``format("deltalog")``); fsspec's own keyword
    arguments pass through :func:`parse_options` unnamed and are not counted here."""
    low = key.lower()
    return (
        low in _DELTALOG_OPTIONS
        or low in _S3_NAMES
        or low in _S3_REGION
        or low in _S3_IGNORED
        or low in _S3_LOCKING
        or low in ("aws_virtual_hosted_style_request", "virtual_hosted_style_request")
        or low in _AZURE_NAMES
        or low in _AZURE_EMULATOR
        or low in _AZURE_ENDPOINT
        or low in _AZURE_IGNORED
        or low in _GCS_TOKEN_FILE
        or low in _GCS_TOKEN_JSON
        or low in _GCS_ENDPOINT
    )


def scrub(text: str, secrets: tuple[str, ...] | list[str]) -> str:
    """``text`` with every secret value replaced by ``***`` (longest first, so no secret leaks in part)."""
    return mask(text, sorted((s for s in secrets if len(s) >= MIN_SECRET_LEN), key=len, reverse=True))


def unsafe_commits_allowed(store: object) -> bool:
    """Whether the user opted in to committing through ``store`` although it cannot put-if-absent atomically.

    Wrappers (a fault-injecting store, say) are followed through their ``inner`` store.
    """
    seen = 0
    current: object | None = store
    while current is not None and seen < 16:
        if getattr(current, "allow_unsafe_commits", False) is True:
            return True
        current = getattr(current, "inner", None)
        seen += 1
    return False


__all__ = [
    "BACKEND",
    "BACKENDS",
    "BACKEND_ENV",
    "CONCURRENCY",
    "EMULATOR_ACCOUNT",
    "UNSAFE_OPT_IN",
    "StoreOptions",
    "backend_choice",
    "emulator_connection_string",
    "environment_options",
    "is_storage_option",
    "parse_options",
    "scrub",
    "secrets_of",
    "unsafe_commits_allowed",
]
