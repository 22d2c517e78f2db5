"""The per-table factory: everything Dagster knows about one configured table, in its own asset
group — the table's asset (its write job), its maintenance assets and its checks. The sensors are
lake-wide (:func:`lake_definitions`): their number does not grow with the tables."""

from __future__ import annotations

from collections.abc import Iterable

import dagster as dg

from orchestration.config import TableConfig, TablesConfig
from orchestration.defs.checks import table_checks
from orchestration.defs.health_sensor import health_definitions
from orchestration.defs.ingest import build_table_asset
from orchestration.defs.lake_health import build_lake_health_asset
from orchestration.defs.maintenance import maintenance_assets, maintenance_sensors


def table_definitions(table: TableConfig) -> dg.Definitions:
    return dg.Definitions(
        assets=[build_table_asset(table), *maintenance_assets(table)], asset_checks=table_checks(table)
    )


def lake_definitions(config: TablesConfig, assets: Iterable[dg.AssetsDefinition | dg.AssetSpec]) -> dg.Definitions:
    """The lake-wide sensors (health, automation, partitions) and the lake_health view; ``assets``:
    every table's assets (the maintenance ones the sensors may request)."""
    keys = [key for a in assets if isinstance(a, dg.AssetsDefinition) for key in a.keys]
    return dg.Definitions.merge(
        dg.Definitions(assets=[build_lake_health_asset(config)], sensors=maintenance_sensors(config)),
        health_definitions(config, keys),
    )
