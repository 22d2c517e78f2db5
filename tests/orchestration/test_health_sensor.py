"""Policies that explain themselves: the lake's health sensor, the policy's cron automation, the
lake_health view, the health checks and the snapshot leases, on a real Dagster instance against real
lake tables (local disk, one S3 case)."""

from __future__ import annotations

import datetime as dt
import re
import time
import uuid
from collections import Counter
from pathlib import Path

import dagster as dg
import pyarrow.compute as pc
import pytest

from fixtures.tables_config import demo_orders_by_day, demo_orders_table
from lake_core import Catalog
from orchestration.config import parse_tables_config
from orchestration.definitions import build_definitions
from orchestration.defs import maintenance as maintenance_mod
from orchestration.defs.automation import scheduled_condition
from orchestration.defs.leases import LEASE_TAG, lease_holder, sweep_leases
from orchestration.defs.naming import LAKE_HEALTH_ASSET, maintenance_asset_key, table_asset_key, table_group
from orchestration.defs.resources import LakeCatalogResource
from orchestration.demo.source import ORDERS_SCHEMA, orders

pytestmark = pytest.mark.dagster

NAME = "demo.orders"
HEALTH = "lake__health_sensor"
SNAPSHOTS = "lake__snapshot_sensor"
OPTIONS = {"bucket": "2", "rowkind.field": "op", "write-only": "true"}  # write-only: every write adds L0 files


# -- maintenance assets standing in for the ones other branches build: real operations ------------
def _op_asset(operation: str, run):
    def build(table):
        @dg.asset(
            key=maintenance_asset_key(table.name, operation),
            deps=[table_asset_key(table.name)],
            group_name=table_group(table.name),
            automation_condition=scheduled_condition(table, operation),
        )
        def _asset(lake: LakeCatalogResource) -> dg.MaterializeResult:
            result = run(lake.catalog().get_table(table.name))
            return dg.MaterializeResult(metadata={k: v for k, v in result.as_metadata().items() if v is not None})

        return _asset

    return build


@pytest.fixture
def with_maintenance_assets(monkeypatch):
    for op, run in {
        "compaction": lambda t: t.maintenance.compact(full=True),
        "manifest_compaction": lambda t: t.maintenance.compact_manifest(),
        "snapshot_expiry": lambda t: t.maintenance.expire_snapshots(retain_min=1, older_than=dt.timedelta(0)),
        "orphan_cleanup": lambda t: t.maintenance.remove_orphan_files(dry_run=True),
    }.items():
        monkeypatch.setitem(maintenance_mod.MAINTENANCE_ASSETS, op, _op_asset(op, run))


def _definitions(
    warehouse: str, maintenance: dict | None = None, downstream: bool = False, sensor=None, **warehouse_extra
):
    raw = {
        "warehouse": {"uri": warehouse, **warehouse_extra},
        "tables": [
            demo_orders_table(
                options=dict(OPTIONS), maintenance=maintenance or {}, **({"sensor": sensor} if sensor else {})
            )
        ],
        "downstream": [demo_orders_by_day()] if downstream else [],
    }
    return build_definitions(parse_tables_config(raw))


def _table(warehouse: str, storage_options=None):
    catalog = Catalog(warehouse, storage_options) if storage_options else Catalog(warehouse)
    catalog.create_database("demo", ignore_if_exists=True)
    return catalog.create_table(
        NAME, schema=ORDERS_SCHEMA, primary_keys=["dt", "order_id"], partition_keys=["dt"], options=OPTIONS
    )


def _tick(defs, instance, name=HEALTH, cursor=None):
    ctx = dg.build_sensor_context(
        instance=instance, cursor=cursor, resources={"lake": defs.resources["lake"]}, definitions=defs
    )
    return defs.resolve_sensor_def(name)(ctx)


def _skip_text(result) -> str:
    if isinstance(result, dg.SkipReason):
        return result.skip_message
    assert isinstance(result, dg.SensorResult) and not result.run_requests, result
    return result.skip_reason.skip_message


def _files_per_bucket(table) -> Counter:
    """Oracle: data files per bucket directory on disk (all live: write-only, nothing compacted)."""
    root = Path(table.paths.root.removeprefix("file://"))
    return Counter(re.search(r"(dt=[^/]+/bucket-\d+)$", str(p.parent)).group(1) for p in root.rglob("data-*"))


def test_health_sensor_requests_compaction_with_its_reason_then_skips(warehouse, with_maintenance_assets):
    defs = _definitions(warehouse)
    with dg.DagsterInstance.ephemeral() as instance:
        assert _skip_text(_tick(defs, instance)).startswith(f"table {NAME} cannot be opened yet: database 'demo' does")
        table = _table(warehouse)
        batch = orders(orders_per_batch=30).batch(0)
        for _ in range(4):
            table.write_arrow(batch)
        text = _skip_text(_tick(defs, instance))
        assert "compaction: max 4 sorted runs <= 5" in text and "manifest_compaction: 4 manifests <= 30" in text
        assert "record_expiry: no record_expiry rule in the policy" in text

        for _ in range(3):
            table.write_arrow(batch)
        files = _files_per_bucket(table)
        worst = min(files, key=lambda loc: (-files[loc], loc))
        over = sum(1 for n in files.values() if n > 5)
        expected = f"compaction: {worst} has {files[worst]} sorted runs > 5" + (
            f" (and {over - 1} more bucket{'s' if over > 2 else ''})" if over > 1 else ""
        )
        result = _tick(defs, instance)
        (request,) = result.run_requests
        assert request.tags["lake/reason"] == expected and files[worst] == 7
        assert request.tags["lake/operation"] == "compaction" and request.tags["lake/trigger"] == "health_sensor"
        assert request.asset_selection == [maintenance_asset_key(NAME, "compaction")]
        assert request.run_key.startswith(f"{NAME}:compaction:7@")
        assert _tick(defs, instance).run_requests[0].run_key == request.run_key  # same state, same key

        # A compaction run already in progress: not requested again, and the tick says why.
        busy = dg.DagsterRun(
            job_name="__ASSET_JOB",
            run_id=uuid.uuid4().hex,
            status=dg.DagsterRunStatus.STARTED,
            tags={"lake/table": NAME, "lake/operation": "compaction"},
        )
        instance.add_run(busy)
        text = _skip_text(_tick(defs, instance))
        assert f"{expected} — due, but run {busy.run_id[:8]} is already STARTED" in text
        instance.report_run_canceled(busy)

        # The requested run, executed: the table is compacted and the next tick skips with the figures.
        before = table.to_arrow()
        dg.materialize(
            [defs.resolve_assets_def(maintenance_asset_key(NAME, "compaction"))], instance=instance, tags=request.tags
        )
        text = _skip_text(_tick(defs, instance))
        assert "compaction: max 1 sorted runs <= 5" in text, text
        assert table.to_arrow().sort_by("order_id").equals(before.sort_by("order_id"))


def _failed(instance, request, status=dg.DagsterRunStatus.FAILURE) -> dg.DagsterRun:
    """A run of ``request`` that ended in ``status`` (as the run launcher records it)."""
    run = dg.DagsterRun(
        job_name="__ASSET_JOB",
        run_id=uuid.uuid4().hex,
        status=status,
        tags={**request.tags, "dagster/run_key": request.run_key},
    )
    instance.add_run(run)
    return run


def test_a_failed_maintenance_run_is_retried_with_backoff_then_given_up(warehouse, with_maintenance_assets):
    defs = _definitions(warehouse, sensor={"failed_run_retries": 1, "retry_backoff": "2 s"})
    with dg.DagsterInstance.ephemeral() as instance:
        table = _table(warehouse)
        for _ in range(7):
            table.write_arrow(orders(orders_per_batch=30).batch(0))
        (first,) = _tick(defs, instance).run_requests
        assert first.run_key.startswith(f"{NAME}:compaction:7@") and "#" not in first.run_key
        failed = _failed(instance, first)
        # Same table state, the run failed: wait the backoff, then request it again under a new key.
        text = _skip_text(_tick(defs, instance))
        assert f"run {failed.run_id[:8]} for snapshot 7 FAILURE; retry 1 of 1 in " in text, text
        time.sleep(2.2)
        (retry,) = _tick(defs, instance).run_requests
        assert retry.run_key == f"{first.run_key}#retry-1"
        assert (
            retry.tags["lake/health_state"] == first.run_key and retry.tags["lake/reason"] == first.tags["lake/reason"]
        )
        # The retry was canceled too: retries are spent, the sensor waits for the table to change.
        _failed(instance, retry, dg.DagsterRunStatus.CANCELED)
        time.sleep(2.2)
        text = _skip_text(_tick(defs, instance))
        assert "2 runs for snapshot 7 failed" in text and "retries spent (sensor.failed_run_retries = 1)" in text
        # A new commit is a new state: requested at once.
        table.write_arrow(orders(orders_per_batch=30).batch(1))
        (fresh,) = _tick(defs, instance).run_requests
        assert fresh.run_key.startswith(f"{NAME}:compaction:8@")


def test_health_sensor_explains_a_due_operation_without_an_asset(warehouse, monkeypatch):
    """Without the maintenance assets (none in this code location), a due operation is reported."""
    monkeypatch.setattr(maintenance_mod, "MAINTENANCE_ASSETS", {})
    defs = _definitions(warehouse, {"compaction": {"max_sorted_runs": 1}})
    table = _table(warehouse)
    for _ in range(2):
        table.write_arrow(orders(orders_per_batch=10).batch(0))
    with dg.DagsterInstance.ephemeral() as instance:
        text = _skip_text(_tick(defs, instance))
    assert (
        "has 2 sorted runs > 1 (and 1 more bucket) — due, but this code location has no 'compaction' asset for demo.orders"
        in text
    )


def test_manifest_compaction_requested_over_the_policy_limit(warehouse, with_maintenance_assets):
    defs = _definitions(warehouse, {"manifest_compaction": {"max_manifests": 3}, "compaction": {"max_sorted_runs": 50}})
    table = _table(warehouse)
    for b in range(4):
        table.write_arrow(orders(orders_per_batch=10).batch(b))
    with dg.DagsterInstance.ephemeral() as instance:
        result = _tick(defs, instance)
    (request,) = result.run_requests
    manifests = len(table.manifest_store.data_manifests(table.latest_snapshot()))
    assert manifests > 3 and request.tags["lake/reason"] == f"manifest_compaction: {manifests} manifests > 3"


def test_time_based_operations_run_on_the_policy_cron(warehouse, with_maintenance_assets):
    """The policy's cron is an automation condition on each time-driven asset of the table (what the
    UI shows), evaluated by one automation sensor; a disabled operation gets none."""
    policy = {
        "cron": "0 3 * * *",
        "snapshot_expiry": {"retain_min": 2, "retain_max": 5},
        "orphan_cleanup": {"enabled": False},
    }
    defs = _definitions(warehouse, policy)
    graph = defs.resolve_asset_graph()
    expiry = maintenance_asset_key(NAME, "snapshot_expiry")
    assert graph.get(expiry).automation_condition.get_label() == "maintenance.cron 0 3 * * *"
    assert graph.get(maintenance_asset_key(NAME, "orphan_cleanup")).automation_condition is None  # disabled
    assert graph.get(maintenance_asset_key(NAME, "compaction")).automation_condition is None  # the health sensor's
    sensor = defs.resolve_sensor_def("lake__maintenance_automation")
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING
    assert not defs.schedules  # no schedule per table any more
    _table(warehouse).write_arrow(orders(orders_per_batch=5).batch(0))
    with dg.DagsterInstance.ephemeral() as instance:
        before = dt.datetime(2026, 11, 24, 2, 59, tzinfo=dt.UTC)
        first = dg.evaluate_automation_conditions(defs=defs, instance=instance, evaluation_time=before)
        assert first.total_requested == 0
        after = dt.datetime(2026, 11, 24, 3, 1, tzinfo=dt.UTC)
        tick = dg.evaluate_automation_conditions(
            defs=defs, instance=instance, evaluation_time=after, cursor=first.cursor
        )
        assert tick.total_requested == 1 and tick.get_num_requested(expiry) == 1
        later = dt.datetime(2026, 11, 24, 3, 2, tzinfo=dt.UTC)  # the same cron tick is handled once
        again = dg.evaluate_automation_conditions(
            defs=defs, instance=instance, evaluation_time=later, cursor=tick.cursor
        )
        assert again.total_requested == 0


def test_the_health_sensor_reports_the_lake_health_view(warehouse, with_maintenance_assets):
    """Every table's figures, its due operations and last maintenance in one table, plus lake-wide numbers."""
    defs = _definitions(warehouse)
    table = _table(warehouse)
    for _ in range(3):
        table.write_arrow(orders(orders_per_batch=30).batch(0))
    with dg.DagsterInstance.ephemeral() as instance:
        result = _tick(defs, instance)
        (event,) = result.asset_events
        assert event.asset_key == LAKE_HEALTH_ASSET
        meta = {k: v.value for k, v in event.metadata.items()}
        (row,) = meta["tables"].records
        health = table.maintenance.health()
        assert row.data["table"] == NAME and row.data["snapshot"] == 3 and row.data["snapshots"] == 3
        assert row.data["max_sorted_runs"] == health.max_sorted_runs == 3
        assert row.data["oldest_snapshot"] == 1 and row.data["due"] == "-"
        assert meta["table_count"] == 1 and meta["max_sorted_runs"] == 3 and meta["tables_needing_maintenance"] == 0
        # Unchanged: nothing read, nothing reported.
        quiet = _tick(defs, instance, cursor=result.cursor)
        assert not quiet.asset_events and "1 unchanged" in _skip_text(quiet)
        # A new commit: the table is read again and the view reported with its new row.
        table.write_arrow(orders(orders_per_batch=30).batch(1))
        moved = _tick(defs, instance, cursor=quiet.cursor)
        (event,) = moved.asset_events
        assert event.metadata["tables"].value.records[0].data["snapshot"] == 4
        # The asset itself reads every table afresh, with the last maintenance from the ledger.
        from orchestration.defs import ledger

        ledger.record(defs.resources["lake"], table=NAME, operation="compaction", run_id="r1", skipped="nothing")
        done = dg.materialize([defs.resolve_assets_def(LAKE_HEALTH_ASSET)], instance=instance)
        (mat,) = done.asset_materializations_for_node("lake__lake_health")
        (row,) = mat.metadata["tables"].value.records
        assert row.data["last_maintenance"] == "compaction" and row.data["last_result"] == "skipped: nothing"


def test_health_checks_warn_on_shaped_tables_and_pass_after_maintenance(warehouse, with_maintenance_assets):
    policy = {"snapshot_expiry": {"retain_min": 1, "retain_max": 6}, "health": {"max_bucket_skew": 1.5}}
    defs = _definitions(warehouse, policy)
    table = _table(warehouse)
    batch = orders(orders_per_batch=40).batch(0)
    for _ in range(7):  # many level-0 files and many snapshots
        table.write_arrow(batch)
    # skew: a second day holding only the keys of one bucket (chosen by the table: read from its files)
    root = Path(table.paths.root.removeprefix("file://"))
    one_bucket = next(root.glob("dt=*/bucket-0"))
    import pyarrow.parquet as pq

    ids = pc.unique(pq.read_table(next(one_bucket.glob("data-*")), columns=["order_id"]).column("order_id"))
    skewed = batch.filter(pc.is_in(batch["order_id"], ids)).set_column(
        0,
        "dt",
        pc.cast(
            pc.binary_join_element_wise(batch.filter(pc.is_in(batch["order_id"], ids))["dt"], "x", ""),
            ORDERS_SCHEMA.field("dt").type,
        ),
    )
    table.write_arrow(skewed.cast(ORDERS_SCHEMA))
    checks = next(c for c in defs.asset_checks if c.node_def.name.endswith("health_checks"))

    def evaluate():
        with dg.DagsterInstance.ephemeral() as instance:
            res = dg.materialize(
                [checks],
                instance=instance,
                resources={"lake": defs.resources["lake"]},
                selection=dg.AssetSelection.all_asset_checks(),
            )
        return {e.check_name: e for e in res.get_asset_check_evaluations()}

    got = evaluate()
    assert {n: e.passed for n, e in got.items()} == {
        "sorted_runs": False,
        "small_files": True,
        "snapshot_count": False,
        "manifest_count": True,
        "ttl_lag": True,
        "bucket_skew": False,
    }
    assert all(e.severity == dg.AssetCheckSeverity.WARN for e in got.values())
    meta = {n: {k: v.value for k, v in e.metadata.items()} for n, e in got.items()}
    assert meta["sorted_runs"]["value"] == 7 and meta["sorted_runs"]["threshold"] == 5
    assert meta["snapshot_count"]["value"] == 8 and meta["snapshot_count"]["threshold"] == 6
    assert meta["bucket_skew"]["value"] == 2.0 and meta["bucket_skew"]["threshold"] == 1.5
    assert meta["bucket_skew"]["where"].endswith("x")  # the one-bucket day

    table.maintenance.compact(full=True)
    table.maintenance.expire_snapshots(retain_min=1, older_than=dt.timedelta(0))
    got = evaluate()
    assert got["sorted_runs"].passed and got["snapshot_count"].passed and not got["bucket_skew"].passed


# -- leases ----------------------------------------------------------------------------------------
def _read_snapshot_job(warehouse: str, fail: bool = False):
    """A downstream run as the derived job does it: read the requested snapshot of the source."""

    @dg.op(config_schema={"snapshot_id": int})
    def read_snapshot(context):
        rows = Catalog(warehouse).get_table(NAME).to_arrow(snapshot_id=context.op_config["snapshot_id"]).num_rows
        if fail:
            raise RuntimeError("the transform failed")
        return rows

    @dg.job(name="demo__orders__downstream")
    def downstream():
        read_snapshot()

    return downstream


def _run_and_release(defs, instance, warehouse, request, *, fail: bool):
    sid = int(request.tags["lake/snapshot"])
    result = _read_snapshot_job(warehouse, fail).execute_in_process(
        instance=instance,
        tags=request.tags,
        raise_on_error=False,
        run_config={"ops": {"read_snapshot": {"config": {"snapshot_id": sid}}}},
    )
    assert result.success is not fail
    kind = dg.DagsterEventType.RUN_FAILURE if fail else dg.DagsterEventType.RUN_SUCCESS
    event = instance.all_logs(result.run_id, of_type=kind)[0].dagster_event
    name = f"downstream__lease_release_on_{'failure' if fail else 'success'}"
    ctx = dg.build_run_status_sensor_context(
        sensor_name=name,
        dagster_event=event,
        dagster_instance=instance,
        dagster_run=instance.get_run_by_id(result.run_id),
        resources={"lake": defs.resources["lake"]},
    )
    return defs.resolve_sensor_def(name)(ctx)


@pytest.mark.parametrize("fail", [False, True], ids=["run succeeds", "run fails"])
def test_a_pending_downstream_run_pins_its_snapshot_until_it_finishes(warehouse, fail):
    defs = _definitions(warehouse, downstream=True)
    table = _table(warehouse)
    source = orders(orders_per_batch=10)
    table.write_arrow(source.batch(0))
    with dg.DagsterInstance.ephemeral() as instance:
        (request,) = _tick(defs, instance, SNAPSHOTS).run_requests
        lease_id = request.tags[LEASE_TAG]
        assert table.maintenance.consumers.get(lease_id) == 1
        expected = table.to_arrow(snapshot_id=1)
        # The run is pending while the table moves on and expiry runs as hard as it can.
        for b in range(1, 5):
            table.write_arrow(source.batch(b))
        res = table.maintenance.expire_snapshots(retain_min=1, older_than=dt.timedelta(0))
        assert 1 not in res.expired_snapshots and table.snapshot_manager.earliest_id() == 1
        assert table.to_arrow(snapshot_id=1).equals(expected)
        # The run finishes; its run-status sensor releases the lease; expiry may now delete snapshot 1.
        reason = _run_and_release(defs, instance, warehouse, request, fail=fail)
        assert f"{lease_id} on snapshot 1 of {NAME} released" in reason.skip_message
        assert table.maintenance.consumers.get(lease_id) is None
        assert 1 in table.maintenance.expire_snapshots(retain_min=1, older_than=dt.timedelta(0)).expired_snapshots


def test_leases_of_canceled_or_vanished_runs_are_swept(warehouse):
    defs = _definitions(warehouse, downstream=True)
    table = _table(warehouse)
    source = orders(orders_per_batch=10)
    table.write_arrow(source.batch(0))
    with dg.DagsterInstance.ephemeral() as instance:
        result = _tick(defs, instance, SNAPSHOTS)
        (vanished,) = result.run_requests  # requested, but its run never appears
        table.write_arrow(source.batch(1))
        (canceled,) = _tick(defs, instance, SNAPSHOTS, result.cursor).run_requests
        run = dg.DagsterRun(
            job_name="demo__orders__downstream",
            run_id=uuid.uuid4().hex,
            status=dg.DagsterRunStatus.CANCELED,
            tags=canceled.tags,
        )
        instance.add_run(run)
        ids = {vanished.tags[LEASE_TAG], canceled.tags[LEASE_TAG]}
        assert {c.consumer_id for c in table.maintenance.consumers.consumers()} == ids
        notes = sweep_leases(instance, table, ttl_s=12 * 3600)  # fresh: the vanished one may still appear
        assert notes == [f"released {canceled.tags[LEASE_TAG]} on snapshot 2: run {run.run_id[:8]} is CANCELED"]
        later = int(time.time() * 1000) + 700_000
        (note,) = sweep_leases(instance, table, ttl_s=12 * 3600, now_ms=later)
        assert note.startswith(f"released {vanished.tags[LEASE_TAG]} on snapshot 1: no run carries it after")
        assert table.maintenance.consumers.consumers() == []


def test_another_dagster_instance_does_not_sweep_our_leases(warehouse):
    defs = _definitions(warehouse, downstream=True)
    table = _table(warehouse)
    table.write_arrow(orders(orders_per_batch=10).batch(0))
    with dg.DagsterInstance.ephemeral() as ours, dg.DagsterInstance.ephemeral() as theirs:
        (request,) = _tick(defs, ours, SNAPSHOTS).run_requests
        lease_id = request.tags[LEASE_TAG]
        assert lease_holder(ours) in lease_id and lease_holder(ours) != lease_holder(theirs)
        later = int(time.time() * 1000) + 700_000  # long past the "vanished request" grace period
        # The other deployment cannot see our run, so it must not take its missing run as vanished.
        assert sweep_leases(theirs, table, ttl_s=12 * 3600, now_ms=later) == []
        assert table.maintenance.consumers.get(lease_id) == 1
        (note,) = sweep_leases(ours, table, ttl_s=12 * 3600, now_ms=later)
        assert note.startswith(f"released {lease_id} on snapshot 1: no run carries it after")


@pytest.mark.s3
def test_health_sensor_and_lease_on_s3(s3_warehouse, monkeypatch, with_maintenance_assets):
    s3 = {
        "endpoint_url_env": "TEST_LAKE_S3_ENDPOINT",
        "access_key_env": "TEST_LAKE_S3_KEY",
        "secret_key_env": "TEST_LAKE_S3_SECRET",
        "region": "us-east-1",
        "path_style": True,
    }
    opts = s3_warehouse.storage_options
    monkeypatch.setenv("TEST_LAKE_S3_ENDPOINT", opts["endpoint_url"])
    monkeypatch.setenv("TEST_LAKE_S3_KEY", opts["key"])
    monkeypatch.setenv("TEST_LAKE_S3_SECRET", opts["secret"])
    defs = _definitions(s3_warehouse.uri, {"compaction": {"max_sorted_runs": 2}}, downstream=True, s3=s3)
    table = _table(s3_warehouse.uri, opts)
    batch = orders(orders_per_batch=10).batch(0)
    for _ in range(3):
        table.write_arrow(batch)
    with dg.DagsterInstance.ephemeral() as instance:
        (request,) = _tick(defs, instance).run_requests
        assert re.fullmatch(
            r"compaction: dt=[0-9-]+/bucket-\d has 3 sorted runs > 2( \(and 1 more bucket\))?",
            request.tags["lake/reason"],
        )
        (downstream,) = _tick(defs, instance, SNAPSHOTS).run_requests
        assert table.maintenance.consumers.get(downstream.tags[LEASE_TAG]) == 3
