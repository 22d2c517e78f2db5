"""The ``compaction`` and ``record_expiry`` assets: materialized for real (Spark + lake_core) on a
local warehouse and on the S3 test server, their blocking checks, and the policy → options mapping.

Oracle: a plain dict model {(dt, id): (v, ts)} of what a reader must see."""

from __future__ import annotations

import time

import dagster as dg
import pyarrow as pa
import pytest
import yaml

from jobs.compact import PartitionSpecError, parse_partitions
from lake_core import Catalog, CompactionVerificationError
from lake_core.manifest.metadata import FileSource
from lake_core.write import file_writer
from orchestration.config import load_tables_config
from orchestration.definitions import build_definitions
from orchestration.defs.ledger import read_ledger
from orchestration.defs.maintenance.compaction import COMPACTION, RECORD_EXPIRY, in_task_check, verification_check
from orchestration.defs.naming import maintenance_op_name

pytestmark = pytest.mark.dagster

SCHEMA = pa.schema(
    [("dt", pa.string()), ("id", pa.int64()), ("v", pa.int64()), ("ts", pa.int64()), ("op", pa.string())]
)
COMPACT_KEY = dg.AssetKey(["db", "t", "compaction"])
EXPIRY_KEY = dg.AssetKey(["db", "t", "record_expiry"])
NOW = int(time.time())
OLD = NOW - 10 * 86400  # ten days old: expired under a 1 d retention


def _definitions(tmp_path, warehouse: str, maintenance: dict, **warehouse_extra) -> dg.Definitions:
    table = {
        "name": "db.t",
        "schema": {"dt": "STRING", "id": "BIGINT", "v": "BIGINT", "ts": "BIGINT", "op": "STRING"},
        "primary_keys": ["dt", "id"],
        "partition_keys": ["dt"],
        "options": {"bucket": 2, "rowkind.field": "op", "write-only": True},
        "maintenance": maintenance,
    }
    path = tmp_path / "tables.yaml"
    path.write_text(yaml.safe_dump({"warehouse": {"uri": warehouse, **warehouse_extra}, "tables": [table]}))
    return build_definitions(load_tables_config(path))


def _filled(warehouse: str, storage_options=None, commits: int = 5, old_every: int = 0):
    """A table with ``commits`` level-0 files per bucket; every ``old_every``-th key written in the
    first commit is ten days old (and not updated since). Returns (table, model)."""
    catalog = Catalog(warehouse, storage_options=storage_options)
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": "2", "rowkind.field": "op", "write-only": "true"},
    )
    model: dict = {}
    for c in range(commits):
        rows = []
        for dt in ("2024-01-01", "2024-01-02"):
            for i in range(c * 10, c * 10 + 20):
                ts = OLD if (c == 0 and old_every and i % old_every == 0 and i < 10) else NOW
                deleted = c >= 1 and i % 9 == c
                rows.append((dt, i, c * 100 + i, ts, "-D" if deleted else "+I"))
                if deleted:
                    model.pop((dt, i), None)
                else:
                    model[(dt, i)] = (c * 100 + i, ts)
        table.write_arrow(pa.table(dict(zip(SCHEMA.names, zip(*rows))), schema=SCHEMA))
    return table, model


def _rows(warehouse: str, storage_options=None) -> dict:
    t = Catalog(warehouse, storage_options=storage_options).get_table("db.t")
    return {(r["dt"], r["id"]): (r["v"], r["ts"]) for r in t.to_arrow().to_pylist()}


def _materialize(
    defs: dg.Definitions, key: dg.AssetKey, config: dict | None = None, tags: dict | None = None
) -> dg.ExecuteInProcessResult:
    op = defs.resolve_assets_def(key).node_def.name  # the operation's one op over all tables
    run_config = {"ops": {op: {"config": config}}} if config is not None else None
    with dg.DagsterInstance.ephemeral() as instance:
        return dg.materialize([defs.resolve_assets_def(key)], instance=instance, run_config=run_config, tags=tags)


def _ledger(warehouse: str, storage_options=None) -> list[dict]:
    return read_ledger(Catalog(warehouse, storage_options=storage_options), table="db.t").to_pylist()


def _metadata(result: dg.ExecuteInProcessResult, key: dg.AssetKey) -> dict:
    [event] = [
        e for e in result.asset_materializations_for_node(maintenance_op_name(key.path[-1])) if e.asset_key == key
    ]
    return {k: v for k, v in event.metadata.items()}


def _check(result: dg.ExecuteInProcessResult) -> dg.AssetCheckEvaluation:
    [evaluation] = result.get_asset_check_evaluations()
    return evaluation


def test_assets_are_in_the_table_group_with_blocking_checks(tmp_path, warehouse):
    defs = _definitions(tmp_path, warehouse, {})
    graph = defs.resolve_asset_graph()
    for key, check in ((COMPACT_KEY, "content_unchanged"), (EXPIRY_KEY, "only_expired_records_dropped")):
        node = graph.get(key)
        assert node.group_name == "db__t" and node.parent_keys == {dg.AssetKey(["db", "t"])}
        [spec] = defs.resolve_assets_def(key).check_specs
        assert spec.name == check and spec.blocking
    # the policy can turn compaction off; append tables have no compaction at all
    off = _definitions(tmp_path, warehouse, {"compaction": {"enabled": False}})
    assert COMPACT_KEY not in set(off.resolve_all_asset_keys()) and EXPIRY_KEY in set(off.resolve_all_asset_keys())


def test_partitions_config_is_parsed_with_the_column_types(warehouse):
    catalog = Catalog(warehouse)
    catalog.create_database("db")
    table = catalog.create_table(
        "db.h",
        schema=pa.schema([("dt", pa.string()), ("hr", pa.int32()), ("id", pa.int64())]),
        primary_keys=["dt", "hr", "id"],
        partition_keys=["dt", "hr"],
        options={"bucket": "1"},
    )
    assert parse_partitions(table, ["dt=2024-01-01/hr=3", "dt=x"]) == [{"dt": "2024-01-01", "hr": 3}, {"dt": "x"}]
    assert parse_partitions(table, None) is None
    with pytest.raises(PartitionSpecError, match=r"db\.h.*'day=1' names 'day', which is not a partition column"):
        parse_partitions(table, ["day=1"])
    with pytest.raises(PartitionSpecError, match=r"db\.h.*'hr=three'"):
        parse_partitions(table, ["hr=three"])


@pytest.mark.spark
@pytest.mark.slow
def test_compaction_asset_runs_on_spark_and_its_check_passes(spark, tmp_path, warehouse):
    table, model = _filled(warehouse)
    # max_sorted_runs 3 < 5 level-0 files per bucket: the policy is this job's compaction trigger
    defs = _definitions(tmp_path, warehouse, {"compaction": {"max_sorted_runs": 3}})
    result = _materialize(
        defs,
        COMPACT_KEY,
        {"full": False},
        tags={"lake/reason": "compaction: dt=2024-01-01/bucket-0 has 5 sorted runs > 3"},
    )
    meta = _metadata(result, COMPACT_KEY)
    after = Catalog(warehouse).get_table("db.t")
    assert _rows(warehouse) == model
    assert meta["units_run"].value == 4 and meta["units_skipped"].value == 0
    assert isinstance(meta["rows_in"], dg.IntMetadataValue) and meta["rows_in"].value == 5 * 40
    assert isinstance(meta["bytes_written"], dg.IntMetadataValue) and meta["bytes_written"].value > 0
    assert meta["snapshot_id"].value == after.latest_snapshot().id == 6
    assert meta["snapshot"].value.endswith("/snapshot/snapshot-6")
    assert meta["options.num-sorted-run.compaction-trigger"].value == "3 (from maintenance.compaction.max_sorted_runs)"
    assert "num-sorted-run.compaction-trigger" not in after.schema.options  # the table is not altered
    check = _check(result)
    assert check.passed and check.severity == dg.AssetCheckSeverity.ERROR
    # the in-task figures: rows read minus dropped = rows written (read back in the Spark tasks), checksums too
    assert check.metadata["check"].value == "in-task" and check.metadata["rows_dropped"].value == 0
    assert check.metadata["rows_after"].value == check.metadata["rows_expected"].value == len(model)
    assert check.metadata["checksum_after"].value == check.metadata["checksum_expected"].value
    assert check.metadata["buckets_verified"].value == 4 and "| dt=2024-01-01 | 0 |" in check.metadata["buckets"].value

    # a second run: nothing left to compact under the trigger, nothing committed, check passes
    again = _materialize(defs, COMPACT_KEY, {"full": False})
    assert _metadata(again, COMPACT_KEY)["units_run"].value == 0 and _check(again).passed
    assert len(Catalog(warehouse).get_table("db.t").snapshots()) == 6

    # one ledger row per run, with why it ran and what it did
    first, second = _ledger(warehouse)
    assert (first["run_id"], first["operation"], first["status"]) == (result.run_id, "compaction", "succeeded")
    assert first["reason"] == "compaction: dt=2024-01-01/bucket-0 has 5 sorted runs > 3"
    assert first["snapshot_id"] == 6 and '"units_run": 4' in first["outputs"] and '"full": false' in first["inputs"]
    assert '"check.content_unchanged": true' in first["outputs"]
    assert (second["status"], second["snapshot_id"]) == ("skipped", None)
    assert (
        second["skipped"].startswith("nothing to compact: none needs compaction") and "not started" in second["skipped"]
    )


@pytest.mark.spark
def test_deep_check_config_rereads_both_snapshots_instead_of_in_task_figures(spark, tmp_path, warehouse):
    """``deep_check: true``: the units compute no figures (``verify`` off) and the blocking check
    re-reads the table at the COMPACT snapshot and the one before it."""
    _table, model = _filled(warehouse)
    result = _materialize(_definitions(tmp_path, warehouse, {}), COMPACT_KEY, {"full": True, "deep_check": True})
    meta = _metadata(result, COMPACT_KEY)
    snapshot = meta["snapshot_id"].value
    assert meta["verify"].value is False and _rows(warehouse) == model
    check = _check(result)
    assert check.passed and check.metadata["check"].value == "deep"
    assert check.description.startswith(f"snapshot {snapshot} against {snapshot - 1}: rows, key and row checksums")
    assert "checksum_expected" not in check.metadata  # the in-task figures were not what it compared


@pytest.mark.spark
@pytest.mark.slow
def test_check_fails_when_the_content_changed(spark, tmp_path, warehouse):
    """The check the asset runs, on real snapshots with a real change between before and after."""
    table, model = _filled(warehouse, old_every=3)
    defs = _definitions(tmp_path, warehouse, {"record_expiry": {"field": "ts", "retention": "1 d"}})
    result = _materialize(defs, COMPACT_KEY, {"full": True})
    assert _check(result).passed
    snap = _metadata(result, COMPACT_KEY)["snapshot_id"].value
    cutoff = _metadata(result, COMPACT_KEY)["expiry_cutoff_s"].value
    table = Catalog(warehouse).get_table("db.t")

    # a key deleted after the compaction: lost between the snapshot before it and the one after
    table.write_arrow(pa.table({"dt": ["2024-01-02"], "id": [45], "v": [0], "ts": [NOW], "op": ["-D"]}, schema=SCHEMA))
    check, _ = verification_check(
        table,
        COMPACTION,
        before_snapshot_id=snap - 1,
        after_snapshot_id=snap + 1,
        expiry_field="ts",
        expiry_cutoff_s=cutoff,
    )
    assert not check.passed and "1 key(s) whose record had not expired are gone" in check.description
    # a changed value and a key that was deleted before coming back
    table.write_arrow(
        pa.table(
            {"dt": ["2024-01-01", "2024-01-01"], "id": [11, 10], "v": [-1, -1], "ts": [NOW, NOW], "op": ["+I", "+I"]},
            schema=SCHEMA,
        )
    )
    assert ("2024-01-01", 10) not in model  # deleted in commit 1
    check, v = verification_check(
        table,
        COMPACTION,
        before_snapshot_id=snap - 1,
        after_snapshot_id=snap + 2,
        expiry_field="ts",
        expiry_cutoff_s=cutoff,
    )
    assert not check.passed and (v.resurrected_keys, v.changed_rows, v.lost_keys) == (1, 1, 1)
    # record expiry: an expired record written after the compaction survives
    table.write_arrow(pa.table({"dt": ["2024-01-02"], "id": [999], "v": [0], "ts": [OLD], "op": ["+I"]}, schema=SCHEMA))
    check, v = verification_check(
        table,
        RECORD_EXPIRY,
        before_snapshot_id=snap,
        after_snapshot_id=snap + 3,
        expiry_field="ts",
        expiry_cutoff_s=cutoff,
    )
    assert not check.passed and v.expired_surviving == 1 and "expired record(s) (ts before" in check.description
    # the same snapshots with nothing changed in between pass
    check, _ = verification_check(
        table,
        RECORD_EXPIRY,
        before_snapshot_id=snap + 3,
        after_snapshot_id=snap + 3,
        expiry_field=None,
        expiry_cutoff_s=None,
    )
    assert check.passed


def test_a_compaction_whose_files_lost_a_row_is_refused_naming_the_bucket(warehouse, monkeypatch):
    """The blocking check the asset runs by default passes on a real compaction; one whose writer lost
    a row (injected here) is refused before its commit, naming the partition and bucket."""
    table, _model = _filled(warehouse, commits=3)
    ok, _ = in_task_check(
        table.maintenance.compact(full=True, partitions={"dt": "2024-01-02"}, verify=True), COMPACTION
    )
    assert ok.passed and ok.metadata["check"].value == "in-task" and ok.metadata["buckets_verified"].value == 2
    assert "rows read - 0 dropped" in ok.description and "checksums equal" in ok.description
    real = file_writer.RollingFileWriter.write

    def lossy(self, rows):
        if self.file_source == FileSource.COMPACT and rows.num_rows > 1:
            rows = rows.slice(1)
        return real(self, rows)

    monkeypatch.setattr(file_writer.RollingFileWriter, "write", lossy)
    snapshot = table.latest_snapshot().id
    with pytest.raises(CompactionVerificationError) as e:
        table.maintenance.compact(full=True, partitions={"dt": "2024-01-01"}, parallelism=1, verify=True)
    assert "partition 'dt=2024-01-01' bucket 0:" in str(e.value)
    assert "partition 'dt=2024-01-01' bucket 1:" in str(e.value)
    assert table.latest_snapshot().id == snapshot  # refused before the commit


@pytest.mark.spark
@pytest.mark.slow
def test_record_expiry_drops_exactly_the_expired_records(spark, tmp_path, warehouse):
    _table, model = _filled(warehouse, old_every=3)
    expired = {k for k, (_v, ts) in model.items() if ts == OLD}
    assert len(expired) == 8  # ids 0, 3, 6, 9 in both partitions, never updated or deleted
    defs = _definitions(tmp_path, warehouse, {"record_expiry": {"field": "ts", "retention": "1 d"}})
    result = _materialize(defs, EXPIRY_KEY)
    meta = _metadata(result, EXPIRY_KEY)
    assert _rows(warehouse) == {k: v for k, v in model.items() if k not in expired}
    assert meta["rows_expired"].value == len(expired) and meta["expire_records"].value is True
    assert meta["expiry_field"].value == "ts" and abs(meta["expiry_cutoff_s"].value - (time.time() - 86400)) < 600
    assert meta["options.record-level.expire-time"].value == "1 d (from maintenance.record_expiry.retention)"
    check = _check(result)
    assert check.passed and check.metadata["expired_dropped"].value == len(expired)
    assert check.metadata["expired_surviving"].value == 0
    # targeted: only the buckets whose statistics showed expired records were rewritten
    assert meta["units_run"].value == meta["units_planned"].value <= 4
    assert "record-level.expire-time" not in Catalog(warehouse).get_table("db.t").schema.options


@pytest.mark.spark
def test_record_expiry_without_a_ttl_is_skipped_with_the_reason(spark, tmp_path, warehouse):
    _filled(warehouse, commits=1)
    result = _materialize(_definitions(tmp_path, warehouse, {}), EXPIRY_KEY)
    meta = _metadata(result, EXPIRY_KEY)
    assert "maintenance.record_expiry.field" in meta["skipped"].value and meta["units_run"].value == 0
    assert _check(result).passed
    assert len(Catalog(warehouse).get_table("db.t").snapshots()) == 1
    [row] = _ledger(warehouse)
    assert (row["operation"], row["status"]) == ("record_expiry", "skipped") and "retention" in row["skipped"]


@pytest.mark.spark
@pytest.mark.s3
@pytest.mark.slow
def test_compaction_and_record_expiry_assets_on_s3(spark, tmp_path, s3_warehouse, monkeypatch):
    opts = s3_warehouse.storage_options
    _table, model = _filled(s3_warehouse.uri, opts, commits=3, old_every=3)
    s3 = {
        "endpoint_url_env": "TEST_LAKE_S3_ENDPOINT",
        "access_key_env": "TEST_LAKE_S3_KEY",
        "secret_key_env": "TEST_LAKE_S3_SECRET",
        "region": "us-east-1",
        "path_style": True,
    }
    monkeypatch.setenv("TEST_LAKE_S3_ENDPOINT", opts["endpoint_url"])
    monkeypatch.setenv("TEST_LAKE_S3_KEY", opts["key"])
    monkeypatch.setenv("TEST_LAKE_S3_SECRET", opts["secret"])
    defs = _definitions(tmp_path, s3_warehouse.uri, {}, s3=s3)
    result = _materialize(defs, COMPACT_KEY, {"full": True, "partitions": ["dt=2024-01-02"]})
    meta = _metadata(result, COMPACT_KEY)
    assert (meta["units_run"].value, meta["snapshot_id"].value) == (2, 4) and _check(result).passed
    assert meta["snapshot"].value.startswith(s3_warehouse.uri)
    assert _rows(s3_warehouse.uri, opts) == model  # no TTL in this policy: nothing expires
    [row] = _ledger(s3_warehouse.uri, opts)
    assert (row["status"], row["snapshot_id"]) == ("succeeded", 4)


def test_a_bad_partition_fails_the_run_before_spark_and_is_in_the_ledger(tmp_path, warehouse):
    _filled(warehouse, commits=1)
    defs = _definitions(tmp_path, warehouse, {})
    with dg.DagsterInstance.ephemeral() as instance:
        result = dg.materialize(
            [defs.resolve_assets_def(COMPACT_KEY)],
            instance=instance,
            raise_on_error=False,
            run_config={"ops": {"lake_maintenance__compaction": {"config": {"partitions": ["day=1"]}}}},
        )
    assert not result.success
    [row] = _ledger(warehouse)
    assert (
        row["status"] == "failed"
        and "PartitionSpecError" in row["error"]
        and "'day', which is not a partition column" in row["error"]
    )
    assert len(Catalog(warehouse).get_table("db.t").snapshots()) == 1
