"""The run every maintenance asset shares (orchestration.defs.maintenance.run): whatever the
operation, a run that skips says why in its metadata, log, check and ledger row, and a run whose
operation raises leaves one ledger row saying so. Real Dagster runs of every maintenance asset a
table gets, against a real lake table."""

from __future__ import annotations

import dagster as dg
import pyarrow as pa
import pytest
import yaml

from lake_core import Catalog
from orchestration.config import load_tables_config
from orchestration.definitions import build_definitions
from orchestration.defs.ledger import read_ledger
from orchestration.defs.maintenance.reason import run_reason
from orchestration.defs.naming import REASON_TAG

pytestmark = pytest.mark.dagster

TABLE = "db.t"
SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("ts", pa.int64()), ("op", pa.string())])
PARTITION = "dt=2024-01-01"
# every maintenance asset the config can give a table: partitioned, fixed-bucket, primary-keyed
OPERATIONS = {
    "compaction",
    "record_expiry",
    "manifest_compaction",
    "snapshot_expiry",
    "partition_expiry",
    "orphan_cleanup",
    "tags",
    "rescale",
}


def _definitions(tmp_path, warehouse: str) -> dg.Definitions:
    table = {
        "name": TABLE,
        "schema": {"dt": "STRING", "id": "BIGINT", "ts": "BIGINT", "op": "STRING"},
        "primary_keys": ["dt", "id"],
        "partition_keys": ["dt"],
        "options": {"bucket": 2, "rowkind.field": "op"},
        "maintenance": {
            "tags": {"name_format": "daily-%Y-%m-%d"},
            "partition_expiry": {"expiration_time": "30 d"},
            "record_expiry": {"field": "ts", "retention": "1 d"},
            "rescale": {"target_buckets": 3},
            "snapshot_expiry": {"retain_min": 1, "retain_max": 1},
        },  # 2 snapshots: one to expire
    }
    path = tmp_path / "tables.yaml"
    path.write_text(yaml.safe_dump({"warehouse": {"uri": warehouse}, "tables": [table]}))
    return build_definitions(load_tables_config(path))


def _maintenance_assets(defs: dg.Definitions) -> dict[str, dg.AssetsDefinition]:
    keys = [k for k in defs.resolve_all_asset_keys() if len(k.path) == 3 and ".".join(k.path[:2]) == TABLE]
    assets = {k.path[-1]: defs.resolve_assets_def(k) for k in keys}
    assert set(assets) == OPERATIONS  # a new asset is covered here as soon as it exists
    return assets


def _materialize(asset: dg.AssetsDefinition, instance: dg.DagsterInstance, reason: str) -> dg.ExecuteInProcessResult:
    partition = None
    if asset.partitions_def is not None:  # rescale: one of the table's partitions, as a backfill would pick
        instance.add_dynamic_partitions(asset.partitions_def.name, [PARTITION])
        partition = PARTITION
    return dg.materialize(
        [asset], instance=instance, partition_key=partition, tags={REASON_TAG: reason}, raise_on_error=False
    )


def _ledger_row(warehouse: str, operation: str) -> dict:
    [row] = read_ledger(Catalog(warehouse), table=TABLE, operation=operation).to_pylist()  # one row per run
    return row


def test_every_maintenance_asset_says_why_it_skipped(tmp_path, warehouse):
    why = f"table {TABLE} does not exist yet; materialize {TABLE} first"
    for operation, asset in _maintenance_assets(_definitions(tmp_path, warehouse)).items():
        reason = f"test: {operation} before the first write"
        with dg.DagsterInstance.ephemeral() as instance:
            result = _materialize(asset, instance, reason)
            logs = [e.user_message for e in instance.all_logs(result.run_id)]
        assert result.success, operation
        [materialization] = result.asset_materializations_for_node(asset.node_def.name)
        metadata = {k: v.value for k, v in materialization.metadata.items()}
        assert (metadata["skipped"], metadata["reason"], metadata["table"]) == (why, reason, TABLE), operation
        assert f"{operation} on {TABLE} skipped: {why} (requested: {reason})" in logs, operation
        checks = result.get_asset_check_evaluations()  # a blocking check passes a run that wrote nothing
        assert len(checks) == len(list(asset.check_specs)), operation
        assert all(c.passed and c.description.endswith(f": {why}") for c in checks), operation
        row = _ledger_row(warehouse, operation)
        assert (row["status"], row["skipped"], row["reason"], row["error"]) == ("skipped", why, reason, None), operation
        assert row["duration_s"] >= 0


@pytest.mark.spark
def test_every_maintenance_asset_records_its_failure_in_the_ledger(spark, tmp_path, warehouse):
    catalog = Catalog(warehouse)
    catalog.create_database("db")
    table = catalog.create_table(
        TABLE,
        schema=SCHEMA,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": "2", "rowkind.field": "op"},
    )
    for i in range(2):
        table.write_arrow(pa.table({"dt": ["2024-01-01"], "id": [i], "ts": [0], "op": ["+I"]}, schema=SCHEMA))
    # Every operation reads the latest snapshot first: unreadable, it raises, whichever operation it is.
    table.fileio.write_bytes(table.paths.snapshot(table.latest_snapshot().id), b"{not json")
    for operation, asset in _maintenance_assets(_definitions(tmp_path, warehouse)).items():
        with dg.DagsterInstance.ephemeral() as instance:
            result = _materialize(asset, instance, f"test: {operation} on a broken table")
        assert not result.success, operation
        [failure] = [e for e in result.all_events if e.is_step_failure]
        error = failure.step_failure_data.error
        raised = (error.cause or error).cls_name
        row = _ledger_row(warehouse, operation)
        assert row["status"] == "failed" and row["error"].startswith(f"{raised}: "), (operation, row["error"])
        assert row["reason"] == f"test: {operation} on a broken table" and row["duration_s"] >= 0


@pytest.mark.parametrize(
    "tags, scope, reason",
    [
        (
            {REASON_TAG: "compaction: 7 sorted runs > 5", "dagster/sensor_name": "s"},
            None,
            "compaction: 7 sorted runs > 5",
        ),
        ({"dagster/schedule_name": "nightly"}, None, "schedule nightly"),
        ({"dagster/sensor_name": "health", "dagster/backfill": "b1"}, None, "sensor health"),
        (
            {"dagster/backfill": "kvlhhtcl"},
            "2 partition(s): dt=1, dt=2",
            "backfill kvlhhtcl for 2 partition(s): dt=1, dt=2",
        ),
        ({"dagster/from_ui": "true"}, "the whole table", "launched from the UI for the whole table"),
        ({}, None, "launched by hand"),
    ],
)
def test_one_reason_for_every_run(tags, scope, reason):
    """The requester's reason wins; else who launched the run (a sensor's backfill: the sensor)."""
    assert run_reason(tags, scope=scope) == reason
