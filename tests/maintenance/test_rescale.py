"""Bucket rescale: partial and full rescales keep every row (model), move each row to the
bucket Paimon's hash gives it, let writers continue on partitions at either bucket count,
verify before committing, and refuse what cannot be rescaled."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from lake_core import Catalog, CommitConflictError, InvalidOptionError, UnsupportedOptionError
from lake_core.maintenance.rescale import (
    PreparedRescale,
    RescaleResult,
    RescaleVerificationError,
    commit_rescale_partition,
    prepare_rescale_partition,
)

from .rescale_helpers import PARTS, Model, assert_rows_in_their_buckets, bucket_counts, make_table, rows


def fill(table, model, rnd, commits=4, n=120):
    for _ in range(commits):
        table.write_arrow(model.batch(rnd, n))


def filled(warehouse, seed, commits=4):
    rnd = random.Random(seed)
    catalog, table = make_table(warehouse)
    model = Model()
    fill(table, model, rnd, commits=commits)
    return rnd, catalog, table, model


def test_partial_then_full_rescale_keeps_every_row(warehouse):
    rnd, catalog, table, model = filled(warehouse, 1)
    result = table.maintenance.rescale(bucket=5, partitions=[{"dt": PARTS[0]}])
    assert isinstance(result, RescaleResult)
    assert (result.previous_bucket, result.bucket, result.partitions_rescaled) == (2, 5, 1)
    part = result.partitions[0]
    assert part.partition == f"dt={PARTS[0]}" and (part.old_buckets, part.new_buckets) == (2, 5)
    assert part.rows == sum(1 for k in model.rows if k[0] == PARTS[0])
    assert part.files_in == 8 and 1 <= part.files_out <= 5 and part.bytes_out > 0 and len(part.checksum) == 32
    meta = result.as_metadata()
    assert meta["rows"] == part.rows and meta["partitions_rescaled"] == 1

    table = catalog.get_table("db.t")
    assert table.options.bucket == 5 and table.schema.id == 1
    assert bucket_counts(table) == {PARTS[0]: {5}, PARTS[1]: {2}, PARTS[2]: {2}}
    assert rows(table.to_arrow()) == model.expected()
    assert_rows_in_their_buckets(table)
    snap = table.latest_snapshot()
    assert snap.commit_kind.value == "OVERWRITE" and snap.properties["rescale.buckets"] == "2->5"

    # Writers keep writing both kinds of partitions; each keeps its own bucket count.
    fill(table, model, rnd, commits=2)
    assert bucket_counts(table) == {PARTS[0]: {5}, PARTS[1]: {2}, PARTS[2]: {2}}
    assert rows(table.to_arrow()) == model.expected()
    assert_rows_in_their_buckets(table)

    plan = table.maintenance.plan_rescale(bucket=5)
    assert [u.spec for u in plan.units] == [{"dt": PARTS[1]}, {"dt": PARTS[2]}]
    result = table.maintenance.rescale(bucket=5)
    assert result.partitions_rescaled == 2 and result.partitions_skipped == 1
    table = catalog.get_table("db.t")
    assert bucket_counts(table) == {p: {5} for p in PARTS}
    assert table.schema.id == 1  # the option was already 5: no new schema
    assert rows(table.to_arrow()) == model.expected()
    assert_rows_in_their_buckets(table)
    # A second run has nothing left to do.
    assert table.maintenance.rescale(bucket=5).partitions_rescaled == 0
    # New partitions get the new count; scaling down works the same way.
    table.write_arrow(model.batch(rnd, 50, parts=["2024-02-01"]))
    assert bucket_counts(table)["2024-02-01"] == {5}
    table.maintenance.rescale(bucket=1)
    table = catalog.get_table("db.t")
    assert set(map(frozenset, bucket_counts(table).values())) == {frozenset({1})}
    assert rows(table.to_arrow()) == model.expected()


@pytest.mark.parametrize("engine", ["partial-update", "first-row", "aggregation"])
def test_rescale_keeps_the_merged_rows_of_every_engine(warehouse, engine):
    catalog = Catalog(warehouse)
    catalog.create_database("db")
    opts = {"bucket": "3", "merge-engine": engine}
    if engine == "aggregation":
        opts["fields.v.aggregate-function"] = "sum"
    table = catalog.create_table(
        "db.t", pa.schema([("k", pa.int64()), ("v", pa.int64()), ("s", pa.string())]), primary_keys=["k"], options=opts
    )
    rnd = random.Random(3)
    for _ in range(4):
        ks = rnd.sample(range(200), 80)
        table.write_arrow(
            pa.table(
                {
                    "k": ks,
                    "v": [rnd.choice([None, rnd.randint(0, 99)]) for _ in ks],
                    "s": [rnd.choice([None, "x", "y"]) for _ in ks],
                }
            )
        )
    before = table.to_arrow().sort_by("k")
    table.maintenance.rescale(bucket=7)
    table = catalog.get_table("db.t")
    assert table.to_arrow().sort_by("k").equals(before)
    assert {s.total_buckets for s in table.new_read_builder().new_scan().plan().splits()} == {7}
    # Files are at the top level: a later write merges on top of them correctly.
    table.write_arrow(pa.table({"k": [ks[0]], "v": [1], "s": ["z"]}))
    assert table.to_arrow().num_rows == before.num_rows + (0 if ks[0] in before.column("k").to_pylist() else 1)


def test_unpartitioned_and_append_tables(warehouse):
    catalog = Catalog(warehouse)
    catalog.create_database("db")
    pk = catalog.create_table(
        "db.pk", pa.schema([("k", pa.int32()), ("v", pa.string())]), primary_keys=["k"], options={"bucket": "4"}
    )
    pk.write_arrow(pa.table({"k": pa.array(range(1000), pa.int32()), "v": [str(i) for i in range(1000)]}))
    res = pk.maintenance.rescale(bucket=2)
    assert res.partitions[0].partition == "" and res.rows == 1000
    pk = catalog.get_table("db.pk")
    assert pk.to_arrow().sort_by("k").column("v").to_pylist() == [str(i) for i in range(1000)]
    assert_rows_in_their_buckets(pk)

    ap = catalog.create_table(
        "db.ap", pa.schema([("k", pa.int32()), ("v", pa.string())]), options={"bucket": "2", "bucket-key": "k"}
    )
    for _ in range(2):
        ap.write_arrow(pa.table({"k": pa.array([1, 2, 3, 3], pa.int32()), "v": ["a", "b", "c", "c"]}))
    ap.maintenance.rescale(bucket=3)
    ap = catalog.get_table("db.ap")
    assert sorted(ap.to_arrow().to_pylist(), key=lambda r: (r["k"], r["v"])) == sorted(
        [{"k": 1, "v": "a"}, {"k": 2, "v": "b"}, {"k": 3, "v": "c"}, {"k": 3, "v": "c"}] * 2,
        key=lambda r: (r["k"], r["v"]),
    )
    assert_rows_in_their_buckets(ap)


def test_dry_run_changes_nothing(warehouse):
    rnd, catalog, table, model = filled(warehouse, 2, commits=2)
    snaps = [s.id for s in table.snapshots()]
    res = table.maintenance.rescale(bucket=4, dry_run=True)
    assert res.dry_run and res.partitions_rescaled == 0
    assert sorted(p.partition for p in res.partitions) == [f"dt={p}" for p in PARTS]
    assert all(p.skipped == "dry run" and p.files_in > 0 for p in res.partitions)
    table = catalog.get_table("db.t")
    assert [s.id for s in table.snapshots()] == snaps and table.schema.id == 0 and table.options.bucket == 2


def test_refusals(warehouse):
    catalog, table = make_table(warehouse)
    table.write_arrow(Model().batch(random.Random(0), 20, deletes=False))
    for bad in (0, -1, "4", 2.5, True):
        with pytest.raises(InvalidOptionError, match="db.t"):
            table.maintenance.rescale(bucket=bad)
    with pytest.raises(InvalidOptionError, match="'day'"):
        table.maintenance.rescale(bucket=3, partitions=[{"day": "x"}])
    with pytest.raises(InvalidOptionError, match=r"every partition column \['dt'\]"):
        table.maintenance.rescale_partition(partition={}, bucket=3)
    dyn = catalog.create_table("db.dyn", pa.schema([("k", pa.int64()), ("v", pa.int64())]), primary_keys=["k"])
    dyn.write_arrow(pa.table({"k": [1], "v": [1]}))
    with pytest.raises(UnsupportedOptionError, match="db.dyn.*dynamic bucket mode.*cannot be rescaled"):
        dyn.maintenance.rescale(bucket=4)
    assert catalog.get_table("db.t").schema.id == 0 and catalog.get_table("db.dyn").schema.id == 0


def test_a_failed_verification_commits_nothing(warehouse, monkeypatch):
    """Fault injection: the rewrite loses one row; the checksum catches it before the commit."""
    rnd, catalog, table, model = filled(warehouse, 5, commits=2)
    from lake_core.maintenance import rescale as mod

    real = mod._write_bucket

    def lossy(table, ppath, b, chunks, level):
        def first_row_lost():
            for i, chunk in enumerate(chunks):
                yield chunk.slice(1) if i == 0 and b == 0 else chunk

        return real(table, ppath, b, first_row_lost(), level)

    monkeypatch.setattr(mod, "_write_bucket", lossy)
    snap = table.latest_snapshot().id
    with pytest.raises(RescaleVerificationError, match=f"dt={PARTS[0]}.*nothing was committed"):
        table.maintenance.rescale_partition(partition={"dt": PARTS[0]}, bucket=3)
    assert table.latest_snapshot().id == snap
    assert rows(table.to_arrow()) == model.expected()
    # The rejected files were removed again.
    import pathlib

    root = pathlib.Path(table.paths.root.replace("file://", ""))
    live = {e.file.file_name for e in table.manifest_store.live_entries(table.latest_snapshot())}
    assert {p.name for p in root.rglob("data-*")} == live


def test_writer_that_committed_after_the_rescale_read_makes_the_rescale_fail(warehouse):
    rnd, catalog, table, model = filled(warehouse, 6, commits=2)
    prepared = prepare_rescale_partition(table, partition={"dt": PARTS[0]}, bucket=4)
    assert isinstance(prepared, PreparedRescale)
    table.write_arrow(model.batch(rnd, 30, parts=[PARTS[0]]))
    with pytest.raises(CommitConflictError, match=f"dt={PARTS[0]}.*changed after snapshot 2.*nothing was lost"):
        commit_rescale_partition(table, prepared)
    assert rows(table.to_arrow()) == model.expected()
    assert bucket_counts(table)[PARTS[0]] == {2}
    # Re-running picks up the writer's rows.
    table.maintenance.rescale_partition(partition={"dt": PARTS[0]}, bucket=4)
    assert bucket_counts(table)[PARTS[0]] == {4}
    assert rows(table.to_arrow()) == model.expected()


def test_writer_still_using_the_old_count_gets_total_buckets_conflict(warehouse):
    from lake_core.errors import StaleTableError
    from lake_core.maintenance.rescale import set_bucket_option

    rnd, catalog, table, model = filled(warehouse, 7, commits=2)
    old_handle_writer = table.new_batch_write_builder()
    table = set_bucket_option(table, 3)  # the rescale starts: the option changes first
    # A writer opened after the option changed writes each partition with the count it has now.
    wb = table.new_batch_write_builder()
    w = wb.new_write()
    stale = Model()
    stale.rows = dict(model.rows)
    data = stale.batch(rnd, 40, parts=[PARTS[0], PARTS[1]], deletes=False)
    w.write_arrow(data)
    table.maintenance.rescale_partition(partition={"dt": PARTS[0]}, bucket=3)
    with pytest.raises(CommitConflictError, match=f"total buckets of partition.*{PARTS[0]}.*changed from 3 to 2"):
        wb.new_commit().commit(w.prepare_commit())
    table = catalog.get_table("db.t")
    assert rows(table.to_arrow()) == model.expected()  # nothing of the failed commit is visible
    # A handle opened before the option changed is refused outright.
    with pytest.raises(StaleTableError, match="db.t"):
        w2 = old_handle_writer.new_write()
        w2.write_arrow(data)
        old_handle_writer.new_commit().commit(w2.prepare_commit())
    # The re-run (a new writer) writes each partition with its current count.
    table.write_arrow(data)
    assert rows(table.to_arrow()) == stale.expected()
    assert bucket_counts(table) == {PARTS[0]: {3}, PARTS[1]: {2}, PARTS[2]: {2}}
    assert_rows_in_their_buckets(table)


def test_rescale_after_schema_changes(warehouse):
    from lake_core import SchemaChange

    rnd, catalog, table, model = filled(warehouse, 8, commits=2)
    catalog.alter_table("db.t", [SchemaChange.add_column("extra", pa.int32()), SchemaChange.rename_column("v", "val")])
    table = catalog.get_table("db.t")
    before = table.to_arrow().sort_by([("dt", "ascending"), ("id", "ascending"), ("name", "ascending")])
    table.maintenance.rescale(bucket=3)
    table = catalog.get_table("db.t")
    after = table.to_arrow().sort_by([("dt", "ascending"), ("id", "ascending"), ("name", "ascending")])
    assert after.equals(before) and after.column_names == ["dt", "id", "name", "val", "op", "extra"]
    assert {f.schema_id for s in table.new_read_builder().new_scan().plan().splits() for f in s.files} == {2}
