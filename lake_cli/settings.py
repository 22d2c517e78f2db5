"""Where the warehouse is and how to reach it: flags, then the environment, then ``tables.yaml``.

The file is read with a small loader of its own (``warehouse.uri``, ``warehouse.s3``, the table
names): ``orchestration.config`` validates the whole file but imports Dagster, which a command line
must not pay for. Credentials stay environment variable *names* in the file, resolved here by
``jobs.storage`` exactly as the Spark jobs' command lines do.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from jobs.storage import (
    DEFAULT_KEY_ENV,
    DEFAULT_REGION,
    DEFAULT_SECRET_ENV,
    add_storage_arguments,
    storage_options_from_args,
)
from lake_core.errors import LakeError

WAREHOUSE_ENV = "LAKE_WAREHOUSE"
CONFIG_ENV = "LAKE_TABLES_CONFIG"  # the same variable as the Dagster code location and the demo


class UsageError(LakeError, ValueError):
    """A command line, environment or config file the command cannot run with (exit code 2)."""


@dataclass(frozen=True)
class FileConfig:
    """What the CLI takes from ``tables.yaml``."""

    path: str
    warehouse: str | None = None
    s3: Mapping[str, Any] = field(default_factory=dict)
    tables: tuple[str, ...] = ()


def load_file_config(path: str) -> FileConfig:
    """``warehouse.uri`` (a relative path is relative to the file), ``warehouse.s3`` and the table
    names of a ``tables.yaml``; raises :class:`UsageError` naming the file and the field."""
    p = Path(path)
    try:
        raw = yaml.safe_load(p.read_text())
    except (OSError, yaml.YAMLError) as e:
        raise UsageError(f"cannot read config {path}: {e}") from None
    if not isinstance(raw, dict):
        raise UsageError(f"config {path}: expected a mapping with 'warehouse' and 'tables'")
    wh = raw.get("warehouse") or {}
    if not isinstance(wh, dict) or ("uri" in wh and not isinstance(wh["uri"], str)):
        raise UsageError(f"config {path}: field 'warehouse' must be a mapping with a 'uri' string")
    uri = wh.get("uri")
    if uri is not None and "://" not in uri:
        local = Path(uri).expanduser()
        uri = (local if local.is_absolute() else p.resolve().parent / local).resolve().as_uri()
    s3 = wh.get("s3") or {}
    if not isinstance(s3, dict):
        raise UsageError(f"config {path}: field 'warehouse.s3' must be a mapping")
    tables = raw.get("tables") or []
    names = tuple(str(t["name"]) for t in tables if isinstance(t, dict) and "name" in t)
    return FileConfig(str(p), uri, s3, names)


def add_location_arguments(parser: argparse.ArgumentParser) -> None:
    """``--warehouse``, ``--config`` and the storage flags of ``jobs.storage``."""
    group = parser.add_argument_group("warehouse", f"flags > ${WAREHOUSE_ENV}/${CONFIG_ENV} > tables.yaml")
    group.add_argument(
        "--warehouse", metavar="URI", help=f"file:///path, a path or s3://bucket/prefix (${WAREHOUSE_ENV})"
    )
    group.add_argument(
        "--config",
        metavar="TABLES_YAML",
        help=f"a tables.yaml whose warehouse (and s3 settings) to use (${CONFIG_ENV}; ./tables.yaml if present)",
    )
    add_storage_arguments(parser)


def file_config(args: argparse.Namespace, environ: Mapping[str, str]) -> FileConfig | None:
    path = args.config or environ.get(CONFIG_ENV) or None
    if path is None:
        return (
            load_file_config("tables.yaml") if Path("tables.yaml").is_file() and not _explicit(args, environ) else None
        )
    return load_file_config(path)


def _explicit(args: argparse.Namespace, environ: Mapping[str, str]) -> bool:
    return bool(args.warehouse or environ.get(WAREHOUSE_ENV))


def resolve_location(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> tuple[str, dict[str, Any]]:
    """(warehouse URI, storage options): ``--warehouse`` > ``$LAKE_WAREHOUSE`` > ``tables.yaml``
    (``--config``, ``$LAKE_TABLES_CONFIG``, or ``./tables.yaml``); the S3 variable names and region from
    the flags unless left at their defaults, then from the file's ``warehouse.s3``."""
    env = os.environ if environ is None else environ
    config = file_config(args, env)
    warehouse = args.warehouse or env.get(WAREHOUSE_ENV) or (config.warehouse if config else None)
    if not warehouse:
        raise UsageError(
            f"no warehouse: give --warehouse URI, set ${WAREHOUSE_ENV}, or point --config at a tables.yaml"
        )
    if "://" not in warehouse:
        warehouse = Path(warehouse).expanduser().resolve().as_uri()
    if config is not None and config.s3:
        s3 = config.s3
        defaults = {
            "s3_endpoint_env": (None, s3.get("endpoint_url_env")),
            "s3_key_env": (DEFAULT_KEY_ENV, s3.get("access_key_env")),
            "s3_secret_env": (DEFAULT_SECRET_ENV, s3.get("secret_key_env")),
            "s3_region": (DEFAULT_REGION, s3.get("region")),
        }
        args = argparse.Namespace(**vars(args))
        for name, (default, from_file) in defaults.items():
            if getattr(args, name) == default and from_file is not None:
                setattr(args, name, from_file)
        if not args.s3_virtual_hosted and s3.get("path_style") is False:
            args.s3_virtual_hosted = True
    return warehouse, storage_options_from_args(args, warehouse, env)
