"""The ``rescale`` asset: partitions kept in sync by a sensor, a backfill rescales exactly the
selected partitions on Spark, and a blocking check verifies each one before/after."""

from __future__ import annotations

import random

import dagster as dg
import pytest
import yaml
from maintenance.rescale_helpers import (
    PARTS,
    PK,
    SCHEMA,
    Model,
    assert_rows_in_their_buckets,
    bucket_counts,
    filled_table,
    rows,
)

from lake_core import Catalog
from orchestration.config import load_tables_config
from orchestration.definitions import build_definitions
from orchestration.defs.ledger import read_ledger
from orchestration.defs.maintenance.rescale import check_result_from

pytestmark = pytest.mark.dagster

RESCALE = dg.AssetKey(["db", "t", "rescale"])
PARTITIONS = "db__t__partitions"
SENSOR = "lake__partitions_sensor"
KEYS = [f"dt={p}" for p in PARTS]


def _config(
    tmp_path,
    warehouse: str,
    *,
    target: int | None = 5,
    backfill: str = "single_run",
    partitioned: bool = True,
    **warehouse_extra,
) -> dg.Definitions:
    table = {
        "name": "db.t",
        "schema": {"dt": "STRING", "id": "BIGINT", "name": "STRING", "v": "BIGINT", "op": "STRING"},
        "primary_keys": PK if partitioned else ["id", "name"],
        "partition_keys": ["dt"] if partitioned else [],
        "options": {"bucket": 2, "rowkind.field": "op"},
        "maintenance": {"rescale": {"target_buckets": target, "backfill": backfill}},
    }
    path = tmp_path / "tables.yaml"
    path.write_text(yaml.safe_dump({"warehouse": {"uri": warehouse, **warehouse_extra}, "tables": [table]}))
    return build_definitions(load_tables_config(path))


def _filled(warehouse, storage_options=None):
    catalog, _table, model = filled_table(warehouse, storage_options, seed=11)
    return catalog, model


def _sync(defs: dg.Definitions, instance: dg.DagsterInstance):
    """One sensor tick, applied to the instance as the daemon would."""
    ctx = dg.build_sensor_context(instance=instance, resources={"lake": defs.resources["lake"]})
    result = defs.resolve_sensor_def(SENSOR)(ctx)
    if isinstance(result, dg.SensorResult):
        for request in result.dynamic_partitions_requests:
            if isinstance(request, dg.AddDynamicPartitionsRequest):
                instance.add_dynamic_partitions(request.partitions_def_name, request.partition_keys)
            else:
                for key in request.partition_keys:
                    instance.delete_dynamic_partition(request.partitions_def_name, key)
    return result


def _materialize(defs, instance, **tags) -> dg.ExecuteInProcessResult:
    asset = defs.resolve_assets_def(RESCALE)
    return dg.materialize([asset], instance=instance, tags=tags, raise_on_error=False)


def _range(first: str, last: str) -> dict:
    return {"dagster/asset_partition_range_start": first, "dagster/asset_partition_range_end": last}


def _metadata(result: dg.ExecuteInProcessResult) -> list[dict]:
    # a partitioned table's rescale is an asset of its own; an unpartitioned one's is in the operation's op
    return [
        {k: v.value for k, v in m.metadata.items()}
        for node in ("db__t__rescale", "lake_maintenance__rescale")
        for m in result.asset_materializations_for_node(node)
    ]


def _check(result: dg.ExecuteInProcessResult) -> dg.AssetCheckEvaluation:
    [evaluation] = result.get_asset_check_evaluations()
    return evaluation


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("where", ["local", pytest.param("s3", marks=pytest.mark.s3)])
def test_single_run_backfill_rescales_exactly_the_selected_partitions(spark, tmp_path, where, request, monkeypatch):
    if where == "s3":
        wh = request.getfixturevalue("s3_warehouse")
        warehouse, opts = wh.uri, wh.storage_options
        monkeypatch.setenv("TEST_LAKE_S3_ENDPOINT", opts["endpoint_url"])
        monkeypatch.setenv("TEST_LAKE_S3_KEY", opts["key"])
        monkeypatch.setenv("TEST_LAKE_S3_SECRET", opts["secret"])
        defs = _config(
            tmp_path,
            warehouse,
            s3={
                "endpoint_url_env": "TEST_LAKE_S3_ENDPOINT",
                "access_key_env": "TEST_LAKE_S3_KEY",
                "secret_key_env": "TEST_LAKE_S3_SECRET",
            },
        )
    else:
        warehouse, opts = request.getfixturevalue("warehouse"), None
        defs = _config(tmp_path, warehouse)
    catalog, model = _filled(warehouse, opts)
    assert defs.resolve_assets_def(RESCALE).backfill_policy == dg.BackfillPolicy.single_run()
    assert defs.resolve_asset_graph().get(RESCALE).pools == {"lake_maintenance"}  # one maintainer at a time
    with dg.DagsterInstance.ephemeral() as instance:
        _sync(defs, instance)
        assert instance.get_dynamic_partitions(PARTITIONS) == KEYS
        before = catalog.get_table("db.t").latest_snapshot().id
        # What a single-run backfill over the last two partitions launches: one run for the range.
        result = _materialize(defs, instance, **_range(KEYS[1], KEYS[2]))
        assert result.success
        materializations = result.asset_materializations_for_node("db__t__rescale")
        assert sorted(m.partition for m in materializations) == KEYS[1:]
        meta = _metadata(result)[0]
        check = _check(result)
    table = catalog.get_table("db.t")
    assert bucket_counts(table) == {PARTS[0]: {2}, PARTS[1]: {5}, PARTS[2]: {5}}
    assert rows(table.to_arrow()) == model.expected()
    assert_rows_in_their_buckets(table)
    # One Spark job, one commit for both partitions; its figures are numeric metadata.
    assert table.latest_snapshot().id == before + 1 == meta["run.snapshot_id"] == meta["snapshot_id"]
    assert (meta["run.partitions_rescaled"], meta["run.bucket"], meta["run.previous_bucket"]) == (2, 5, 2)
    assert meta["run.rows"] == sum(1 for k in model.rows if k[0] != PARTS[0])
    assert meta["run.files_out"] >= 2 and meta["run.bytes_out"] > 0
    assert meta["snapshot"].endswith(f"snapshot/snapshot-{before + 1}")
    assert f"dt={PARTS[1]}" in meta["run.partitions"] and f"dt={PARTS[0]}" not in meta["run.partitions"]
    assert check.passed and check.blocking and check.check_name == "rescale_verified"
    assert check.metadata["partitions_verified"].value == 2
    # The maintenance ledger holds the run: what it did, why, and the snapshot it produced.
    [entry] = read_ledger(Catalog(warehouse, storage_options=opts), table="db.t", operation="rescale").to_pylist()
    assert (entry["status"], entry["snapshot_id"], entry["skipped"]) == ("succeeded", before + 1, None)
    assert entry["reason"] == f"launched by hand for 2 partition(s): {KEYS[1]}, {KEYS[2]}"
    assert '"partitions_rescaled": 2' in entry["outputs"]


@pytest.mark.spark
@pytest.mark.slow
def test_each_partition_of_a_backfill_has_its_own_metadata(spark, tmp_path, warehouse):
    """A single-run backfill over three partitions, the first already at the target: the
    skipped partition shows no rows and no snapshot, with the reason; each rescaled one shows its
    own rows, files, bytes, buckets and the snapshot; the run's totals are under ``run.``."""
    defs = _config(tmp_path, warehouse)
    catalog, model = _filled(warehouse)
    table = catalog.get_table("db.t")
    table.maintenance.set_bucket(bucket=5)
    done = catalog.get_table("db.t").maintenance.rescale_partition(partition={"dt": PARTS[0]}, bucket=5)
    assert done.skipped is None
    expected_rows = {key: sum(1 for k in model.rows if f"dt={k[0]}" == key) for key in KEYS}
    with dg.DagsterInstance.ephemeral() as instance:
        _sync(defs, instance)
        before = catalog.get_table("db.t").latest_snapshot().id
        result = _materialize(defs, instance, **_range(KEYS[0], KEYS[2]))
        assert result.success
        by_partition = {
            m.partition: {k: v.value for k, v in m.metadata.items()}
            for m in result.asset_materializations_for_node("db__t__rescale")
        }
    assert sorted(by_partition) == KEYS
    skipped, *rescaled = (by_partition[k] for k in KEYS)
    assert skipped["partition"] == KEYS[0] and skipped["skipped"] == "already at 5 buckets"
    assert (skipped["rows"], skipped["files_out"], skipped["bytes_out"]) == (0, 0, 0)
    assert (skipped["buckets_before"], skipped["buckets_after"]) == (5, 5)
    assert skipped["snapshot_id"] is None and skipped["snapshot"] is None
    for key, meta in zip(KEYS[1:], rescaled):
        assert meta["partition"] == key and meta["skipped"] is None
        assert meta["rows"] == expected_rows[key] > 0
        assert (meta["buckets_before"], meta["buckets_after"]) == (2, 5)
        assert meta["files_in"] > 0 and meta["files_out"] >= 1 and meta["bytes_out"] > 0
        assert meta["duration_s"] > 0
        assert meta["snapshot_id"] == before + 1 and meta["snapshot"].endswith(f"snapshot-{before + 1}")
    assert rescaled[0]["rows"] + rescaled[1]["rows"] == rescaled[0]["run.rows"]
    # the run's figures, the same on every partition, are named as such
    assert {m["run.partitions_rescaled"] for m in by_partition.values()} == {2}
    assert {m["run.partitions_skipped"] for m in by_partition.values()} == {1}
    assert bucket_counts(catalog.get_table("db.t")) == {p: {5} for p in PARTS}
    assert rows(catalog.get_table("db.t").to_arrow()) == model.expected()


@pytest.mark.spark
@pytest.mark.slow
def test_per_partition_runs_and_skips(spark, tmp_path, warehouse):
    defs = _config(tmp_path, warehouse, target=3, backfill="per_partition")
    catalog, model = _filled(warehouse)
    assert defs.resolve_assets_def(RESCALE).backfill_policy == dg.BackfillPolicy.multi_run(1)
    with dg.DagsterInstance.ephemeral() as instance:
        _sync(defs, instance)
        first = _materialize(defs, instance, **{"dagster/partition": KEYS[0]})
        assert first.success and _metadata(first)[0]["run.partitions_rescaled"] == 1
        assert bucket_counts(catalog.get_table("db.t")) == {PARTS[0]: {3}, PARTS[1]: {2}, PARTS[2]: {2}}
        # The same partition again: already at the target, skipped with the reason, nothing committed.
        snap = catalog.get_table("db.t").latest_snapshot().id
        again = _materialize(defs, instance, **{"dagster/partition": KEYS[0]})
        assert again.success and _metadata(again)[0]["run.partitions_rescaled"] == 0
        assert _metadata(again)[0]["skipped"] == "already at 3 buckets"
        assert _metadata(again)[0]["snapshot_id"] is None and _metadata(again)[0]["rows"] == 0
        assert _check(again).passed and catalog.get_table("db.t").latest_snapshot().id == snap
    assert rows(catalog.get_table("db.t").to_arrow()) == model.expected()
    ledger = read_ledger(catalog, table="db.t", operation="rescale").to_pylist()
    assert [(e["status"], e["skipped"]) for e in ledger] == [("succeeded", None), ("skipped", "already at 3 buckets")]


def test_no_target_skips_with_the_reason(tmp_path, warehouse):
    defs = _config(tmp_path, warehouse, target=None)
    catalog, model = _filled(warehouse)
    snap = catalog.get_table("db.t").latest_snapshot().id
    with dg.DagsterInstance.ephemeral() as instance:
        _sync(defs, instance)
        result = _materialize(defs, instance, **{"dagster/partition": KEYS[0]})
    assert result.success
    assert "target_buckets of db.t is not set" in _metadata(result)[0]["skipped"]
    [entry] = read_ledger(catalog, table="db.t", operation="rescale").to_pylist()
    assert entry["status"] == "skipped" and "target_buckets of db.t is not set" in entry["skipped"]
    assert catalog.get_table("db.t").latest_snapshot().id == snap
    assert bucket_counts(catalog.get_table("db.t")) == {p: {2} for p in PARTS}


@pytest.mark.spark
@pytest.mark.slow
def test_unpartitioned_table_rescales_as_a_whole(spark, tmp_path, warehouse):
    defs = _config(tmp_path, warehouse, target=4, partitioned=False)
    catalog = Catalog(warehouse)
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t", SCHEMA, primary_keys=["id", "name"], options={"bucket": "2", "rowkind.field": "op"}
    )
    model = Model()
    rnd = random.Random(3)
    for _ in range(2):
        batch = model.batch(rnd, 100, parts=["x"], deletes=False)
        table.write_arrow(batch)
    assert defs.resolve_assets_def(RESCALE).partitions_def is None
    with dg.DagsterInstance.ephemeral() as instance:
        result = _materialize(defs, instance)
    assert result.success and _metadata(result)[0]["partitions_rescaled"] == 1 and _check(result).passed
    table = catalog.get_table("db.t")
    assert {e.total_buckets for e in table.manifest_store.live_entries(table.latest_snapshot())} == {4}
    assert rows(table.to_arrow()) == model.expected()


def test_partitions_sensor_adds_and_removes_partitions(tmp_path, warehouse):
    defs = _config(tmp_path, warehouse)
    with dg.DagsterInstance.ephemeral() as instance:
        assert "db.t does not exist yet" in _sync(defs, instance).skip_reason.skip_message  # no table yet
        catalog, model = _filled(warehouse)
        first = _sync(defs, instance)
        assert [r.partition_keys for r in first.dynamic_partitions_requests] == [KEYS]
        assert instance.get_dynamic_partitions(PARTITIONS) == KEYS
        assert "already in sync" in _sync(defs, instance).skip_reason.skip_message
        # Drop the first partition (an overwrite with nothing) and write a new one.
        table = catalog.get_table("db.t")
        empty = model.batch(random.Random(1), 0)
        table.write_arrow(empty, overwrite={"dt": PARTS[0]})
        table.write_arrow(model.batch(random.Random(2), 30, parts=["2024-02-01"], deletes=False))
        second = _sync(defs, instance)
        requests = {type(r).__name__: list(r.partition_keys) for r in second.dynamic_partitions_requests}
        assert requests == {
            "AddDynamicPartitionsRequest": ["dt=2024-02-01"],
            "DeleteDynamicPartitionsRequest": [KEYS[0]],
        }
        assert instance.get_dynamic_partitions(PARTITIONS) == KEYS[1:] + ["dt=2024-02-01"]
        assert set(instance.get_dynamic_partitions(PARTITIONS)) == {
            f"dt={p}" for p in bucket_counts(catalog.get_table("db.t"))
        }


def test_blocking_check_fails_when_the_content_changed(tmp_path, warehouse):
    """The check compares what readers saw before with what they see after: a partition whose
    rows changed between the two snapshots fails it, naming the partition and the figures."""
    catalog, model = _filled(warehouse)
    table = catalog.get_table("db.t")
    before = table.latest_snapshot().id
    # A real write changes partition 0 after `before`; the rescale then reads and rewrites it.
    table.write_arrow(model.batch(random.Random(5), 20, parts=[PARTS[0]], deletes=False))
    table.maintenance.set_bucket(bucket=5)
    done = catalog.get_table("db.t").maintenance.rescale_partition(partition={"dt": PARTS[0]}, bucket=5)
    table = catalog.get_table("db.t")
    ok = check_result_from(
        table.maintenance.verify_rescale(
            partitions={done.partition: done.snapshot_read}, snapshot_id=done.snapshot_committed, bucket=5
        )
    )
    assert ok.passed
    changed = check_result_from(
        table.maintenance.verify_rescale(
            partitions={done.partition: before}, snapshot_id=done.snapshot_committed, bucket=5
        )
    )
    assert not changed.passed and changed.severity == dg.AssetCheckSeverity.ERROR
    assert f"dt={PARTS[0]}" in changed.description and f"at snapshot {before}" in changed.description
    # The bucket count is verified too: partition 1 was not rewritten.
    unscaled = check_result_from(
        table.maintenance.verify_rescale(
            partitions={f"dt={PARTS[1]}": before}, snapshot_id=done.snapshot_committed, bucket=5
        )
    )
    assert not unscaled.passed and "[2] total buckets, expected [5]" in unscaled.description
    # The asset declares this check blocking: a failed verification fails the run's step.
    [spec] = _config(tmp_path, warehouse).resolve_assets_def(RESCALE).check_specs
    assert (spec.name, spec.blocking) == ("rescale_verified", True)
