"""Many tables: the number of sensors and schedules does not grow with the tables, and one maintenance
operation of one table is still what a run can select. (How long loading and a tick take is
benchmarks/bench_control_plane.py's business: no timed assertion here.)"""

from __future__ import annotations

import dagster as dg
import pytest

from fixtures.tables_config import demo_orders_by_day, demo_orders_table
from lake_core import Catalog
from orchestration.config import parse_tables_config
from orchestration.definitions import build_definitions
from orchestration.defs.naming import maintenance_asset_key
from orchestration.demo.source import ORDERS_SCHEMA, orders

pytestmark = pytest.mark.dagster

POLICY = {"cron": "0 3 * * *", "tags": {"name_format": "daily-%Y-%m-%d"}}


def _names(n: int) -> list[str]:
    return [f"demo.orders_{i:04d}" for i in range(n)]


def _definitions(warehouse: str, n: int) -> dg.Definitions:
    raw = {
        "warehouse": {"uri": warehouse},
        "tables": [{**demo_orders_table(maintenance=POLICY), "name": name} for name in _names(n)],
        "downstream": [{**demo_orders_by_day(), "name": f"{name}_by_day", "source_table": name} for name in _names(n)],
    }
    return build_definitions(parse_tables_config(raw))


@pytest.fixture(scope="module")
def many(tmp_path_factory) -> tuple[str, dict[int, dg.RepositoryDefinition]]:
    warehouse = (tmp_path_factory.mktemp("many") / "warehouse").resolve()
    warehouse.mkdir()
    return warehouse.as_uri(), {n: _definitions(warehouse.as_uri(), n).get_repository_def() for n in (10, 500)}


def test_sensors_and_schedules_do_not_grow_with_the_tables(many):
    _, repos = many
    small, large = repos[10], repos[500]
    assert (
        {s.name for s in small.sensor_defs}
        == {s.name for s in large.sensor_defs}
        == {
            "lake__snapshot_sensor",
            "lake__health_sensor",
            "lake__partitions_sensor",
            "lake__maintenance_automation",
            "downstream__lease_release_on_success",
            "downstream__lease_release_on_failure",
            "downstream__lease_release_on_canceled",
        }
    )
    assert len(small.schedule_defs) == len(large.schedule_defs) == 0
    # ... while every table keeps its assets, in its own group, and its checks
    keys = large.asset_graph.get_all_asset_keys()
    assert all(maintenance_asset_key(name, "compaction") in keys for name in _names(500))
    assert len({large.asset_graph.get(maintenance_asset_key(n, "tags")).group_name for n in _names(500)}) == 500
    # the policy's cron is automation on each table's time-driven assets (what the UI shows per table)
    expiry = large.asset_graph.get(maintenance_asset_key(_names(500)[-1], "snapshot_expiry"))
    assert expiry.automation_condition is not None
    # a fixed number of maintenance ops, however many tables
    ops = {n.name for n in large.get_implicit_global_asset_job_def().graph.node_defs}
    assert len([op for op in ops if op.startswith("lake_maintenance__")]) == 7


def test_one_operation_of_one_table_is_still_selectable(many, tmp_path):
    warehouse, repos = many
    name = _names(500)[123]
    catalog = Catalog(warehouse)
    catalog.create_database("demo", ignore_if_exists=True)
    table = catalog.create_table(
        name, schema=ORDERS_SCHEMA, primary_keys=["dt", "order_id"], partition_keys=["dt"], options={"bucket": "2"}
    )
    for b in range(3):
        table.write_arrow(orders(orders_per_batch=5).batch(b))
    key = maintenance_asset_key(name, "manifest_compaction")
    job = repos[500].get_implicit_global_asset_job_def()
    with dg.DagsterInstance.ephemeral() as instance:
        result = job.execute_in_process(asset_selection=[key], instance=instance)
    assert result.success
    materialized = {e.asset_key for e in result.get_asset_materialization_events()}
    assert materialized == {key}  # that table's operation alone, not the 499 others
    after = Catalog(warehouse).get_table(name)
    assert len(after.manifest_store.data_manifests(after.latest_snapshot())) == 1  # its manifests folded


def test_a_tables_copied_asset_is_what_the_decorator_builds(tmp_path):
    """cheap_assets: the second table's write, derived and rescale assets are copies of the first's;
    a copy has what the decorator builds for that table."""
    from orchestration.defs import cheap_assets

    warehouse = (tmp_path / "wh").resolve().as_uri()
    cheap_assets._TEMPLATES.clear()
    copied = _definitions(warehouse, 2)  # table 0 decorated, table 1 a copy
    cheap_assets._TEMPLATES.clear()
    raw = {
        "warehouse": {"uri": warehouse},
        "tables": [{**demo_orders_table(maintenance=POLICY), "name": _names(2)[1]}],
        "downstream": [{**demo_orders_by_day(), "name": f"{_names(2)[1]}_by_day", "source_table": _names(2)[1]}],
    }
    decorated = build_definitions(parse_tables_config(raw))  # table 1 decorated
    table = dg.AssetKey(_names(2)[1].split("."))
    for key in (table, dg.AssetKey([*table.path, "rescale"]), dg.AssetKey(["demo", f"{table.path[1]}_by_day"])):
        a, b = copied.resolve_assets_def(key), decorated.resolve_assets_def(key)
        assert (a.op.name, a.op.pool, set(a.op.ins), set(a.op.outs)) == (
            b.op.name,
            b.op.pool,
            set(b.op.ins),
            set(b.op.outs),
        )
        assert a.op.required_resource_keys == b.op.required_resource_keys and a.op.description == b.op.description
        config = lambda d: d.op.config_schema.as_field().config_type.key  # noqa: E731 - keyed by its fields
        assert config(a) == config(b)
        assert a.keys_by_input_name == b.keys_by_input_name and a.keys_by_output_name == b.keys_by_output_name
        assert [(c.key, c.blocking) for c in a.check_specs] == [(c.key, c.blocking) for c in b.check_specs]
        assert a.check_specs_by_output_name.keys() == b.check_specs_by_output_name.keys()
        sa, sb = a.specs_by_key[key], b.specs_by_key[key]
        for attr in ("group_name", "description", "metadata", "kinds", "tags", "deps", "partitions_def"):
            assert getattr(sa, attr) == getattr(sb, attr), attr
        assert a.backfill_policy == b.backfill_policy
        assert a.can_subset == b.can_subset == (key.path[-1] == "rescale")  # its check also runs alone


def test_a_copied_rescale_check_runs_alone(tmp_path):
    """The second table's rescale (a copy of the first's, with partitions): its check executed
    alone is a run of that check only, evaluated on its table."""
    warehouse = (tmp_path / "wh").resolve().as_uri()
    definitions = _definitions(warehouse, 2)
    key = dg.AssetCheckKey(maintenance_asset_key(_names(2)[1], "rescale"), "rescale_verified")
    job = definitions.resolve_implicit_global_asset_job_def()
    with dg.DagsterInstance.ephemeral() as instance:
        result = job.get_subset(asset_selection=set(), asset_check_selection={key}).execute_in_process(
            instance=instance
        )
    [evaluation] = result.get_asset_check_evaluations()
    assert (evaluation.asset_key, evaluation.passed) == (key.asset_key, True)
    assert not result.get_asset_materialization_events()
    assert "does not exist yet: nothing to verify" in (evaluation.description or "")
