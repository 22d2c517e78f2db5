"""The per-table snapshot sensor on a real Dagster instance against real lake tables."""
from __future__ import annotations

import dagster as dg
import pytest

from lake_core import Catalog
from lake_core.demo_source import ORDERS_SCHEMA, orders
from orchestration.config import load_tables_config
from orchestration.definitions import build_definitions

pytestmark = pytest.mark.dagster

SENSOR = "demo__orders__snapshot_sensor"
OP = "demo__orders_by_day"


@pytest.fixture
def pipeline(warehouse, write_tables_config):
    defs = build_definitions(load_tables_config(write_tables_config(warehouse)))
    return defs, defs.resolve_sensor_def(SENSOR)


def _tick(sensor, instance, lake, cursor):
    ctx = dg.build_sensor_context(instance=instance, cursor=cursor, resources={"lake": lake})
    result = sensor(ctx)
    assert isinstance(result, dg.SensorResult)
    return result, result.cursor


def _orders_table(warehouse):
    catalog = Catalog(warehouse)
    catalog.create_database("demo", ignore_if_exists=True)
    return catalog.create_table("demo.orders", schema=ORDERS_SCHEMA, primary_keys=["dt", "order_id"],
                                partition_keys=["dt"], options={"bucket": "2", "rowkind.field": "op"})


def test_skip_request_and_no_duplicate(pipeline, warehouse):
    defs, sensor = pipeline
    lake = defs.resources["lake"]
    assert sensor.job_name == "demo__orders__downstream"
    source = orders(orders_per_batch=20)
    with dg.DagsterInstance.ephemeral() as instance:
        # No table yet, then an empty table: skip, cursor unchanged.
        result, cursor = _tick(sensor, instance, lake, None)
        assert not result.run_requests and "does not exist" in result.skip_reason.skip_message and cursor is None
        table = _orders_table(warehouse)
        result, cursor = _tick(sensor, instance, lake, None)
        assert not result.run_requests and "no snapshot" in result.skip_reason.skip_message

        # First snapshot: one request, keyed table:snapshot, pinned to that snapshot.
        table.write_arrow(source.batch(0))
        result, cursor = _tick(sensor, instance, lake, None)
        [request] = result.run_requests
        assert request.run_key == "demo.orders:1"
        assert request.run_config == {"ops": {OP: {"config": {"snapshot_id": 1}}}}
        assert request.tags["lake/snapshot"] == "1" and request.tags["lake/table"] == "demo.orders"
        assert cursor == "1"

        # Same snapshot again: skipped, no duplicate request.
        result, cursor = _tick(sensor, instance, lake, cursor)
        assert not result.run_requests and "no new snapshot of demo.orders since 1" in result.skip_reason.skip_message
        assert cursor == "1"

        # Two new snapshots between ticks: one request per snapshot, oldest first.
        table.write_arrow(source.batch(1))
        table.write_arrow(source.batch(2))
        result, cursor = _tick(sensor, instance, lake, cursor)
        assert [r.run_key for r in result.run_requests] == ["demo.orders:2", "demo.orders:3"]
        assert [r.run_config["ops"][OP]["config"]["snapshot_id"] for r in result.run_requests] == [2, 3]
        assert cursor == "3"
        result, cursor = _tick(sensor, instance, lake, cursor)
        assert not result.run_requests and cursor == "3"


def test_first_tick_requests_only_the_newest_snapshot(pipeline, warehouse):
    """A derived table is rebuilt from a whole snapshot, so history is not replayed."""
    defs, sensor = pipeline
    table = _orders_table(warehouse)
    source = orders(orders_per_batch=20)
    for b in range(3):
        table.write_arrow(source.batch(b))
    with dg.DagsterInstance.ephemeral() as instance:
        result, cursor = _tick(sensor, instance, defs.resources["lake"], None)
    assert [r.run_key for r in result.run_requests] == ["demo.orders:3"] and cursor == "3"


def test_sensor_definition_metadata(pipeline):
    defs, sensor = pipeline
    assert sensor.minimum_interval_seconds == 5
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING
    job = defs.resolve_job_def("demo__orders__downstream")
    assert job.tags["lake/table"] == "demo.orders"
