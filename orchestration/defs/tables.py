"""The per-table factory: everything Dagster knows about one configured table, in its own asset
group — the table's asset (its write job), its maintenance assets and its checks."""
from __future__ import annotations

import dagster as dg

from orchestration.config import TableConfig
from orchestration.defs.checks import table_checks
from orchestration.defs.ingest import build_table_asset
from orchestration.defs.maintenance import maintenance_assets, maintenance_sensors


def table_definitions(table: TableConfig) -> dg.Definitions:
    return dg.Definitions(assets=[build_table_asset(table), *maintenance_assets(table)], asset_checks=table_checks(table),
                          sensors=maintenance_sensors(table))
