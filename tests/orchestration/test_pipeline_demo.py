"""The demo pipeline (``python -m orchestration.demo``): ingest, sensor tick, downstream run."""

from __future__ import annotations

import dagster as dg
import pytest
from dagster._core.storage.tags import RUN_KEY_TAG, SENSOR_NAME_TAG

from lake_core import Catalog
from orchestration.config import load_tables_config
from orchestration.definitions import DEFAULT_CONFIG, build_definitions
from orchestration.defs.sensors import SensorCursor, run_key, table_identity
from orchestration.defs.ticks import LakeCursor
from orchestration.demo.pipeline import run_demo
from orchestration.demo.source import orders

pytestmark = [pytest.mark.spark, pytest.mark.dagster, pytest.mark.slow]

SENSOR = "lake__snapshot_sensor"


def _tick(config, instance, *, cursor: str | None) -> dg.SensorResult:
    """One tick of the lake's snapshot sensor, as the daemon of `dagster dev` evaluates it."""
    definitions = build_definitions(config)
    context = dg.build_sensor_context(
        instance=instance, cursor=cursor, resources={"lake": definitions.resources["lake"]}
    )
    result = definitions.resolve_sensor_def(SENSOR)(context)
    assert isinstance(result, dg.SensorResult)
    return result


def _entry(warehouse: str, snapshot_id: int) -> dict:
    identity = table_identity(warehouse, Catalog(warehouse).get_table("demo.orders"))
    return SensorCursor(identity, snapshot_id).entry()


def test_demo_runs_the_whole_pipeline_twice(spark, warehouse, write_tables_config):
    config = load_tables_config(write_tables_config(warehouse))
    lines: list[str] = []
    with dg.DagsterInstance.ephemeral() as instance:
        first = run_demo(config, instance, say=lines.append)
        # `dagster dev`'s sensor ticking on the same instance after the demo's first run, with no
        # cursor (its first tick): the snapshot the demo derived has a run, nothing is requested
        first_tick = _tick(config, instance, cursor=None)
        behind = LakeCursor({"demo.orders": _entry(warehouse, 1)}).encode()  # a daemon that saw snapshot 1
        second = run_demo(config, instance, batches=2, say=lines.append)
        second_tick = _tick(config, instance, cursor=behind)
        ticks_after_demo = (first_tick.run_requests or [], second_tick.run_requests or [])
        ticks_text = first_tick.skip_reason.skip_message + second_tick.skip_reason.skip_message
        runs = instance.get_runs()
        # The downstream runs carry the sensor's run key and name, as the daemon's own runs do,
        # so a running `dagster dev` finds them and never derives those snapshots again.
        keyed = {r.tags[RUN_KEY_TAG]: r for r in runs if RUN_KEY_TAG in r.tags}
    identity = table_identity(warehouse, Catalog(warehouse).get_table("demo.orders"))
    keys = [run_key("demo.orders", sid, identity) for sid in (1, 2, 3)]
    assert first.ingested["demo.orders"]["snapshot_id"] == 1 and first.requests == keys[:1]
    assert second.ingested["demo.orders"]["snapshot_id"] == 3
    assert second.requests == keys[2:]  # one downstream run covering both new snapshots
    assert keyed[keys[2]].tags["lake/snapshot-range"] == "2..3"
    assert sorted(keyed) == sorted([keys[0], keys[2]]) and all(
        r.tags[SENSOR_NAME_TAG] == SENSOR for r in keyed.values()
    )
    assert second.downstream["demo.orders_by_day"]["source_snapshot_id"] == 3
    assert second.tables["demo.orders"] == orders().expected(3).num_rows
    assert second.ingested["demo.orders"]["table_rows"] == orders().expected(3).num_rows
    assert Catalog(warehouse).get_table("demo.orders_by_day").to_arrow().num_rows == 3  # three order days
    assert len(runs) == 1 + 1 + 2 + 1 and all(r.is_success for r in runs)
    assert ticks_after_demo == ([], [])  # the daemon's sensor, first tick or behind: nothing to run again
    assert "already has run" in ticks_text
    text = "\n".join(lines)
    assert f"run_key {keys[2]}" in text and "table    demo.orders_by_day: 3 rows" in text
    # each downstream run's snapshot lease was released once the run finished
    assert text.count("lease    lease dagster-") == 0 and text.count(" released (run ") == 2
    assert Catalog(warehouse).get_table("demo.orders").maintenance.consumers.consumers() == []


def test_demo_skips_a_snapshot_that_already_has_a_run(spark, warehouse, write_tables_config):
    """A run the daemon of `dagster dev` launched for the next snapshot: the demo does not derive it again."""
    config = load_tables_config(write_tables_config(warehouse))
    definitions = build_definitions(config)
    lines: list[str] = []
    with dg.DagsterInstance.ephemeral() as instance:
        run_demo(config, instance, say=lines.append)
        identity = table_identity(warehouse, Catalog(warehouse).get_table("demo.orders"))
        key = run_key("demo.orders", 2, identity)
        job = definitions.resolve_job_def("demo__orders__downstream")
        queued = instance.create_run_for_job(job, run_config={}, tags={RUN_KEY_TAG: key, SENSOR_NAME_TAG: SENSOR})
        second = run_demo(config, instance, say=lines.append)
        derived = [r for r in instance.get_runs() if r.tags.get(RUN_KEY_TAG) == key]
    assert second.ingested["demo.orders"]["snapshot_id"] == 2
    assert second.requests == []  # the tick requests nothing for a run key that has a run
    assert [r.run_id for r in derived] == [queued.run_id]  # still only the daemon's run
    assert "demo.orders_by_day" not in second.downstream
    assert f"snapshot 2 already has run {queued.run_id[:8]}" in "\n".join(lines) and key in "\n".join(lines)
    # no lease was taken for it (no run of the demo will carry it)
    assert Catalog(warehouse).get_table("demo.orders").maintenance.consumers.consumers() == []


def test_demo_maintenance_cycle_on_the_checkouts_config(spark, warehouse, tmp_path):
    """The README's main job: the checkout's tables.yaml, three ingests, then every maintenance asset."""
    import yaml

    raw = yaml.safe_load(DEFAULT_CONFIG.read_text())
    raw["warehouse"] = {"uri": warehouse}
    path = tmp_path / "tables.yaml"
    path.write_text(yaml.safe_dump(raw))
    config = load_tables_config(path)
    lines: list[str] = []
    with dg.DagsterInstance.ephemeral() as instance:
        summary = run_demo(config, instance, batches=3, maintenance=True, say=lines.append)
    cycle = summary.maintenance
    table = Catalog(warehouse).get_table("demo.orders")
    runs = cycle.runs["demo.orders"]
    assert set(runs) == {"compaction", "manifest_compaction", "snapshot_expiry", "record_expiry", "rescale"}
    # the data a user reads is exactly the source's three batches, after compaction and rescale
    expected = orders().expected(3)
    keys = [("dt", "ascending"), ("order_id", "ascending")]
    assert table.to_arrow().select(expected.schema.names).sort_by(keys).equals(expected.sort_by(keys))
    # the reader's lease held snapshot 3 through expiry to one snapshot; released afterwards
    assert cycle.leased_snapshot == {"demo.orders": 3} and cycle.leased_snapshot_survived == {"demo.orders": True}
    assert runs["snapshot_expiry"]["expired_snapshots"] == "1, 2"
    assert table.maintenance.consumers.consumers() == []
    # full compaction left one sorted run per bucket; manifests folded
    health = table.maintenance.health()
    assert max(b.sorted_runs for b in health.buckets) == 1
    assert runs["manifest_compaction"]["manifests_after"] == 1
    # every partition rescaled to the policy's 4 buckets: the table is as tables.yaml means it
    buckets: dict[str, set[int]] = {}
    for b in health.buckets:
        buckets.setdefault(b.partition, set()).add(b.bucket)
    partitions = ["dt=2024-01-01", "dt=2024-01-02", "dt=2024-01-03"]
    assert cycle.rescaled == {"demo.orders": partitions}
    assert all(buckets[p] == {0, 1, 2, 3} for p in partitions) and table.options.bucket == 4
    assert runs["rescale"]["run.partitions_rescaled"] == 3
    # so config_drift (executed alone, as "Execute" in the UI) passes: no rescale back to 2 asked for
    definitions = build_definitions(config)
    key = dg.AssetCheckKey(dg.AssetKey(["demo", "orders"]), "config_drift")
    with dg.DagsterInstance.ephemeral() as instance:
        job = definitions.resolve_implicit_global_asset_job_def()
        result = job.get_subset(asset_selection=set(), asset_check_selection={key}).execute_in_process(
            instance=instance
        )
    [drift] = result.get_asset_check_evaluations()
    assert drift.passed, drift.description
    assert drift.metadata["partitions_to_rescale"].value == 0 and drift.metadata["needs_rescale"].value is False
    # one ledger row per maintenance run, each with its outcome
    assert sorted((r["operation"], r["status"]) for r in cycle.ledger) == [
        ("compaction", "succeeded"),
        ("manifest_compaction", "succeeded"),
        ("record_expiry", "skipped"),
        ("rescale", "succeeded"),
        ("snapshot_expiry", "succeeded"),
    ]
    text = "\n".join(lines)
    assert "policy   skip compaction: max 3 sorted runs <= 5" in text and "still readable: 596 rows" in text
