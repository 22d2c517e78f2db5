"""The per-table factory: everything Dagster knows about one configured table, in its own asset
group — the table's asset (its write job), its maintenance assets and its checks — and the
health sensor and schedule that request those maintenance assets."""

from __future__ import annotations

import dagster as dg

from orchestration.config import TableConfig
from orchestration.defs.checks import table_checks
from orchestration.defs.health_sensor import health_definitions
from orchestration.defs.ingest import build_table_asset
from orchestration.defs.maintenance import maintenance_assets, maintenance_sensors


def table_definitions(table: TableConfig) -> dg.Definitions:
    maintenance = maintenance_assets(table)
    return dg.Definitions.merge(
        dg.Definitions(
            assets=[build_table_asset(table), *maintenance],
            asset_checks=table_checks(table),
            sensors=maintenance_sensors(table),
        ),
        health_definitions(table, [key for asset in maintenance for key in asset.keys]),
    )
