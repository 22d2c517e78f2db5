"""Everything Dagster knows about the configured tables. Each table has its own asset group: the
table's asset (its write job, :func:`table_definitions`), its maintenance assets and its checks.
The maintenance assets and checks of all tables are built together (:func:`lake_definitions`): one
op per operation, and a fixed number of sensors, however many tables."""

from __future__ import annotations

import dagster as dg

from orchestration.config import TableConfig, TablesConfig
from orchestration.defs.checks import table_checks
from orchestration.defs.health_sensor import health_definitions
from orchestration.defs.ingest import build_table_asset
from orchestration.defs.lake_health import build_lake_health_asset
from orchestration.defs.maintenance import maintenance_assets, maintenance_sensors


def table_definitions(table: TableConfig) -> dg.Definitions:
    """The table's own asset (its write job, or an external asset)."""
    return dg.Definitions(assets=[build_table_asset(table)])


def lake_definitions(config: TablesConfig) -> dg.Definitions:
    """What spans the tables: every table's maintenance assets (one op per operation) and checks
    (one op per kind), the lake-wide sensors (health, automation, partitions) and the lake_health
    view. A fixed number of ops and sensors, however many tables."""
    maintenance = maintenance_assets(config.tables)
    keys = [key for a in maintenance for key in a.keys]
    return dg.Definitions.merge(
        dg.Definitions(
            assets=[*maintenance, build_lake_health_asset(config)],
            asset_checks=table_checks(config.tables),
            sensors=maintenance_sensors(config),
        ),
        health_definitions(config, keys),
    )
