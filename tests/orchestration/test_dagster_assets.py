"""The code location's definitions and its assets, materialized for real (Spark + lake_core)."""

from __future__ import annotations

import uuid

import dagster as dg
import pytest
import yaml

from lake_core import Catalog
from orchestration.config import load_tables_config
from orchestration.definitions import build_definitions
from orchestration.definitions import defs as lazy_defs
from orchestration.defs.naming import LAKE_HEALTH_ASSET
from orchestration.defs.storage import StorageAccessError
from orchestration.demo.source import orders

ORDERS = dg.AssetKey(["demo", "orders"])
BY_DAY = dg.AssetKey(["demo", "orders_by_day"])
# every maintenance operation of the demo table's policy (tables.yaml), one asset each
MAINTENANCE = {
    dg.AssetKey(["demo", "orders", op])
    for op in (
        "compaction",
        "record_expiry",
        "manifest_compaction",
        "snapshot_expiry",
        "partition_expiry",
        "orphan_cleanup",
        "rescale",
    )
}


def _metadata(result: dg.ExecuteInProcessResult, key: dg.AssetKey) -> dict:
    [event] = result.asset_materializations_for_node(key.to_python_identifier())
    return {k: v.value for k, v in event.metadata.items()}


def _by_day(warehouse: str, storage_options: dict | None = None) -> dict:
    rows = Catalog(warehouse, storage_options=storage_options).get_table("demo.orders_by_day").to_arrow().to_pylist()
    return {r["dt"]: (r["orders"], r["cancelled"], r["revenue"]) for r in rows}


def _reference_by_day(snapshot_batches: int) -> dict:
    out: dict = {}
    for r in orders().expected(snapshot_batches).to_pylist():
        n, c, rev = out.get(r["dt"], (0, 0, 0))
        live = r["status"] != "cancelled"
        out[r["dt"]] = (n + 1, c + (not live), rev + (r["amount"] if live else 0))
    return out


@pytest.mark.dagster
def test_the_code_location_loads():
    definitions = lazy_defs()
    dg.Definitions.validate_loadable(definitions)
    assert set(definitions.resolve_all_asset_keys()) == {ORDERS, BY_DAY, *MAINTENANCE, LAKE_HEALTH_ASSET}
    # One sensor of each kind for all tables; the policy's cron is automation on the time-driven assets.
    assert {s.name for s in definitions.sensors} == {
        "lake__snapshot_sensor",
        "lake__partitions_sensor",
        "lake__health_sensor",
        "lake__maintenance_automation",
        "downstream__lease_release_on_success",
        "downstream__lease_release_on_failure",
        "downstream__lease_release_on_canceled",
    }
    assert set(definitions.resources) == {"lake", "spark"}
    graph = definitions.resolve_asset_graph()
    assert graph.get(BY_DAY).parent_keys == {ORDERS}
    assert graph.get(ORDERS).pools == {"lake_table_demo__orders"}
    # One asset group per table: the table's asset, later its maintenance assets, and its checks.
    assert (graph.get(ORDERS).group_name, graph.get(BY_DAY).group_name) == ("demo__orders", "demo__orders_by_day")
    assert {k.name for k in graph.asset_check_keys if k.asset_key == ORDERS} == {
        "config_drift",
        "sorted_runs",
        "small_files",
        "snapshot_count",
        "manifest_count",
        "ttl_lag",
        "bucket_skew",
    }


@pytest.mark.spark
@pytest.mark.dagster
@pytest.mark.slow
def test_write_asset_materializes_with_commit_metadata(spark, warehouse, write_tables_config):
    definitions = build_definitions(load_tables_config(write_tables_config(warehouse)))
    write_asset = definitions.resolve_assets_def(ORDERS)
    with dg.DagsterInstance.ephemeral() as instance:
        first = dg.materialize([write_asset], instance=instance)
        second = dg.materialize([write_asset], instance=instance)
    m1, m2 = _metadata(first, ORDERS), _metadata(second, ORDERS)
    # change_rows: the commit's change records; table_rows: what a reader sees after merging.
    assert (m1["snapshot_id"], m1["batch"], m1["change_rows"]) == (1, 0, orders().batch(0).num_rows)
    assert (m2["snapshot_id"], m2["batch"], m2["change_rows"]) == (2, 1, orders().batch(1).num_rows)
    assert (m1["table_rows"], m2["table_rows"]) == (orders().expected(1).num_rows, orders().expected(2).num_rows)
    assert m2["dagster/row_count"] == m2["table_rows"] != m2["change_rows"]
    assert m1["files"] >= 1 and m1["bytes"] > 0 and m1["already_committed"] is False
    table = Catalog(warehouse).get_table("demo.orders")
    assert table.to_arrow().sort_by("order_id").equals(orders().expected(2).sort_by("order_id"))
    live = [f for s in table.new_read_builder().new_scan().plan().splits() for f in s.files]
    assert (m2["live_files"], m2["total_bytes"]) == (len(live), sum(f.file_size for f in live))
    assert m2["live_files"] == m1["files"] + m2["files"]


@pytest.mark.spark
@pytest.mark.dagster
@pytest.mark.slow
def test_a_rerun_of_the_same_run_does_not_commit_again(spark, warehouse, write_tables_config):
    definitions = build_definitions(load_tables_config(write_tables_config(warehouse)))
    job = definitions.resolve_implicit_global_asset_job_def()
    run_id = str(uuid.uuid4())
    # The same run id on two instances: what a re-execution of a run that had committed sees.
    for attempt in range(2):
        with dg.DagsterInstance.ephemeral() as instance:
            result = job.execute_in_process(instance=instance, run_id=run_id, asset_selection=[ORDERS])
        meta = _metadata(result, ORDERS)
        assert meta["snapshot_id"] == 1 and meta["batch"] == 0
        assert meta["already_committed"] is (attempt == 1)
        # The re-run reports what its commit wrote, not 0 rows.
        assert meta["change_rows"] == orders().batch(0).num_rows
        assert meta["table_rows"] == orders().expected(1).num_rows
    assert len(Catalog(warehouse).get_table("demo.orders").snapshots()) == 1


@pytest.mark.spark
@pytest.mark.dagster
@pytest.mark.slow
def test_sensor_request_runs_the_downstream_on_exactly_that_snapshot(spark, warehouse, write_tables_config):
    definitions = build_definitions(load_tables_config(write_tables_config(warehouse)))
    write_asset = definitions.resolve_assets_def(ORDERS)
    sensor = definitions.resolve_sensor_def("lake__snapshot_sensor")
    with dg.DagsterInstance.ephemeral() as instance:
        for _ in range(2):
            dg.materialize([write_asset], instance=instance)
        tick = sensor(dg.build_sensor_context(instance=instance, cursor=None, resources=definitions.resources))
        [request] = tick.run_requests
        assert request.run_key.startswith("demo.orders:2@") and request.tags["lake/snapshot"] == "2"
        dg.materialize([write_asset], instance=instance)  # snapshot 3 lands

        # The requested run, as the daemon would launch it: the downstream job with its run config.
        job = definitions.resolve_job_def(request.job_name)
        result = job.execute_in_process(run_config=request.run_config, tags=request.tags, instance=instance)
    meta = _metadata(result, BY_DAY)
    assert meta["source_snapshot_id"] == 2 and meta["snapshot_id"] == 1
    assert _by_day(warehouse) == _reference_by_day(2)  # snapshot 2, although 3 is the latest
    assert _by_day(warehouse) != _reference_by_day(3)


@pytest.mark.spark
@pytest.mark.dagster
@pytest.mark.s3
@pytest.mark.slow
def test_write_and_downstream_assets_on_s3(spark, s3_warehouse, write_tables_config, monkeypatch):
    """Credentials come from environment variables named in tables.yaml, read at run time."""
    path = write_tables_config(
        s3_warehouse.uri,
        s3={
            "endpoint_url_env": "TEST_LAKE_S3_ENDPOINT",
            "access_key_env": "TEST_LAKE_S3_KEY",
            "secret_key_env": "TEST_LAKE_S3_SECRET",
            "region": "us-east-1",
            "path_style": True,
        },
    )
    definitions = build_definitions(load_tables_config(path))  # no credentials needed to assemble
    opts = s3_warehouse.storage_options
    monkeypatch.setenv("TEST_LAKE_S3_ENDPOINT", opts["endpoint_url"])
    monkeypatch.setenv("TEST_LAKE_S3_KEY", opts["key"])
    monkeypatch.setenv("TEST_LAKE_S3_SECRET", opts["secret"])
    with dg.DagsterInstance.ephemeral() as instance:
        result = dg.materialize([definitions.resolve_assets_def(ORDERS)], instance=instance)
        down = dg.materialize(
            [definitions.resolve_assets_def(BY_DAY)],
            instance=instance,
            run_config={"ops": {"demo__orders_by_day": {"config": {"snapshot_id": 1}}}},
        )
    assert _metadata(result, ORDERS)["snapshot_id"] == 1
    assert _metadata(down, BY_DAY)["source_snapshot_id"] == 1
    assert _by_day(s3_warehouse.uri, opts) == _reference_by_day(1)


def _causes(error: BaseException | None):
    while error is not None:
        yield error
        error = error.__cause__ or error.__context__


def _drift_check(definitions: dg.Definitions):
    """The config_drift check of demo.orders, run alone (its op holds every table's)."""
    key = dg.AssetCheckKey(ORDERS, "config_drift")
    [check] = [c for c in definitions.asset_checks if key in set(c.check_keys)]

    def run(lake) -> dg.AssetCheckEvaluation:
        with dg.DagsterInstance.ephemeral() as instance:
            result = dg.materialize(
                [check], instance=instance, resources={"lake": lake}, selection=dg.AssetSelection.checks(key)
            )
        [evaluation] = result.get_asset_check_evaluations()
        return evaluation

    return run


@pytest.mark.dagster
def test_config_drift_is_reported_naming_option_config_and_table_values(warehouse, write_tables_config):
    """tables.yaml changed after the table was created: reported, and a new bucket count is a rescale."""
    from fixtures.tables_config import demo_orders_table
    from jobs.tables import TableSpec, ensure_table

    config = load_tables_config(write_tables_config(warehouse))
    spec = config.table("demo.orders")
    lake = build_definitions(config).resources["lake"]
    assert _drift_check(build_definitions(config))(lake=lake).passed  # no table yet: nothing to compare
    ensure_table(
        Catalog(warehouse),
        TableSpec(spec.name, spec.arrow_schema(), spec.primary_keys, spec.partition_keys, spec.options),
    )
    assert _drift_check(build_definitions(config))(lake=lake).passed

    changed = demo_orders_table(options={"bucket": 4, "rowkind.field": "op", "file.compression": "snappy"})
    path = write_tables_config(warehouse)
    raw = yaml.safe_load(path.read_text())
    raw["tables"] = [changed]
    path.write_text(yaml.safe_dump(raw))
    result = _drift_check(build_definitions(load_tables_config(path)))(lake=lake)
    assert not result.passed and result.severity == dg.AssetCheckSeverity.WARN
    lines = result.description.splitlines()
    assert (
        lines[0].startswith("demo.orders: bucket is '4' in tables.yaml but '2' on the table") and "rescale" in lines[0]
    )
    assert "file.compression is 'snappy' in tables.yaml but None on the table" in lines[1]
    assert result.metadata["needs_rescale"].value is True
    # The table itself is untouched by the config change.
    assert Catalog(warehouse).get_table("demo.orders").schema.options["bucket"] == "2"


@pytest.mark.dagster
@pytest.mark.s3
def test_storage_errors_name_bucket_endpoint_and_variables_before_spark(s3_server, write_tables_config, monkeypatch):
    s3 = {
        "endpoint_url_env": "TEST_LAKE_S3_ENDPOINT",
        "access_key_env": "TEST_LAKE_S3_KEY",
        "secret_key_env": "TEST_LAKE_S3_SECRET",
    }
    opts = s3_server.storage_options()
    monkeypatch.setenv("TEST_LAKE_S3_KEY", opts["key"])
    monkeypatch.setenv("TEST_LAKE_S3_SECRET", opts["secret"])
    cases = [  # (bucket, endpoint, what the message says)
        ("no-such-bucket", s3_server.endpoint_url, "does not exist"),
        ("any-bucket", "http://127.0.0.1:9", "cannot reach"),  # nothing listens on port 9
    ]
    for bucket, endpoint, words in cases:
        monkeypatch.setenv("TEST_LAKE_S3_ENDPOINT", endpoint)
        definitions = build_definitions(load_tables_config(write_tables_config(f"s3://{bucket}/wh", s3=s3)))
        with dg.build_resources({"lake": definitions.resources["lake"]}) as res:
            with pytest.raises(StorageAccessError) as info:
                res.lake.check_access()
        message = str(info.value)
        assert f"bucket '{bucket}'" in message and f"endpoint {endpoint}" in message and words in message, message
        assert all(f"${name}" in message for name in s3.values()), message
        assert len(message.splitlines()) == 1
        # The write asset fails the same way, in its first line of work, before any Spark session.
        with dg.DagsterInstance.ephemeral() as instance:
            result = dg.materialize([definitions.resolve_assets_def(ORDERS)], instance=instance, raise_on_error=False)
        [failure] = [e for e in result.all_events if e.is_step_failure]
        error = failure.step_failure_data.error
        assert error.cause.cls_name == "StorageAccessError" and f"bucket '{bucket}'" in error.cause.message
        if words == "cannot reach":  # a sensor tick that cannot read the table says why, too
            sensor = definitions.resolve_sensor_def("lake__snapshot_sensor")
            with dg.DagsterInstance.ephemeral() as instance, pytest.raises(Exception) as tick:
                sensor(dg.build_sensor_context(instance=instance, resources=definitions.resources))
            chain = list(_causes(tick.value))
            assert any(isinstance(e, StorageAccessError) and f"bucket '{bucket}'" in str(e) for e in chain), chain


@pytest.mark.dagster
def test_a_maintenance_operation_plugs_into_its_tables_group(warehouse, write_tables_config, monkeypatch):
    """The seam the maintenance assets use: a builder in MAINTENANCE_ASSETS, one asset per table."""
    from orchestration.defs import maintenance
    from orchestration.defs.naming import maintenance_asset_key, maintenance_pool, table_group

    def build(table):
        @dg.asset(
            key=maintenance_asset_key(table.name, "compaction"),
            deps=[dg.AssetKey(table.name.split("."))],
            group_name=table_group(table.name),
            pool=maintenance_pool(table.name),
        )
        def compaction() -> None:
            return None

        return compaction

    monkeypatch.setitem(maintenance.MAINTENANCE_ASSETS, "compaction", build)
    graph = build_definitions(load_tables_config(write_tables_config(warehouse))).resolve_asset_graph()
    node = graph.get(dg.AssetKey(["demo", "orders", "compaction"]))
    assert node.group_name == graph.get(ORDERS).group_name == "demo__orders"
    # Maintainers share one pool (one at a time); the writer is not in it (maintenance never blocks a write).
    assert node.parent_keys == {ORDERS} and node.pools == {"lake_maintenance"}
    assert not node.pools & graph.get(ORDERS).pools
    assert not graph.has(dg.AssetKey(["demo", "orders_by_day", "compaction"]))  # derived tables: not configured tables
