"""The step-process maintenance assets (manifest compaction, snapshot/changelog expiry, partition
expiry, orphan cleanup, tags) and the maintenance ledger, materialized for real against a local
warehouse and the moto S3 server. Tables are written with lake_core directly, as any writer would."""

from __future__ import annotations

import datetime as dt
import os
import uuid
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import dagster as dg
import pyarrow as pa
import pytest
import yaml

from fixtures.tables_config import demo_orders_table
from lake_core import Catalog
from lake_core.errors import SnapshotNotFoundError
from orchestration.config import TablesConfigError, load_tables_config
from orchestration.definitions import build_definitions
from orchestration.defs.ledger import LEDGER_TABLE, read_ledger
from orchestration.defs.maintenance.run_config import MaintenanceConfigError
from orchestration.defs.naming import REASON_TAG, maintenance_asset_key, maintenance_op_name
from orchestration.demo.source import orders

TABLE = "demo.orders"
ORDERS = dg.AssetKey(["demo", "orders"])
OPERATIONS = ("manifest_compaction", "snapshot_expiry", "partition_expiry", "orphan_cleanup", "tags")
S3_ENV = {
    "endpoint_url_env": "TEST_LAKE_S3_ENDPOINT",
    "access_key_env": "TEST_LAKE_S3_KEY",
    "secret_key_env": "TEST_LAKE_S3_SECRET",
}


@dataclass
class Lake:
    """A warehouse (local or on the S3 test server) and how to reach and age its files."""

    uri: str
    storage_options: dict
    config_dir: Path
    backdate: Callable[[str, float], None]  # (absolute file URI/path, seconds)
    warehouse_extra: dict

    def catalog(self) -> Catalog:
        return Catalog(self.uri, storage_options=self.storage_options or None)

    def definitions(self, maintenance: dict | None = None, **table_extra: Any) -> dg.Definitions:
        return build_definitions(load_tables_config(self.write_config(maintenance, **table_extra)))

    def write_config(self, maintenance: dict | None = None, **table_extra: Any) -> Path:
        table = demo_orders_table(**({"maintenance": maintenance} if maintenance else {}), **table_extra)
        path = self.config_dir / f"tables-{uuid.uuid4().hex[:8]}.yaml"
        path.write_text(yaml.safe_dump({"warehouse": {"uri": self.uri, **self.warehouse_extra}, "tables": [table]}))
        return path


@pytest.fixture(params=["local", pytest.param("s3", marks=pytest.mark.s3)])
def lake(request, tmp_path, monkeypatch) -> Lake:
    if request.param == "local":
        root = tmp_path / "warehouse"
        root.mkdir()

        def age_local(path: str, seconds: float) -> None:
            local = urlparse(path).path if path.startswith("file:") else path
            t = os.path.getmtime(local) - seconds
            os.utime(local, (t, t))

        return Lake(root.as_uri(), {}, tmp_path, age_local, {})
    s3 = request.getfixturevalue("s3_warehouse")
    opts = s3.storage_options
    for env, value in (
        ("TEST_LAKE_S3_ENDPOINT", opts["endpoint_url"]),
        ("TEST_LAKE_S3_KEY", opts["key"]),
        ("TEST_LAKE_S3_SECRET", opts["secret"]),
    ):
        monkeypatch.setenv(env, value)

    def age_s3(path: str, seconds: float) -> None:
        bucket, _, key = path.removeprefix("s3://").partition("/")
        s3.server.backdate(bucket, key, seconds)

    return Lake(s3.uri, opts, tmp_path, age_s3, {"s3": S3_ENV})


def seed(lake: Lake, batches: int, **options: str):
    """demo.orders with ``batches`` commits of the demo change feed, written by lake_core."""
    from jobs.tables import TableSpec, ensure_table

    cfg = load_tables_config(lake.write_config()).table(TABLE)
    table = ensure_table(
        lake.catalog(),
        TableSpec(cfg.name, cfg.arrow_schema(), cfg.primary_keys, cfg.partition_keys, {**cfg.options, **options}),
    )
    for b in range(batches):
        table.write_arrow(orders().batch(b))
    return lake.catalog().get_table(TABLE)


def expected(batches: int) -> pa.Table:
    return orders().expected(batches).sort_by("order_id")


def content(table) -> pa.Table:
    return table.to_arrow().select(expected(1).column_names).sort_by("order_id")


def materialize(
    definitions: dg.Definitions,
    operation: str,
    config: dict | None = None,
    *,
    tags: dict | None = None,
    run_id: str | None = None,
    raise_on_error: bool = True,
    instance: dg.DagsterInstance | None = None,
):
    """Run one maintenance asset as the UI's "Materialize" does (its own run)."""
    key = maintenance_asset_key(TABLE, operation)
    job = definitions.resolve_implicit_global_asset_job_def()
    run_config = {"ops": {maintenance_op_name(operation): {"config": config}}} if config else None
    with dg.DagsterInstance.ephemeral() if instance is None else _keep(instance) as inst:
        return job.execute_in_process(
            asset_selection=[key],
            run_config=run_config,
            tags=tags,
            run_id=run_id,
            instance=inst,
            raise_on_error=raise_on_error,
        )


@contextmanager
def _keep(instance: dg.DagsterInstance):
    yield instance


def metadata(result: dg.ExecuteInProcessResult, operation: str) -> dict:
    key = maintenance_asset_key(TABLE, operation)
    [event] = [e for e in result.asset_materializations_for_node(maintenance_op_name(operation)) if e.asset_key == key]
    return {k: v.value for k, v in event.metadata.items()}


def ledger_rows(lake: Lake, operation: str | None = None) -> list[dict]:
    return read_ledger(lake.catalog(), table=TABLE, operation=operation).to_pylist()


def data_manifests(table) -> int:
    return len(table.manifest_store.data_manifests(table.latest_snapshot()))


# -- what appears in Dagster ----------------------------------------------------------------------------
@pytest.mark.dagster
def test_each_table_gets_its_maintenance_assets_in_its_group_and_maintenance_pool(tmp_path):
    lake = Lake(tmp_path.as_uri(), {}, tmp_path, lambda p, s: None, {})
    graph = lake.definitions({"tags": {"name_format": "daily-%Y-%m-%d"}}).resolve_asset_graph()
    for op in OPERATIONS:
        node = graph.get(maintenance_asset_key(TABLE, op))
        assert node.group_name == "demo__orders" and node.parent_keys == {ORDERS}
        assert node.pools == {"lake_maintenance"}  # one maintainer at a time (so one per table)
    assert graph.get(ORDERS).pools == {"lake_table_demo__orders"}  # the writer is not in that pool
    # no tags policy: no tags asset; an unpartitioned table: no partition expiry
    plain = lake.definitions(partition_keys=[], primary_keys=["order_id"]).resolve_asset_graph()
    keys = {k.path[-1] for k in plain.get_all_asset_keys() if len(k.path) == 3}
    # (compaction, record_expiry and rescale, the Spark-run assets, are tested in their own modules)
    assert keys - {"compaction", "record_expiry", "rescale"} == set(OPERATIONS) - {"tags", "partition_expiry"}


# -- each asset changes the table as a user notices -------------------------------------------------------
@pytest.mark.dagster
def test_manifest_compaction_folds_the_manifests(lake):
    table = seed(lake, 8)
    before = data_manifests(table)
    assert before >= 6
    definitions = lake.definitions()
    meta = metadata(materialize(definitions, "manifest_compaction"), "manifest_compaction")
    table = lake.catalog().get_table(TABLE)
    latest = table.latest_snapshot()
    assert data_manifests(table) == meta["manifests_after"] == 1 and meta["manifests_before"] == before
    assert meta["snapshot_id"] == latest.id and latest.commit_kind.value == "COMPACT"
    assert meta["snapshot"].endswith(f"/demo.db/orders/snapshot/snapshot-{latest.id}")
    assert isinstance(meta["manifest_bytes_after"], int) and "skipped" not in meta
    assert content(table).equals(expected(8))
    # again: nothing to do, said so, nothing committed
    again = metadata(materialize(definitions, "manifest_compaction", {"mode": "minor"}), "manifest_compaction")
    assert again["skipped"] == "already compact" and lake.catalog().get_table(TABLE).latest_snapshot().id == latest.id
    rows = ledger_rows(lake, "manifest_compaction")
    assert [(r["status"], r["snapshot_id"]) for r in rows] == [("succeeded", latest.id), ("skipped", None)]
    assert '"mode": "minor"' in rows[1]["inputs"] and rows[1]["skipped"] == "already compact"


@pytest.mark.dagster
def test_snapshot_expiry_removes_old_snapshots_and_their_files(lake):
    table = seed(lake, 6)
    replaced = {f.file_name for s in table.new_read_builder().new_scan().plan().splits() for f in s.files}
    table.maintenance.compact(full=True)  # the files of snapshots 1..6 now live in old snapshots only
    for b in range(6, 8):
        table.write_arrow(orders().batch(b))
    table = lake.catalog().get_table(TABLE)
    ids_before = [s.id for s in table.snapshots()]
    definitions = lake.definitions({"snapshot_expiry": {"retain_min": 2, "retain_max": 3, "time_retained": "1 h"}})
    meta = metadata(materialize(definitions, "snapshot_expiry"), "snapshot_expiry")
    table = lake.catalog().get_table(TABLE)
    ids = [s.id for s in table.snapshots()]
    assert ids == ids_before[-3:] and meta["earliest_snapshot"] == ids[0]
    assert meta["expired_snapshots.count"] == len(ids_before) - 3
    assert meta["deleted_data_files"] > 0 and meta["bytes_reclaimed"] > 0
    live = {f.file_name for s in table.new_read_builder().new_scan().plan().splits() for f in s.files}
    on_disk = {p.rsplit("/", 1)[-1] for p, _size, _mtime in table.fileio.list_files_recursive(table.paths.root)}
    assert not (replaced - live) & on_disk  # the compacted-away data files are gone
    assert meta["deleted_data_files"] >= len(replaced - live) > 0
    assert "expire_changelogs.skipped" in meta  # the table keeps no changelogs beyond its snapshots
    assert content(table).equals(expected(8))
    with pytest.raises(SnapshotNotFoundError):
        table.to_arrow(snapshot_id=ids_before[0])
    [row] = ledger_rows(lake, "snapshot_expiry")
    assert row["status"] == "succeeded" and row["bytes_reclaimed"] == meta["bytes_reclaimed"]
    assert '"retain_max": 3' in row["inputs"]


@pytest.mark.dagster
def test_partition_expiry_drops_old_partitions(lake):
    table = seed(lake, 3)
    today = dt.date.today().isoformat()
    fresh = orders().batch(0).slice(0, 5)
    fresh = fresh.set_column(0, "dt", pa.array([today] * 5, pa.string()))
    table.write_arrow(fresh)
    old_days = sorted(set(expected(3)["dt"].to_pylist()))
    definitions = lake.definitions({"partition_expiry": {"expiration_time": "30 d"}})
    meta = metadata(materialize(definitions, "partition_expiry"), "partition_expiry")
    table = lake.catalog().get_table(TABLE)
    assert set(table.to_arrow()["dt"].to_pylist()) == {today}
    assert meta["expired_partitions.count"] == len(old_days) and meta["dropped_files"] > 0
    assert meta["snapshot_id"] == table.latest_snapshot().id and "snapshot" in meta
    assert ledger_rows(lake, "partition_expiry")[0]["status"] == "succeeded"


@pytest.mark.dagster
def test_orphan_cleanup_is_a_dry_run_unless_configured(lake):
    table = seed(lake, 2)
    # litter of a failed write: a data file no snapshot references, two days old, next to live ones
    litter = f"{table.paths.root}/{_live_bucket_dir(table)}/data-{uuid.uuid4()}-0.parquet"
    table.fileio.write_bytes(litter, b"x" * 1234)
    lake.backdate(litter, 2 * 86400)
    young = litter.replace("data-", "data-young-")
    table.fileio.write_bytes(young, b"y" * 10)
    definitions = lake.definitions()

    dry = metadata(materialize(definitions, "orphan_cleanup"), "orphan_cleanup")  # from the UI: a dry run
    assert dry["dry_run"] is True and dry["deleted_files"] == 1 and dry["bytes_reclaimed"] == 1234
    assert table.fileio.exists(litter)
    real = metadata(materialize(definitions, "orphan_cleanup", {"dry_run": False}), "orphan_cleanup")
    assert real["dry_run"] is False and real["deleted_files"] == 1 and litter in real["files"]
    assert not table.fileio.exists(litter) and table.fileio.exists(young)  # the age floor spares young files
    assert content(lake.catalog().get_table(TABLE)).equals(expected(2))
    # the policy can make it real by default
    table.fileio.write_bytes(litter, b"z" * 10)
    lake.backdate(litter, 2 * 86400)
    policy_real = lake.definitions({"orphan_cleanup": {"dry_run": False, "older_than": "1 d"}})
    assert metadata(materialize(policy_real, "orphan_cleanup"), "orphan_cleanup")["deleted_files"] == 1
    assert not table.fileio.exists(litter)
    assert [r["dry_run"] for r in ledger_rows(lake, "orphan_cleanup")] == [True, False, False]


def _live_bucket_dir(table) -> str:
    """The directory of a live data file, relative to the table root."""
    entry = table.manifest_store.live_entries(table.latest_snapshot())[0]
    values = table.manifest_store.partition_values(entry.partition)
    parts = "/".join(f"{k}={v}" for k, v in zip(table.schema.partition_keys, values))
    return f"{parts}/bucket-{entry.bucket}"


@pytest.mark.dagster
def test_tags_asset_makes_one_tag_per_period_and_keeps_the_newest(lake):
    table = seed(lake, 2)
    for day in ("2024-01-01", "2024-01-02", "2024-01-03"):
        table.create_tag(f"daily-{day}", snapshot_id=1)
    table.create_tag("release")
    definitions = lake.definitions({"tags": {"name_format": "daily-%Y-%m-%d", "num_retained": 2}})
    meta = metadata(materialize(definitions, "tags"), "tags")
    today = dt.datetime.now(dt.UTC).strftime("daily-%Y-%m-%d")
    table = lake.catalog().get_table(TABLE)
    assert meta["tag"] == today and meta["created"] is True
    assert meta["deleted_tags"] == "daily-2024-01-01, daily-2024-01-02"
    assert table.list_tags() == ["daily-2024-01-03", today, "release"]
    assert table.to_arrow(tag=today).sort_by("order_id").select(expected(1).column_names).equals(expected(2))
    again = metadata(materialize(definitions, "tags"), "tags")
    assert again["skipped"].startswith(f"tag '{today}' already exists")
    assert [r["status"] for r in ledger_rows(lake, "tags")] == ["succeeded", "skipped"]


# -- policies that disable, config errors ----------------------------------------------------------------
@pytest.mark.dagster
def test_policy_disabled_assets_skip_with_their_reason(lake):
    table = seed(lake, 4)
    snapshots = [s.id for s in table.snapshots()]
    definitions = lake.definitions(
        {
            "manifest_compaction": {"enabled": False},
            "snapshot_expiry": {"enabled": False, "retain_min": 1, "retain_max": 1},
            "orphan_cleanup": {"enabled": False},
        }
    )
    expect = {
        "manifest_compaction": "policy maintenance.manifest_compaction.enabled is false for table demo.orders",
        "snapshot_expiry": "policy maintenance.snapshot_expiry.enabled is false for table demo.orders",
        "orphan_cleanup": "policy maintenance.orphan_cleanup.enabled is false for table demo.orders",
        "partition_expiry": "policy maintenance.partition_expiry.expiration_time is not set for table demo.orders",
    }
    for op, reason in expect.items():
        with dg.DagsterInstance.ephemeral() as instance:
            result = materialize(definitions, op, instance=instance)
            logs = [e.user_message for e in instance.all_logs(result.run_id)]
        assert metadata(result, op)["skipped"] == reason
        assert f"{op} on demo.orders skipped: {reason} (requested: launched by hand)" in logs, op
        [row] = ledger_rows(lake, op)
        assert (row["status"], row["skipped"]) == ("skipped", reason)
    assert [s.id for s in lake.catalog().get_table(TABLE).snapshots()] == snapshots  # untouched


@pytest.mark.dagster
def test_a_table_not_written_yet_is_a_skip_not_a_failure(tmp_path):
    lake = Lake((tmp_path / "wh").as_uri(), {}, tmp_path, lambda p, s: None, {})
    meta = metadata(materialize(lake.definitions(), "snapshot_expiry"), "snapshot_expiry")
    assert meta["skipped"] == "table demo.orders does not exist yet; materialize demo.orders first"


@pytest.mark.dagster
@pytest.mark.parametrize(
    "maintenance, words",
    [
        ({"tags": {"name_format": "nightly"}}, "field 'maintenance.tags.name_format'"),
        ({"tags": {"name_format": "d-%Y", "num_retained": 0}}, "field 'maintenance.tags.num_retained'"),
        ({"tags": {"name_format": "d-%Y", "time_retained": "a while"}}, "field 'maintenance.tags.time_retained'"),
        ({"orphan_cleanup": {"older_than": "10 min"}}, "field 'maintenance.orphan_cleanup.older_than'"),
        ({"orphan_cleanup": {"dry_run": "maybe"}}, "field 'maintenance.orphan_cleanup.dry_run'"),
    ],
)
def test_policy_errors_name_the_table_and_field(tmp_path, maintenance, words):
    lake = Lake(tmp_path.as_uri(), {}, tmp_path, lambda p, s: None, {})
    with pytest.raises(TablesConfigError) as info:
        load_tables_config(lake.write_config(maintenance))
    assert f"table 'demo.orders': {words}" in str(info.value)


@pytest.mark.dagster
def test_run_config_errors_name_the_table_and_field(tmp_path):
    lake = Lake((tmp_path / "wh").as_uri(), {}, tmp_path, lambda p, s: None, {})
    definitions = lake.definitions()
    for op, config, *words in (
        ("snapshot_expiry", {"time_retained": "soon"}, "field 'time_retained'"),
        ("snapshot_expiry", {"retain_min": 50, "retain_max": 5}, "retain_min (50) must be <= retain_max (5)"),
        ("orphan_cleanup", {"older_than": "5 min"}, "field 'older_than'", "'5 min' is below the 1 h safety floor"),
    ):
        result = materialize(definitions, op, config, raise_on_error=False)
        [failure] = [e for e in result.all_events if e.is_step_failure]
        error = failure.step_failure_data.error
        message = (error.cause or error).message
        assert "MaintenanceConfigError" in (error.cause or error).cls_name
        assert f"table 'demo.orders': {op} run config" in message and all(w in message for w in words), message
    # a value outside Dagster's own config schema is refused before the run starts, naming the operation
    # (one op over all tables: the config applies to every table the run selects) and the field
    with pytest.raises(dg.DagsterInvalidConfigError) as info:
        materialize(definitions, "manifest_compaction", {"mode": "major"})
    assert "lake_maintenance__manifest_compaction" in str(info.value) and "mode" in str(info.value)
    assert MaintenanceConfigError.__mro__[1].__name__ == "LakeError"


# -- the ledger -----------------------------------------------------------------------------------------
@pytest.mark.dagster
def test_the_ledger_holds_one_row_per_run_and_a_retry_does_not_duplicate(lake):
    seed(lake, 6)
    definitions = lake.definitions({"snapshot_expiry": {"retain_min": 1, "retain_max": 4}})
    first = materialize(definitions, "snapshot_expiry", tags={REASON_TAG: "snapshots: 7 > retain_max 4"})
    second = materialize(definitions, "snapshot_expiry")
    run_id = str(uuid.uuid4())
    for _ in range(2):  # a retried step: the same run id writes its row again
        materialize(definitions, "manifest_compaction", run_id=run_id)
    rows = read_ledger(lake.catalog()).to_pylist()  # a fresh catalog: what survives a Dagster restart
    assert [(r["run_id"], r["operation"]) for r in rows] == [
        (first.run_id, "snapshot_expiry"),
        (second.run_id, "snapshot_expiry"),
        (run_id, "manifest_compaction"),
    ]
    assert rows[0]["reason"] == "snapshots: 7 > retain_max 4" and rows[1]["reason"] == "launched by hand"
    assert rows[0]["table_name"] == TABLE and rows[0]["bytes_reclaimed"] > 0 and rows[0]["duration_s"] >= 0
    assert rows[1]["status"] == "skipped" and rows[1]["skipped"]
    assert rows[2]["status"] == "skipped" and rows[2]["skipped"] == "already compact"  # the retry found it done
    assert all(r["recorded_at"] is not None for r in rows)
    assert metadata(first, "snapshot_expiry")["reason"] == "snapshots: 7 > retain_max 4"
    # it is a Paimon primary-key table like any other
    ledger = lake.catalog().get_table(LEDGER_TABLE)
    assert list(ledger.schema.primary_keys) == ["run_id", "table_name", "operation"]
