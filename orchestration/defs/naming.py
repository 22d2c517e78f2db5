"""Names Dagster sees, derived from a table's ``database.table`` name in one place."""

from __future__ import annotations

import dagster as dg

# Run tag carrying why a maintenance run was requested ("compaction: dt=2024-01-02/bucket-3 has 7
# sorted runs > 5"); maintenance assets log it and write it to the ledger's ``reason`` column.
REASON_TAG = "lake/reason"


def table_asset_key(table_name: str) -> dg.AssetKey:
    """'demo.orders' → AssetKey(['demo', 'orders']): the asset *is* the table."""
    return dg.AssetKey(table_name.split("."))


def maintenance_asset_key(table_name: str, operation: str) -> dg.AssetKey:
    """'demo.orders', 'compaction' → AssetKey(['demo', 'orders', 'compaction'])."""
    return dg.AssetKey([*table_name.split("."), operation])


def identifier(table_name: str) -> str:
    """'demo.orders' → 'demo__orders': a Python identifier (op, group, job and sensor names)."""
    return table_name.replace(".", "__")


def table_group(table_name: str) -> str:
    """One asset group per table: the table and every maintenance asset of it."""
    return identifier(table_name)


def table_pool(table_name: str) -> str:
    """One concurrency pool per table: at most one job writes or maintains a table at a time."""
    return "lake_table_" + identifier(table_name)


MAINTENANCE_POOL = "lake_maintenance"


def maintenance_pool(table_name: str | None = None) -> str:
    """The pool of every maintenance asset (compaction, expiry, orphan cleanup, rescale, ...) of
    every table: an operation's assets of all tables are one op (docs/service/many-tables.md), and
    a pool belongs to an op, so the pool is the lake's: with its limit of 1 (dagster.yaml), one
    maintainer at a time, so never two on one table. Writers are not in it, so maintenance never
    blocks a write (only compaction's write stall rule does)."""
    return MAINTENANCE_POOL


def maintenance_op_name(operation: str) -> str:
    """The one op of an operation over all tables (what a run's config is keyed by)."""
    return f"lake_maintenance__{operation}"


def op_name(table_name: str) -> str:
    """The op behind a table's asset (what run config is keyed by)."""
    return table_asset_key(table_name).to_python_identifier()


# The lake-wide sensors: one each for all tables (their number does not grow with the tables).
SNAPSHOT_SENSOR = "lake__snapshot_sensor"
HEALTH_SENSOR = "lake__health_sensor"
PARTITIONS_SENSOR = "lake__partitions_sensor"
AUTOMATION_SENSOR = "lake__maintenance_automation"
LAKE_HEALTH_ASSET = dg.AssetKey(["lake", "lake_health"])


def downstream_job_name(table_name: str) -> str:
    return f"{identifier(table_name)}__downstream"
