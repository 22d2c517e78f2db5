"""The lake's snapshot sensor (one for all tables) on a real Dagster instance against real lake tables."""

from __future__ import annotations

import dagster as dg
import pytest

from fixtures.tables_config import demo_orders_by_day, demo_orders_table
from lake_core import Catalog
from orchestration.config import load_tables_config, parse_tables_config
from orchestration.definitions import build_definitions
from orchestration.defs.sensors import COVERED_TAG, RANGE_TAG, SKIPPED_TAG, SensorCursor
from orchestration.defs.ticks import LakeCursor
from orchestration.demo.source import ORDERS_SCHEMA, orders

pytestmark = pytest.mark.dagster

SENSOR = "lake__snapshot_sensor"
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


def _entry(cursor: str | None) -> SensorCursor | None:
    """The table's entry of the lake-wide cursor."""
    return SensorCursor.decode(LakeCursor.decode(cursor).tables.get("demo.orders"))


def _seen(cursor: str | None) -> int | None:
    decoded = _entry(cursor)
    return decoded.snapshot_id if decoded else None


def _snapshots(result) -> list[int]:
    """Snapshot ids requested, checked three ways: run key, tag and pinned run config agree."""
    out = []
    for r in result.run_requests:
        sid = int(r.tags["lake/snapshot"])
        assert r.run_key.startswith(f"demo.orders:{sid}@") and r.tags["lake/table"] == "demo.orders"
        assert r.run_config == {"ops": {OP: {"config": {"snapshot_id": sid}}}}
        out.append(sid)
    return out


def _orders_table(warehouse, recreate: bool = False):
    catalog = Catalog(warehouse)
    catalog.create_database("demo", ignore_if_exists=True)
    if recreate:
        catalog.drop_table("demo.orders")
    return catalog.create_table(
        "demo.orders",
        schema=ORDERS_SCHEMA,
        primary_keys=["dt", "order_id"],
        partition_keys=["dt"],
        options={"bucket": "2", "rowkind.field": "op"},
    )


def test_skip_request_and_no_duplicate(pipeline, warehouse):
    defs, sensor = pipeline
    lake = defs.resources["lake"]
    assert sensor.job_name == "demo__orders__downstream"
    source = orders(orders_per_batch=20)
    with dg.DagsterInstance.ephemeral() as instance:
        # No table yet, then an empty table: skip, cursor unchanged.
        result, cursor = _tick(sensor, instance, lake, None)
        assert not result.run_requests and "does not exist" in result.skip_reason.skip_message and _seen(cursor) is None
        table = _orders_table(warehouse)
        result, cursor = _tick(sensor, instance, lake, None)
        assert not result.run_requests and "no snapshot" in result.skip_reason.skip_message

        # First snapshot: one request, keyed by table, snapshot and table identity, pinned to that snapshot.
        table.write_arrow(source.batch(0))
        result, cursor = _tick(sensor, instance, lake, None)
        assert _snapshots(result) == [1] and _seen(cursor) == 1
        first_key = result.run_requests[0].run_key

        # Same snapshot again: skipped, no duplicate request.
        result, cursor = _tick(sensor, instance, lake, cursor)
        assert not result.run_requests and "no new snapshot of demo.orders since 1" in result.skip_reason.skip_message
        assert _seen(cursor) == 1

        # Two new snapshots between ticks: one run covers both (the newest holds the older one), same identity.
        table.write_arrow(source.batch(1))
        table.write_arrow(source.batch(2))
        result, cursor = _tick(sensor, instance, lake, cursor)
        assert _snapshots(result) == [3] and _seen(cursor) == 3
        (request,) = result.run_requests
        assert request.tags[RANGE_TAG] == "2..3" and request.tags[COVERED_TAG] == "2"
        assert request.run_key.split("@")[1] == first_key.split("@")[1]
        result, cursor = _tick(sensor, instance, lake, cursor)
        assert not result.run_requests and _seen(cursor) == 3


def test_first_tick_requests_only_the_newest_snapshot(pipeline, warehouse):
    """A derived table is rebuilt from a whole snapshot, so history is not replayed."""
    defs, sensor = pipeline
    table = _orders_table(warehouse)
    source = orders(orders_per_batch=20)
    for b in range(3):
        table.write_arrow(source.batch(b))
    with dg.DagsterInstance.ephemeral() as instance:
        result, cursor = _tick(sensor, instance, defs.resources["lake"], None)
    assert _snapshots(result) == [3] and _seen(cursor) == 3


def test_a_recreated_table_resets_the_cursor_and_says_so(pipeline, warehouse):
    """Dropped and recreated: its snapshot ids start again at 1, which a bare-id cursor would skip forever."""
    defs, sensor = pipeline
    lake = defs.resources["lake"]
    source = orders(orders_per_batch=20)
    table = _orders_table(warehouse)
    for b in range(3):
        table.write_arrow(source.batch(b))
    with dg.DagsterInstance.ephemeral() as instance:
        result, cursor = _tick(sensor, instance, lake, None)
        old_key = result.run_requests[0].run_key
        assert _seen(cursor) == 3

        table = _orders_table(warehouse, recreate=True)
        result, cursor2 = _tick(sensor, instance, lake, cursor)
        assert not result.run_requests and "cursor reset" in result.skip_reason.skip_message
        assert "no snapshot yet" in result.skip_reason.skip_message
        table.write_arrow(source.batch(0))
        result, cursor2 = _tick(sensor, instance, lake, cursor2 or cursor)
        assert _snapshots(result) == [1] and _seen(cursor2) == 1
        assert result.run_requests[0].run_key != old_key.replace(":3@", ":1@")  # a new key: not deduplicated


def test_a_moved_warehouse_resets_the_cursor(pipeline, warehouse, tmp_path, write_tables_config):
    """The same table name in another warehouse (local → S3, say) is another table."""
    defs, sensor = pipeline
    source = orders(orders_per_batch=20)
    table = _orders_table(warehouse)
    table.write_arrow(source.batch(0))
    table.write_arrow(source.batch(1))
    other = (tmp_path / "other-warehouse").resolve()
    other.mkdir()
    moved = build_definitions(load_tables_config(write_tables_config(other.as_uri())))
    _orders_table(other.as_uri()).write_arrow(source.batch(0))
    with dg.DagsterInstance.ephemeral() as instance:
        _, cursor = _tick(sensor, instance, defs.resources["lake"], None)
        assert _seen(cursor) == 2
        ctx = dg.build_sensor_context(instance=instance, cursor=cursor, resources={"lake": moved.resources["lake"]})
        result = moved.resolve_sensor_def(SENSOR)(ctx)
    assert _snapshots(result) == [1] and _seen(result.cursor) == 1  # not "no new snapshot since 2"


def _count_reads(monkeypatch) -> list[str]:
    """The paths every FileIO read opens from now on (real files, counted on the way)."""
    from lake_core.io.fileio import FileIO

    read: list[str] = []

    def counting(real):
        def read_and_count(self, path, *args, **kwargs):
            read.append(str(path))
            return real(self, path, *args, **kwargs)

        return read_and_count

    for method in ("read_bytes", "read_text"):
        monkeypatch.setattr(FileIO, method, counting(getattr(FileIO, method)))
    return read


def test_a_tick_reads_only_the_snapshots_after_its_cursor(pipeline, warehouse, monkeypatch):
    """The LATEST hint and a walk back to the cursor: snapshot files before it are never opened."""
    defs, sensor = pipeline
    table = _orders_table(warehouse)
    source = orders(orders_per_batch=5)
    for b in range(12):
        table.write_arrow(source.batch(b))
    read = _count_reads(monkeypatch)
    cursor = _entry(_tick(sensor, dg.DagsterInstance.ephemeral(), defs.resources["lake"], None)[1])
    read.clear()
    with dg.DagsterInstance.ephemeral() as instance:
        back = LakeCursor({"demo.orders": SensorCursor(cursor.identity, 9).entry()}).encode()
        result, _ = _tick(sensor, instance, defs.resources["lake"], back)
    assert _snapshots(result) == [12] and result.run_requests[0].tags[RANGE_TAG] == "10..12"
    opened = sorted({int(p.rsplit("snapshot-", 1)[1]) for p in read if "/snapshot/snapshot-" in p})
    assert opened == [12], opened  # the newest one changed rows: it covers 10 and 11, none older is read


def test_an_unchanged_table_costs_one_hint_read(pipeline, warehouse, monkeypatch):
    """Once its run's lease is released, an unchanged table is skipped on its LATEST hint alone."""
    defs, sensor = pipeline
    lake = defs.resources["lake"]
    table = _orders_table(warehouse)
    table.write_arrow(orders(orders_per_batch=5).batch(0))
    with dg.DagsterInstance.ephemeral() as instance:
        result, cursor = _tick(sensor, instance, lake, None)
        (request,) = result.run_requests
        table.maintenance.release_lease(consumer_id=request.tags["lake/lease"])
        result, cursor = _tick(sensor, instance, lake, cursor)  # sees the lease gone
        assert "leases" not in LakeCursor.decode(cursor).tables["demo.orders"]
        read = _count_reads(monkeypatch)
        result, _ = _tick(sensor, instance, lake, cursor)
    assert not result.run_requests and "1 unchanged" in result.skip_reason.skip_message
    assert {p.rsplit("/", 2)[-2] + "/" + p.rsplit("/", 1)[-1] for p in read} == {"snapshot/LATEST"}, read


def test_a_tick_over_budget_carries_the_rest_round_robin(tmp_path, warehouse, monkeypatch):
    """Tables not reached within the tick budget are visited first by the next tick, and the tick says so."""
    from orchestration.defs import ticks

    names = ["demo.a", "demo.b", "demo.c"]
    raw = {
        "warehouse": {"uri": warehouse},
        "tables": [{**demo_orders_table(), "name": n} for n in names],
        "downstream": [{**demo_orders_by_day(), "name": f"{n}_by_day", "source_table": n} for n in names],
    }
    defs = build_definitions(parse_tables_config(raw))
    clock = iter(range(0, 1000, 15))  # every look at the clock: 15 s later (budget 20 s: two tables a tick)
    monkeypatch.setattr(ticks.time, "monotonic", lambda: float(next(clock)))
    sensor = defs.resolve_sensor_def(SENSOR)
    with dg.DagsterInstance.ephemeral() as instance:
        ctx = dg.build_sensor_context(instance=instance, cursor=None, resources={"lake": defs.resources["lake"]})
        first = sensor(ctx)
        assert "visited 2 of 3 table(s)" in first.skip_reason.skip_message
        assert "1 not reached within the tick budget (20 s), carried to the next tick" in first.skip_reason.skip_message
        assert set(LakeCursor.decode(first.cursor).tables) == set() and LakeCursor.decode(first.cursor).next == 2
        ctx = dg.build_sensor_context(
            instance=instance, cursor=first.cursor, resources={"lake": defs.resources["lake"]}
        )
        second = sensor(ctx)
    text = second.skip_reason.skip_message
    assert (
        text.startswith("table demo.c cannot be opened yet") and "demo.a" in text
    )  # it starts where the first stopped
    assert LakeCursor.decode(second.cursor).next == 1


def test_sensor_definition_metadata(pipeline):
    defs, sensor = pipeline
    assert sensor.minimum_interval_seconds == 5
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING
    job = defs.resolve_job_def("demo__orders__downstream")
    assert job.tags["lake/table"] == "demo.orders"


def test_snapshots_that_change_no_rows_request_nothing(pipeline, warehouse):
    """A compaction's COMPACT and a rescale's OVERWRITE hold the same rows: no downstream run."""
    defs, sensor = pipeline
    lake = defs.resources["lake"]
    source = orders(orders_per_batch=20)
    with dg.DagsterInstance.ephemeral() as instance:
        table = _orders_table(warehouse)
        table.write_arrow(source.batch(0))
        result, cursor = _tick(sensor, instance, lake, None)
        assert _snapshots(result) == [1]
        table.maintenance.compact(full=True)
        table.maintenance.rescale(bucket=3)
        latest = Catalog(warehouse).get_table("demo.orders").latest_snapshot()
        assert latest.id == 3 and latest.commit_kind.value == "OVERWRITE"
        result, cursor = _tick(sensor, instance, lake, cursor)
        assert not result.run_requests and _seen(cursor) == 3
        text = result.skip_reason.skip_message
        assert "snapshot 2: COMPACT (files reorganized, rows unchanged): requests nothing" in text, text
        assert "snapshot 3: OVERWRITE of a bucket rescale (same rows in new buckets): requests nothing" in text
        assert "snapshots up to 3 of demo.orders changed no rows" in text
        Catalog(warehouse).get_table("demo.orders").write_arrow(source.batch(1))
        result, cursor = _tick(sensor, instance, lake, cursor)
        assert _snapshots(result) == [4] and result.run_requests[0].tags[RANGE_TAG] == "4"
        assert SKIPPED_TAG not in result.run_requests[0].tags


def test_one_broken_table_does_not_stop_the_others(warehouse):
    """A table whose snapshot cannot be read is named in the tick; the other tables get their runs."""
    names = ["demo.a", "demo.b"]
    raw = {
        "warehouse": {"uri": warehouse},
        "tables": [{**demo_orders_table(), "name": n} for n in names],
        "downstream": [{**demo_orders_by_day(), "name": f"{n}_by_day", "source_table": n} for n in names],
    }
    defs = build_definitions(parse_tables_config(raw))
    catalog = Catalog(warehouse)
    catalog.create_database("demo")
    for name in names:
        catalog.create_table(
            name, schema=ORDERS_SCHEMA, primary_keys=["dt", "order_id"], partition_keys=["dt"], options={"bucket": "2"}
        ).write_arrow(orders(orders_per_batch=5).batch(0))
    broken = catalog.get_table("demo.a").paths.snapshot(1).removeprefix("file://")
    with open(broken, "w") as f:
        f.write("{not json")
    with dg.DagsterInstance.ephemeral() as instance:
        ctx = dg.build_sensor_context(instance=instance, cursor=None, resources={"lake": defs.resources["lake"]})
        result = defs.resolve_sensor_def(SENSOR)(ctx)
    (request,) = result.run_requests
    assert request.tags["lake/table"] == "demo.b"
    assert set(LakeCursor.decode(result.cursor).tables) == {"demo.b"}  # demo.a is tried again next tick


def test_hints_are_read_ahead_in_the_ticks_order_for_the_tables_they_decide(warehouse):
    """A tick asks for the hints in the order it visits the tables (from the cursor's start,
    wrapping around), and only of the tables the hint alone decides."""
    from orchestration.defs import ticks

    catalog = Catalog(warehouse)
    names = ["demo.a", "demo.b", "demo.c", "demo.d"]
    with ticks.latest_hints(catalog, names, 2, {"demo.a", "demo.c", "demo.d"}) as hints:
        assert hints._order == ["demo.c", "demo.d", "demo.a"]
        assert hints.get("demo.b") is None  # not read ahead, still answered
    assert ticks.rotation(names, 5) == ["demo.b", "demo.c", "demo.d", "demo.a"] and ticks.rotation([], 3) == []
