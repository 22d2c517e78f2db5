"""The maintenance assets: one asset per maintenance operation per table (the assets of one
operation over all tables are one op, :mod:`.asset`), and the seam where each operation plugs in.

Each operation of ``table.maintenance`` (``compact``, ``compact_manifest``, ``expire_snapshots``,
``expire_partitions``, ``remove_orphan_files``, ``rescale``, ...) arrives as a builder registered in
``MAINTENANCE_ASSETS``: given a table's config it returns the operation's asset, or None when the
table's policy disables it. :func:`maintenance_assets` builds them for all tables, each in its
table's group.

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

from collections.abc import Callable, Sequence

import dagster as dg

from orchestration.config import TableConfig, TablesConfig
from orchestration.defs.maintenance import step_process
from orchestration.defs.maintenance.asset import TableOperation, combine
from orchestration.defs.maintenance.compaction import build_compaction_asset, build_record_expiry_asset
from orchestration.defs.maintenance.partitions import build_partitions_sensor
from orchestration.defs.maintenance.rescale import build_rescale_asset

# A builder returns, for one table, a TableOperation (joined with the other tables' into one op per
# operation), a ready asset of that table, or None when the table's policy rules the operation out.
MaintenanceAssetBuilder = Callable[[TableConfig], "dg.AssetsDefinition | TableOperation | None"]
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


def maintenance_assets(tables: Sequence[TableConfig]) -> list[dg.AssetsDefinition]:
    """Every table's maintenance assets: per operation one op over the tables (:func:`.asset.combine`),
    plus the assets a builder made for one table (a partitioned table's rescale)."""
    out: list[dg.AssetsDefinition] = []
    for operation, build in MAINTENANCE_ASSETS.items():
        joined: list[TableOperation] = []
        for table in tables:
            built = build(table)
            if isinstance(built, TableOperation):
                joined.append(built)
            elif built is not None:
                out.append(built)
        if joined:
            out.append(combine(operation, joined))
    return out


def maintenance_sensors(config: TablesConfig) -> list[dg.SensorDefinition]:
    built = (build(config) for build in MAINTENANCE_SENSORS.values())
    return [sensor for sensor in built if sensor is not None]
