"""Every check of a table runs on its own ("Execute" / "Execute all" in the UI: a run of checks
only, no asset materialized) and is evaluated against the table as it is now."""

from __future__ import annotations

import dagster as dg
import pytest
import yaml
from dagster._core.remote_representation.external_data import RepositorySnap

from lake_core import Catalog
from orchestration.config import load_tables_config
from orchestration.definitions import DEFAULT_CONFIG, build_definitions
from orchestration.defs import ledger
from orchestration.defs.maintenance.run import result_outputs
from orchestration.demo.source import orders

pytestmark = pytest.mark.dagster

ORDERS = dg.AssetKey(["demo", "orders"])
HEALTH = {"sorted_runs", "small_files", "snapshot_count", "manifest_count", "ttl_lag", "bucket_skew"}
COMPACTION_CHECK = dg.AssetCheckKey(dg.AssetKey(["demo", "orders", "compaction"]), "content_unchanged")
EXPIRY_CHECK = dg.AssetCheckKey(dg.AssetKey(["demo", "orders", "record_expiry"]), "only_expired_records_dropped")
# demo.orders is partitioned: its rescale is an asset of its own (with the table's partitions)
RESCALE_CHECK = dg.AssetCheckKey(dg.AssetKey(["demo", "orders", "rescale"]), "rescale_verified")


def _definitions(tmp_path, warehouse: str) -> dg.Definitions:
    """The checkout's tables.yaml (its policy) against ``warehouse``."""
    raw = yaml.safe_load(DEFAULT_CONFIG.read_text())
    raw["warehouse"] = {"uri": warehouse}
    path = tmp_path / "tables.yaml"
    path.write_text(yaml.safe_dump(raw))
    return build_definitions(load_tables_config(path))


def _written(definitions: dg.Definitions, warehouse: str, batches: int = 3):
    """demo.orders as the config creates it, with ``batches`` commits of the demo source."""
    from jobs.tables import TableSpec, ensure_table

    config = load_tables_config(DEFAULT_CONFIG)
    spec = config.table("demo.orders")
    catalog = Catalog(warehouse)
    ensure_table(
        catalog, TableSpec(spec.name, spec.arrow_schema(), spec.primary_keys, spec.partition_keys, spec.options)
    )
    table = catalog.get_table("demo.orders")
    source = orders()
    for b in range(batches):
        table.write_arrow(source.batch(b))
    return catalog.get_table("demo.orders")


def _alone(definitions: dg.Definitions, instance, *keys: dg.AssetCheckKey) -> dg.ExecuteInProcessResult:
    """What the UI's Execute launches: the asset job with no asset and these checks selected."""
    job = definitions.resolve_implicit_global_asset_job_def()
    subset = job.get_subset(asset_selection=set(), asset_check_selection=set(keys))
    return subset.execute_in_process(instance=instance, raise_on_error=False)


def test_the_ui_can_execute_every_check_of_the_table_alone(tmp_path, warehouse):
    """The UI offers Execute for a check that is its own execution unit (not tied to an asset's
    materialization): every check on demo.orders and the maintenance assets' checks, the
    partitioned rescale's included."""
    definitions = _definitions(tmp_path, warehouse)
    snap = RepositorySnap.from_def(definitions.get_repository_def())
    units = {(c.asset_key, c.name): c.execution_set_identifier for c in snap.asset_check_nodes}
    table_checks = {name for key, name in units if key == ORDERS}
    assert table_checks == HEALTH | {"config_drift"}
    assert all(units[(ORDERS, name)] is None for name in table_checks)
    for check in (COMPACTION_CHECK, EXPIRY_CHECK, RESCALE_CHECK):
        assert units[(check.asset_key, check.name)] is None, check


def test_each_check_alone_is_evaluated_on_the_table_as_it_is_now(tmp_path, warehouse):
    definitions = _definitions(tmp_path, warehouse)
    table = _written(definitions, warehouse)
    latest = table.latest_snapshot().id
    keys = [k for k in definitions.resolve_asset_graph().asset_check_keys if k.asset_key == ORDERS]
    with dg.DagsterInstance.ephemeral() as instance:
        for key in keys:
            result = _alone(definitions, instance, key)
            assert result.success, key
            assert not result.get_asset_materialization_events()  # no asset ran
            [evaluation] = result.get_asset_check_evaluations()
            assert (evaluation.asset_key, evaluation.check_name) == (ORDERS, key.name)
            meta = {k: v.value for k, v in evaluation.metadata.items()}
            if key.name == "config_drift":
                assert evaluation.passed and meta["drifted"] == "none"
            else:  # a figure of the table's current snapshot against the policy's threshold
                assert meta["snapshot_id"] == latest and "threshold" in meta, key
            # the latest evaluation of the check is this one: the UI no longer shows "Not Evaluated"
            record = instance.event_log_storage.get_latest_asset_check_execution_by_key([key])[key]
            assert record.run_id == result.run_id
        snapshot_count = next(
            e
            for e in _alone(definitions, instance, *keys).get_asset_check_evaluations()
            if e.check_name == "snapshot_count"
        )
        assert snapshot_count.metadata["value"].value == latest  # three commits, three snapshots
        # all of them at once (the UI's "Execute all"): seven results in one run
        assert {e.check_name for e in _alone(definitions, instance, *keys).get_asset_check_evaluations()} == HEALTH | {
            "config_drift"
        }


def test_a_maintenance_check_alone_verifies_the_last_run_of_its_operation(tmp_path, warehouse):
    """content_unchanged executed alone: before any compaction it says there is nothing to verify;
    after one, it re-reads the compaction's snapshot against the one before it."""
    definitions = _definitions(tmp_path, warehouse)
    table = _written(definitions, warehouse)
    with dg.DagsterInstance.ephemeral() as instance:
        [before] = _alone(definitions, instance, COMPACTION_CHECK).get_asset_check_evaluations()
        assert before.passed and "has committed a snapshot: nothing to verify" in (before.description or "")
        result = table.maintenance.compact(full=True)
        assert result.snapshot_id is not None
        lake = definitions.resources["lake"]
        ledger.record(  # what the compaction asset's run records
            lake,
            table="demo.orders",
            operation="compaction",
            run_id="run-compact-1",
            outputs=result_outputs(result),
            snapshot_id=result.snapshot_id,
        )
        run = _alone(definitions, instance, COMPACTION_CHECK, EXPIRY_CHECK)
        assert run.success and not run.get_asset_materialization_events()
        by_name = {e.check_name: e for e in run.get_asset_check_evaluations()}
    after = by_name["content_unchanged"]
    assert after.passed and after.metadata["check"].value == "deep"
    assert after.metadata["snapshot_id"].value == result.snapshot_id
    assert f"snapshot {result.snapshot_id} against {result.snapshot_id - 1}" in (after.description or "")
    expiry = by_name["only_expired_records_dropped"]
    assert expiry.passed and "nothing to verify" in (expiry.description or "")
    # the snapshot before the compaction expired: it cannot be re-read, and the run recorded no check
    Catalog(warehouse).get_table("demo.orders").maintenance.expire_snapshots(retain_max=1, retain_min=1)
    with dg.DagsterInstance.ephemeral() as instance:
        [recorded] = _alone(definitions, instance, COMPACTION_CHECK).get_asset_check_evaluations()
    assert recorded.passed and recorded.metadata["check"].value == "recorded"
    assert (
        f"snapshot {result.snapshot_id - 1} is expired, so it cannot be re-read; its run's check was not recorded"
        in (recorded.description or "")
    )


def test_config_drift_compares_bucket_with_the_rescale_target(tmp_path, warehouse):
    """tables.yaml: created with 2 buckets, rescale target 4. The table at 2 (rescale pending) or at 4
    (rescaled, as Paimon's ALTER TABLE SET bucket + overwrite leaves it) agrees with the config; a
    partial rescale is pending work, named; any other count is drift."""
    definitions = _definitions(tmp_path, warehouse)
    table = _written(definitions, warehouse)
    key = dg.AssetCheckKey(ORDERS, "config_drift")

    def drift() -> dg.AssetCheckEvaluation:
        with dg.DagsterInstance.ephemeral() as instance:
            [evaluation] = _alone(definitions, instance, key).get_asset_check_evaluations()
        return evaluation

    pending = drift()
    assert pending.passed and pending.metadata["partitions_to_rescale"].value == 3
    assert "rescale to maintenance.rescale.target_buckets (4) pending for 3 partition(s)" in (pending.description or "")
    table.maintenance.set_bucket(bucket=4)
    first = sorted(table.maintenance.plan_rescale(bucket=4).units, key=lambda u: repr(u.partition))[0]
    Catalog(warehouse).get_table("demo.orders").maintenance.rescale_partition(partition=first.spec, bucket=4)
    partial = drift()
    assert partial.passed and partial.metadata["partitions_to_rescale"].value == 2
    assert partial.metadata["needs_rescale"].value is True
    Catalog(warehouse).get_table("demo.orders").maintenance.rescale(bucket=4)
    done = drift()
    assert done.passed and done.metadata["partitions_to_rescale"].value == 0
    assert done.metadata["needs_rescale"].value is False and done.description == "the table matches tables.yaml"
    Catalog(warehouse).get_table("demo.orders").maintenance.set_bucket(bucket=3)
    other = drift()
    assert not other.passed and other.metadata["needs_rescale"].value is True
    assert "neither the creation count nor maintenance.rescale.target_buckets (4)" in (other.description or "")


def test_rescale_verified_alone_on_an_unpartitioned_table(tmp_path, warehouse):
    """An unpartitioned table's rescale is in the operation's op: its check executed alone re-reads
    the last rescale (from the ledger) at its snapshot and the one before it."""
    import pyarrow as pa

    table_config = {
        "name": "db.u",
        "schema": {"id": "BIGINT", "v": "BIGINT"},
        "primary_keys": ["id"],
        "options": {"bucket": 2},
        "maintenance": {"rescale": {"target_buckets": 3}},
    }
    path = tmp_path / "tables.yaml"
    path.write_text(yaml.safe_dump({"warehouse": {"uri": warehouse}, "tables": [table_config]}))
    definitions = build_definitions(load_tables_config(path))
    check = dg.AssetCheckKey(dg.AssetKey(["db", "u", "rescale"]), "rescale_verified")
    catalog = Catalog(warehouse)
    catalog.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.int64())])
    table = catalog.create_table("db.u", schema, primary_keys=["id"], options={"bucket": "2"})
    table.write_arrow(pa.table({"id": list(range(50)), "v": list(range(50))}, schema=schema))
    with dg.DagsterInstance.ephemeral() as instance:
        [nothing] = _alone(definitions, instance, check).get_asset_check_evaluations()
        assert nothing.passed and "nothing to verify" in (nothing.description or "")
        result = catalog.get_table("db.u").maintenance.rescale(bucket=3)
        ledger.record(
            definitions.resources["lake"],
            table="db.u",
            operation="rescale",
            run_id="run-rescale-1",
            inputs={"partitions": [""], "target_buckets": 3},
            outputs={"partitions_rescaled": result.partitions_rescaled},
            snapshot_id=result.snapshot_id,
        )
        run = _alone(definitions, instance, check)
        assert run.success and not run.get_asset_materialization_events()
        [verified] = run.get_asset_check_evaluations()
    assert verified.passed and verified.metadata["check"].value == "deep", verified.description
    assert verified.metadata["partitions_verified"].value == 1
    assert verified.metadata["snapshot_id"].value == result.snapshot_id


def test_rescale_verified_alone_on_a_partitioned_table(tmp_path, warehouse):
    """A partitioned table's rescale (an asset of its own, with partitions): its check executed alone
    rescales nothing; it re-reads the last committed rescale (from the ledger), each partition at
    the rescale's snapshot against the one it was read at, and falls back to the result the run
    recorded once those snapshots are expired."""
    from orchestration.defs.maintenance.rescale import ledger_outputs

    definitions = _definitions(tmp_path, warehouse)
    table = _written(definitions, warehouse)
    lake = definitions.resources["lake"]
    with dg.DagsterInstance.ephemeral() as instance:
        [nothing] = _alone(definitions, instance, RESCALE_CHECK).get_asset_check_evaluations()
        assert nothing.passed and "nothing to verify" in (nothing.description or "")
        assert table.latest_snapshot().id == Catalog(warehouse).get_table("demo.orders").latest_snapshot().id
        # two of the three partitions, one OVERWRITE each (two snapshots), as a backfill's run records them
        parts = sorted(table.maintenance.plan_rescale(bucket=4).units, key=lambda u: repr(u.partition))[1:]
        result = table.maintenance.rescale(bucket=4, partitions=[dict(u.partition) for u in parts])
        assert result.partitions_rescaled == 2
        ledger.record(
            lake,
            table="demo.orders",
            operation="rescale",
            run_id="run-rescale-1",
            inputs={"partitions": [p.partition for p in result.partitions], "target_buckets": 4},
            outputs={**ledger_outputs(result), "check.rescale_verified": True},  # as its run's check passed
            snapshot_id=result.snapshot_id,
        )
        latest = Catalog(warehouse).get_table("demo.orders")
        pending = len(latest.maintenance.plan_rescale(bucket=4).units)
        run = _alone(definitions, instance, RESCALE_CHECK)
        assert run.success and not run.get_asset_materialization_events()  # nothing rescaled
        [verified] = run.get_asset_check_evaluations()
        after = Catalog(warehouse).get_table("demo.orders")
        assert after.latest_snapshot().id == result.snapshot_id
        assert len(after.maintenance.plan_rescale(bucket=4).units) == pending == 1  # the third still at 2
        record = instance.event_log_storage.get_latest_asset_check_execution_by_key([RESCALE_CHECK])[RESCALE_CHECK]
        assert record.run_id == run.run_id  # the UI shows this evaluation, no longer "Not Evaluated"
    assert verified.passed and verified.metadata["check"].value == "deep", verified.description
    assert verified.metadata["partitions_verified"].value == 2
    assert verified.metadata["snapshot_id"].value == result.snapshot_id
    # the first partition was read two snapshots before the run's last: compared with that one
    first = result.partitions[0]
    assert first.snapshot_read == result.snapshot_id - 2
    assert verified.metadata[f"{first.partition}.rows"].value == f"{first.rows} → {first.rows}"
    # once the snapshots it read are expired: what the run's own check recorded, said so
    after.maintenance.expire_snapshots(retain_max=1, retain_min=1)
    with dg.DagsterInstance.ephemeral() as instance:
        [recorded] = _alone(definitions, instance, RESCALE_CHECK).get_asset_check_evaluations()
    assert recorded.passed and recorded.metadata["check"].value == "recorded"
    read = sorted({p.snapshot_read for p in result.partitions})
    assert f"snapshots {read[0]}, {read[1]} are expired, so it cannot be re-read; its run's check passed" in (
        recorded.description or ""
    )
