"""fsspec keyword arguments (what :func:`deltalog.storage.options.parse_options` makes of any spelling) as the
configuration of an ``obstore`` store (Rust ``object_store``'s names).

Why from the fsspec form and not from the user's dict: the user's names (deltalake's or fsspec's, any case)
are already translated once, in one place; this module maps that one result again, so both backends read the
same options and a key means the same on each. A key with no ``object_store`` equivalent (an AWS profile, an
Azure credential object, a botocore setting) is returned as the reason obstore cannot serve the table: the
caller then uses the fsspec backend, or refuses when obstore was asked for by name. Pure: no obstore import.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

#: fsspec (s3fs) keyword -> object_store S3 key
_S3_KEYS = {"key": "access_key_id", "secret": "secret_access_key", "token": "token", "endpoint_url": "endpoint"}
#: fsspec (adlfs) keyword -> object_store Azure key
_AZURE_KEYS = {
    "account_name": "account_name",
    "account_key": "account_key",
    "sas_token": "sas_key",
    "client_id": "client_id",
    "client_secret": "client_secret",
    "tenant_id": "tenant_id",
}
#: keywords that only configure the fsspec client's own behaviour (caches, its event loop): nothing to map
_FSSPEC_ONLY = {"use_listings_cache", "skip_instance_cache", "asynchronous", "loop", "default_fill_cache"}


@dataclass(frozen=True)
class ObstoreConfig:
    """What an obstore store is built from. ``repr`` names keys only: the values hold credentials."""

    config: dict[str, Any] = field(default_factory=dict)
    client_options: dict[str, Any] = field(default_factory=dict)
    #: values to scrub from messages beyond the options' own secrets (a SAS token's signature on its own)
    secrets: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return f"ObstoreConfig(keys={sorted(self.config)}, client_options={sorted(self.client_options)})"


def _http(endpoint: str, client_options: dict[str, Any]) -> None:
    if endpoint.lower().startswith("http://"):
        client_options["allow_http"] = True  # an http:// endpoint is used as given, as the fsspec stores do


def _s3(kwargs: Mapping[str, Any]) -> ObstoreConfig | str:
    config: dict[str, Any] = {}
    client: dict[str, Any] = {}
    for key, value in kwargs.items():
        if key in _S3_KEYS:
            config[_S3_KEYS[key]] = str(value)
        elif key == "anon":
            config["skip_signature"] = bool(value)
        elif key == "client_kwargs" and isinstance(value, Mapping) and set(value) <= {"region_name", "endpoint_url"}:
            if value.get("region_name"):
                config["region"] = str(value["region_name"])
            if value.get("endpoint_url"):
                config["endpoint"] = str(value["endpoint_url"])
        elif key == "config_kwargs" and isinstance(value, Mapping) and _only_addressing(value):
            style = (value.get("s3") or {}).get("addressing_style")
            if style is not None:
                config["virtual_hosted_style_request"] = style == "virtual"
        elif key not in _FSSPEC_ONLY:
            return f"storage option {key!r} has no obstore equivalent"
    if "endpoint" in config:
        _http(config["endpoint"], client)
    return ObstoreConfig(config, client)


def _only_addressing(config_kwargs: Mapping[str, Any]) -> bool:
    """Whether botocore's config holds nothing but the addressing style (and the pool size deltalog sets)."""
    extra = set(config_kwargs) - {"s3", "max_pool_connections"}
    s3 = config_kwargs.get("s3") or {}
    return not extra and isinstance(s3, Mapping) and set(s3) <= {"addressing_style"}


def connection_string_parts(text: str) -> dict[str, str]:
    """An Azure connection string's ``Name=value`` pairs, names lower-cased (values keep their ``=``)."""
    out = {}
    for part in text.split(";"):
        name, sep, value = part.partition("=")
        if sep and name.strip():
            out[name.strip().lower()] = value.strip()
    return out


def _azure_connection(text: str, config: dict[str, Any], client: dict[str, Any]) -> str | None:
    parts = connection_string_parts(text)
    if parts.get("usedevelopmentstorage", "").lower() == "true":
        config["use_emulator"] = True
        client["allow_http"] = True
        return None
    if "accountname" in parts:
        config["account_name"] = parts["accountname"]
    if "accountkey" in parts:
        config["account_key"] = parts["accountkey"]
    if "sharedaccesssignature" in parts:
        config["sas_key"] = parts["sharedaccesssignature"].lstrip("?")
    endpoint = parts.get("blobendpoint")
    if endpoint:
        config["endpoint"] = endpoint.rstrip("/")
        _http(endpoint, client)
    elif parts.get("endpointsuffix") and config.get("account_name"):
        scheme = parts.get("defaultendpointsprotocol", "https")
        config["endpoint"] = f"{scheme}://{config['account_name']}.blob.{parts['endpointsuffix']}"
        _http(config["endpoint"], client)
    if "account_name" not in config:
        return "the Azure connection string names no AccountName"
    return None


def _azure(kwargs: Mapping[str, Any]) -> ObstoreConfig | str:
    config: dict[str, Any] = {}
    client: dict[str, Any] = {}
    secrets: list[str] = []
    for key, value in kwargs.items():
        if key in _AZURE_KEYS:
            config[_AZURE_KEYS[key]] = str(value).lstrip("?") if key == "sas_token" else str(value)
        elif key == "connection_string":
            problem = _azure_connection(str(value), config, client)
            if problem:
                return problem
        elif key == "account_host":
            config["endpoint"] = f"https://{str(value).rstrip('/')}"
        elif key == "anon":
            config["skip_signature"] = bool(value)
        elif key not in _FSSPEC_ONLY:
            return f"storage option {key!r} has no obstore equivalent"
    if "sas_key" in config:  # the signature alone may appear in a URL a message quotes
        secrets += [v for k, v in parse_qsl(config["sas_key"]) if k.lower() == "sig" and v]
    return ObstoreConfig(config, client, tuple(secrets))


def obstore_config(kind: str, fs_kwargs: Mapping[str, Any]) -> ObstoreConfig | str:
    """The obstore configuration for a store of ``kind`` (``s3`` or ``azure``), or why there is none."""
    if kind == "s3":
        return _s3(fs_kwargs)
    if kind == "azure":
        return _azure(fs_kwargs)
    return f"obstore serves s3 and azure locations here, not {kind}"


__all__ = ["ObstoreConfig", "connection_string_parts", "obstore_config"]
