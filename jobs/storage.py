"""Storage options (fsspec/s3fs) resolved where the user chose, then shipped with the job.

Spark tasks open table files through lake_core's FileIO with the options the driver gives them
(they pickle with the job), so nothing depends on an executor's environment. The driver resolves
them from explicit ``key=value`` settings and from environment variables *named* by the user, and
refuses an ``s3://`` warehouse without credentials before any task runs.

Used by every job's command line (:func:`add_storage_arguments`, :func:`storage_options_from_args`)
and by the Dagster ``lake`` resource (:func:`s3_options_from_env`).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlparse

from lake_core.errors import LakeError

DEFAULT_KEY_ENV = "AWS_ACCESS_KEY_ID"
DEFAULT_SECRET_ENV = "AWS_SECRET_ACCESS_KEY"
DEFAULT_REGION = "us-east-1"


class StorageCredentialsError(LakeError, ValueError):
    """An S3 warehouse without credentials, or a malformed storage option; the message names the
    bucket, the endpoint and the environment variables looked at."""


def is_s3(warehouse: str) -> bool:
    return warehouse.startswith(("s3://", "s3a://"))


def parse_storage_option(text: str) -> tuple[list[str], Any]:
    """``'client_kwargs.region_name=eu-west-1'`` → (['client_kwargs', 'region_name'], 'eu-west-1').
    Dots nest (s3fs takes nested dicts); a value that parses as JSON (``true``, ``3``, ``{...}``)
    is that value, anything else the text."""
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise StorageCredentialsError(
            f"storage option {text!r} must look like key=value (e.g. endpoint_url=http://...)"
        )
    try:
        value: Any = json.loads(raw)
    except ValueError:
        value = raw
    return key.strip().split("."), value


def _set(options: dict[str, Any], path: Sequence[str], value: Any) -> None:
    for part in path[:-1]:
        options = options.setdefault(part, {})
    options[path[-1]] = value


def s3_options(
    *, endpoint_url: str | None, key: str | None, secret: str | None, region: str, path_style: bool
) -> dict[str, Any]:
    """s3fs options for an S3/MinIO endpoint."""
    options: dict[str, Any] = {"client_kwargs": {"region_name": region}}
    if endpoint_url:
        options["endpoint_url"] = endpoint_url
    if key is not None:
        options["key"] = key
    if secret is not None:
        options["secret"] = secret
    if path_style:  # MinIO and other non-AWS endpoints: bucket.host does not resolve
        options["config_kwargs"] = {"s3": {"addressing_style": "path"}}
    return options


def s3_options_from_env(
    warehouse: str,
    *,
    environ: Mapping[str, str],
    endpoint_env: str | None = None,
    key_env: str | None = DEFAULT_KEY_ENV,
    secret_env: str | None = DEFAULT_SECRET_ENV,
    endpoint_url: str | None = None,
    key: str | None = None,
    secret: str | None = None,
    region: str = DEFAULT_REGION,
    path_style: bool = True,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The options of ``warehouse``: explicit values first, else the named environment variables,
    then ``extra`` (``--storage-option``) on top. Empty for a local warehouse. Raises
    :class:`StorageCredentialsError` for an S3 warehouse without a key and secret."""
    if not is_s3(warehouse):
        return dict(extra or {})
    options = s3_options(
        endpoint_url=endpoint_url if endpoint_url is not None else _env(environ, endpoint_env),
        key=key if key is not None else _env(environ, key_env),
        secret=secret if secret is not None else _env(environ, secret_env),
        region=region,
        path_style=path_style,
    )
    options = _merged(options, extra or {})
    require_credentials(
        warehouse, options, looked_at={"endpoint": endpoint_env, "access key": key_env, "secret key": secret_env}
    )
    return options


def _env(environ: Mapping[str, str], name: str | None) -> str | None:
    return (environ.get(name) or None) if name else None


def _merged(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _merged(dict(out[key]), value)
        else:
            out[key] = value
    return out


def require_credentials(
    warehouse: str,
    options: Mapping[str, Any],
    *,
    looked_at: Mapping[str, str | None],
    remedy: str = "Set those variables, name others (--s3-key-env/--s3-secret-env, or access_key_env/secret_key_env "
    "in tables.yaml), or give key=... and secret=... as storage options",
) -> None:
    """Fail in the driver, before any task, when an S3 warehouse has no key or secret: without this
    botocore looks for credentials in each executor's environment and fails there, minutes later."""
    if not is_s3(warehouse) or (options.get("anon") is True):
        return
    missing = [what for what, option in (("access key", "key"), ("secret key", "secret")) if not options.get(option)]
    if not missing:
        return
    bucket = urlparse(warehouse).netloc
    endpoint = options.get("endpoint_url") or "the AWS default endpoint"
    names = [f"{what} ${name}" for what, name in looked_at.items() if name]
    raise StorageCredentialsError(
        f"warehouse {warehouse}: no {' and no '.join(missing)} for bucket '{bucket}' at {endpoint}; looked at "
        + (", ".join(names) if names else "no environment variable")
        + f" and the explicit storage options. {remedy}"
    )


def add_storage_arguments(parser: argparse.ArgumentParser) -> None:
    """The storage flags every job's command line takes."""
    group = parser.add_argument_group(
        "storage", "credentials are read here (the driver) and travel with the tasks; executors need none"
    )
    group.add_argument(
        "--storage-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an fsspec/s3fs option (repeatable; dots nest: client_kwargs.region_name=eu-west-1)",
    )
    group.add_argument("--s3-endpoint-env", metavar="NAME", help="env var holding the endpoint URL (MinIO)")
    group.add_argument("--s3-key-env", metavar="NAME", default=DEFAULT_KEY_ENV, help="env var holding the access key")
    group.add_argument(
        "--s3-secret-env", metavar="NAME", default=DEFAULT_SECRET_ENV, help="env var holding the secret key"
    )
    group.add_argument("--s3-region", default=DEFAULT_REGION)
    group.add_argument(
        "--s3-virtual-hosted", action="store_true", help="virtual-hosted addressing (AWS) instead of path-style (MinIO)"
    )


def storage_options_from_args(args: argparse.Namespace, warehouse: str, environ: Mapping[str, str]) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    for text in args.storage_option:
        path, value = parse_storage_option(text)
        _set(extra, path, value)
    return s3_options_from_env(
        warehouse,
        environ=environ,
        endpoint_env=args.s3_endpoint_env,
        key_env=args.s3_key_env,
        secret_env=args.s3_secret_env,
        region=args.s3_region,
        path_style=not args.s3_virtual_hosted,
        extra=extra,
    )
