"""The maintenance assets: one asset per maintenance operation per table, and the seam where each
operation plugs in.

Each operation of ``table.maintenance`` (``compact``, ``compact_manifest``, ``expire_snapshots``,
``expire_partitions``, ``remove_orphan_files``, ``rescale``, ...) arrives as a builder registered in
``MAINTENANCE_ASSETS``: given a table's config it returns the operation's asset, or None when the
table's policy disables it. :func:`maintenance_assets` is what :mod:`orchestration.defs.tables`
puts into each table's group.

- :mod:`.asset`: what Dagster shows of a maintenance asset (key, group, pool, its blocking check);
- :mod:`.run`: the one run every asset makes (reason, access check, table, operation, ledger row,
  metadata, log line); an asset supplies only its operation (and, in :mod:`.asset`, its check);
  :mod:`.reason` says why a run happened;
- :mod:`.step_process`: the operations run in the step process (manifest compaction, snapshot
  expiry, partition expiry, orphan cleanup, tags), their run config in :mod:`.run_config`;
- :mod:`.compaction`, :mod:`.rescale`: the operations run on Spark, each with its blocking check;
  :mod:`.partitions`: the rescale asset's partitions and the one sensor keeping every table's in
  sync.
"""

from __future__ import annotations

from collections.abc import Callable

import dagster as dg

from orchestration.config import TableConfig, TablesConfig
from orchestration.defs.maintenance import step_process
from orchestration.defs.maintenance.compaction import build_compaction_asset, build_record_expiry_asset
from orchestration.defs.maintenance.partitions import build_partitions_sensor
from orchestration.defs.maintenance.rescale import build_rescale_asset

MaintenanceAssetBuilder = Callable[[TableConfig], "dg.AssetsDefinition | None"]
MaintenanceSensorBuilder = Callable[[TablesConfig], "dg.SensorDefinition | None"]

# operation name → builder
MAINTENANCE_ASSETS: dict[str, MaintenanceAssetBuilder] = {
    **step_process.BUILDERS,  # manifest_compaction, snapshot_expiry, partition_expiry, orphan_cleanup, tags
    "rescale": build_rescale_asset,
    "compaction": build_compaction_asset,
    "record_expiry": build_record_expiry_asset,
}

# name → builder of a lake-wide sensor a maintenance asset needs (e.g. the one keeping every table's
# rescale partitions in sync): one sensor for all tables, however many there are
MAINTENANCE_SENSORS: dict[str, MaintenanceSensorBuilder] = {
    "rescale_partitions": build_partitions_sensor,
}


def maintenance_assets(table: TableConfig) -> list[dg.AssetsDefinition]:
    built = (build(table) for build in MAINTENANCE_ASSETS.values())
    return [asset for asset in built if asset is not None]


def maintenance_sensors(config: TablesConfig) -> list[dg.SensorDefinition]:
    built = (build(config) for build in MAINTENANCE_SENSORS.values())
    return [sensor for sensor in built if sensor is not None]
