"""The Dagster code location: assembles the building blocks of ``orchestration.defs`` for the
tables in ``tables.yaml``.

Nothing is built at import time: ``defs`` is loaded lazily by Dagster (``@dg.definitions``), so
importing this module reads no file and no environment variable. The config file is
``$LAKE_TABLES_CONFIG`` if set when the definitions load, else ``tables.yaml`` in the checkout.
"""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg

from orchestration.config import TablesConfig, load_tables_config
from orchestration.defs.downstream import downstream_definitions
from orchestration.defs.resources import resource_definitions
from orchestration.defs.tables import lake_definitions, table_definitions

CONFIG_ENV = "LAKE_TABLES_CONFIG"
DEFAULT_CONFIG = Path(__file__).resolve().parents[1] / "tables.yaml"


def config_path() -> Path:
    return Path(os.environ.get(CONFIG_ENV) or DEFAULT_CONFIG)


def build_definitions(config: TablesConfig) -> dg.Definitions:
    return dg.Definitions.merge(
        resource_definitions(config),
        *(table_definitions(table) for table in config.tables),
        lake_definitions(config),
        downstream_definitions(config),
    )


@dg.definitions
def defs() -> dg.Definitions:
    return build_definitions(load_tables_config(config_path()))
