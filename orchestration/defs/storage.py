"""Storage access checked before any Spark work: one short error that says what to fix.

Without this, a wrong endpoint, bucket or key surfaces as a long botocore trace from inside a
Spark task, after the JVM has started, naming neither the bucket nor where the credentials came
from.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import fsspec

from lake_core import LakeError


class StorageAccessError(LakeError):
    """The warehouse cannot be reached; the message names the bucket, the endpoint and the
    environment variables the credentials were read from."""


def _fast_fail(storage_options: Mapping[str, Any]) -> dict[str, Any]:
    """The same options with one attempt and short timeouts: a probe should not retry for minutes."""
    opts = copy.deepcopy(dict(storage_options))
    config = dict(opts.get("config_kwargs") or {})
    config.update(connect_timeout=5, read_timeout=15, retries={"max_attempts": 1, "mode": "standard"})
    opts["config_kwargs"] = config
    return opts


def _cause(e: BaseException) -> str:
    text = " ".join(str(e).split()) or type(e).__name__
    return f"{type(e).__name__}: {text[:300]}"


def check_storage_access(warehouse: str, storage_options: Mapping[str, Any], *, env: Mapping[str, str | None]) -> None:
    """Probe the warehouse: list its bucket (S3) or check its directory (local).

    ``env`` maps what a setting is ('endpoint', 'access key', ...) to the environment variable it
    came from (None: not from the environment).
    """
    if not warehouse.startswith(("s3://", "s3a://")):
        path = Path(urlparse(warehouse).path if warehouse.startswith("file://") else warehouse)
        if path.exists() and not (path.is_dir() and os.access(path, os.W_OK | os.X_OK)):
            raise StorageAccessError(f"warehouse {warehouse} is not a writable directory")
        return
    parsed = urlparse(warehouse)
    bucket = parsed.netloc
    endpoint = storage_options.get("endpoint_url") or "the AWS default endpoint"
    sources = [f"{what} from ${name}" for what, name in env.items() if name]
    where = f"bucket '{bucket}' at endpoint {endpoint}" + (f" ({', '.join(sources)})" if sources else "")
    try:
        fs = fsspec.filesystem("s3", skip_instance_cache=True, **_fast_fail(storage_options))
        fs.retries = 1  # s3fs retries some errors itself, on top of botocore
        fs.ls(bucket, refresh=True)
    except FileNotFoundError as e:
        raise StorageAccessError(f"warehouse {warehouse}: {where} does not exist ({_cause(e)})") from None
    except PermissionError as e:
        raise StorageAccessError(
            f"warehouse {warehouse}: access to {where} was denied; check the credentials ({_cause(e)})"
        ) from None
    except Exception as e:  # noqa: BLE001 - botocore/aiohttp raise many types; all mean "cannot reach"
        raise StorageAccessError(f"warehouse {warehouse}: cannot reach {where} ({_cause(e)})") from None
