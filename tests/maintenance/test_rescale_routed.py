"""The routed rescale: one old bucket fanned out (1 -> N) or k old buckets merged into each new
one (8 -> 2, N -> 1): the old buckets' merged rows are cut by new bucket as they stream, or merged
as sorted runs, with no spill; every row is kept, lands in its bucket, and every new file is one
sorted run in Java's key order. A failed check commits nothing and leaves no file; rows that are
not where their old bucket count puts them send the partition through the general rewrite."""

from __future__ import annotations

import logging
import math
import pathlib
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lake_core import Catalog
from lake_core.format.float_order import java_order_key
from lake_core.maintenance import rescale as mod
from lake_core.maintenance.rescale import RescaleVerificationError

from .rescale_helpers import PARTS, Model, assert_rows_in_their_buckets, bucket_counts, make_table, rows


def _root(table) -> pathlib.Path:
    return pathlib.Path(table.paths.root.replace("file://", ""))


def _live_files(table) -> dict[str, int]:
    """File name -> its bucket, of the live files."""
    return {e.file.file_name: e.bucket for e in table.manifest_store.live_entries(table.latest_snapshot())}


def assert_files_sorted(table, keys) -> None:
    """Every live data file holds its keys in strictly increasing Java order (one sorted run)."""
    live = _live_files(table)
    for path in _root(table).rglob("data-*"):
        if path.name not in live:
            continue
        t = pq.read_table(path, columns=list(keys))
        got = [java_order_key(k) for k in zip(*(t[k].to_pylist() for k in keys))]
        assert all(a < b for a, b in zip(got, got[1:])), path.name


@pytest.fixture
def routed_only(monkeypatch):
    """Fail the test if a rescale takes the general (spill) rewrite."""

    def general(*_a, **_k):
        raise AssertionError("the general rewrite ran")

    monkeypatch.setattr(mod, "_rewrite_streamed", general)


def test_fan_out_and_fan_in_keep_every_row_sorted(warehouse, routed_only):
    rnd = random.Random(11)
    catalog, table = make_table(warehouse, bucket=1)
    model = Model()
    for _ in range(4):
        table.write_arrow(model.batch(rnd, 200))  # with deletes: the merged read drops them
    for to in (8, 2, 1, 3):  # 1 -> 8 fan out, 8 -> 2 and 2 -> 1 fan in, 1 -> 3 fan out
        result = table.maintenance.rescale(bucket=to)
        assert result.partitions_rescaled == len(PARTS)
        table = catalog.get_table("db.t")
        assert bucket_counts(table) == {p: {to} for p in PARTS}
        assert rows(table.to_arrow()) == model.expected()
        assert_rows_in_their_buckets(table)
        assert_files_sorted(table, ["id", "name"])
        # each new bucket is one run: one file (a small table) per non-empty bucket
        per_bucket: dict[tuple, int] = {}
        for e in table.manifest_store.live_entries(table.latest_snapshot()):
            per_bucket[(e.partition, e.bucket)] = per_bucket.get((e.partition, e.bucket), 0) + 1
        assert set(per_bucket.values()) == {1}
        # a writer keeps writing on top of the rescaled files
        table.write_arrow(model.batch(rnd, 60))
        assert rows(table.to_arrow()) == model.expected()


def test_float_keys_keep_java_order(warehouse, routed_only):
    catalog = Catalog(warehouse)
    catalog.create_database("db")
    schema = pa.schema([pa.field("k", pa.float64(), nullable=False), ("v", pa.int64())])
    table = catalog.create_table("db.f", schema, primary_keys=["k"], options={"bucket": "1"})
    specials = [0.0, -0.0, math.nan, math.inf, -math.inf, 1e-300, -1e-300, 2.5, -2.5]
    rnd = random.Random(5)
    keys = specials + [rnd.uniform(-1e6, 1e6) for _ in range(300)]
    table.write_arrow(pa.table({"k": keys, "v": list(range(len(keys)))}, schema=schema))
    table.write_arrow(pa.table({"k": keys[::3], "v": [-1] * len(keys[::3])}, schema=schema))
    before = table.to_arrow()
    for to in (4, 1, 8):
        table.maintenance.rescale(bucket=to)
        table = catalog.get_table("db.f")
        after = table.to_arrow()
        assert sorted(map(repr, after.to_pylist())) == sorted(map(repr, before.to_pylist()))
        assert_rows_in_their_buckets(table)
        assert_files_sorted(table, ["k"])


def test_append_table_fans_out(warehouse, routed_only):
    catalog = Catalog(warehouse)
    catalog.create_database("db")
    ap = catalog.create_table(
        "db.ap", pa.schema([("k", pa.int32()), ("v", pa.string())]), options={"bucket": "1", "bucket-key": "k"}
    )
    data = pa.table({"k": pa.array([i % 50 for i in range(400)], pa.int32()), "v": [str(i) for i in range(400)]})
    for _ in range(2):
        ap.write_arrow(data)
    ap.maintenance.rescale(bucket=4)
    ap = catalog.get_table("db.ap")
    assert sorted(ap.to_arrow().to_pylist(), key=repr) == sorted(data.to_pylist() * 2, key=repr)
    assert_rows_in_their_buckets(ap)


def test_a_routed_rewrite_that_loses_a_row_commits_nothing(warehouse, monkeypatch):
    """Fault injection: one new bucket's writer drops a row; the checksum catches it, every new
    file of every route is deleted and nothing is committed."""
    rnd = random.Random(12)
    catalog, table = make_table(warehouse, bucket=1)
    model = Model()
    for _ in range(2):
        table.write_arrow(model.batch(rnd, 150))
    real = mod._BucketRun.write
    lost = []

    def lossy(self, rows):
        if self.b == 4 and not lost and rows.num_rows:
            lost.append(1)
            rows = rows.slice(1)
        return real(self, rows)

    monkeypatch.setattr(mod._BucketRun, "write", lossy)
    snap = table.latest_snapshot().id
    with pytest.raises(RescaleVerificationError, match=f"dt={PARTS[0]}.*nothing was committed"):
        table.maintenance.rescale_partition(partition={"dt": PARTS[0]}, bucket=8)
    assert lost and table.latest_snapshot().id == snap
    assert rows(table.to_arrow()) == model.expected()
    assert {p.name for p in _root(table).rglob("data-*")} == set(_live_files(table))  # no new file left


def test_rows_outside_their_old_bucket_take_the_general_rewrite(warehouse, monkeypatch, caplog):
    """A bucket function under which the old files are not bucketed (here: shifted by one) breaks
    the routing of 4 -> 2; the routed rewrite stops, deletes what it wrote, and the general one
    rewrites the partition, keeping every row."""
    rnd = random.Random(13)
    catalog, table = make_table(warehouse, bucket=4)
    model = Model()
    for _ in range(2):
        table.write_arrow(model.batch(rnd, 150))
    real = mod._target_buckets
    monkeypatch.setattr(mod, "_target_buckets", lambda t, r, n: (real(t, r, n) + 1) % n)
    on_disk = {p.name for p in _root(table).rglob("data-*")}
    general = []
    real_general = mod._rewrite_streamed
    monkeypatch.setattr(mod, "_rewrite_streamed", lambda *a: general.append(1) or real_general(*a))
    with caplog.at_level(logging.WARNING, logger=mod.__name__):
        result = table.maintenance.rescale_partition(partition={"dt": PARTS[0]}, bucket=2)
    assert general == [1] and result.rows == sum(1 for k in model.rows if k[0] == PARTS[0])
    assert "hash to new buckets outside" in caplog.text and "sorted spill runs instead" in caplog.text
    table = catalog.get_table("db.t")
    assert rows(table.to_arrow()) == model.expected()
    # nothing of the routed attempt is left: the files are those before (kept until expiry) and the new ones
    assert {p.name for p in _root(table).rglob("data-*")} == on_disk | set(_live_files(table))


@pytest.mark.parametrize("function", ["mod", "hive"])
def test_other_bucket_functions_route(warehouse, routed_only, function):
    from lake_core.bucket.assign import assign_buckets

    catalog = Catalog(warehouse)
    catalog.create_database("db")
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])
    table = catalog.create_table(
        "db.m", schema, primary_keys=["k"], options={"bucket": "1", "bucket-function.type": function}
    )
    rnd = random.Random(17)
    keys = rnd.sample(range(-(10**12), 10**12), 500) + [-(2**63), 2**63 - 1, -1, 0]
    table.write_arrow(pa.table({"k": keys, "v": [str(k) for k in keys]}, schema=schema))
    table.write_arrow(pa.table({"k": keys[::4], "v": ["u"] * len(keys[::4])}, schema=schema))
    before = sorted(table.to_arrow().to_pylist(), key=lambda r: r["k"])
    for to in (6, 3, 1, 4):
        table.maintenance.rescale(bucket=to)
        table = catalog.get_table("db.m")
        assert sorted(table.to_arrow().to_pylist(), key=lambda r: r["k"]) == before
        reader = table.new_read_builder().new_read()
        for split in table.new_read_builder().new_scan().plan().splits():
            t = reader.read_split(split)
            assert (assign_buckets([t["k"]], [pa.int64()], to, function) == split.bucket).all()
        assert_files_sorted(table, ["k"])


def test_a_read_failing_in_the_reading_thread_commits_nothing(warehouse, monkeypatch):
    """A partition alone in its route (1 -> 4) is read in a thread of its own: a read that fails
    there fails the rescale in the caller, and the files already written are removed."""
    rnd = random.Random(14)
    catalog, table = make_table(warehouse, bucket=1)
    model = Model()
    for _ in range(2):
        table.write_arrow(model.batch(rnd, 150))
    from lake_core.read.split_read import SplitRead

    real = SplitRead.iter_split
    calls = []

    def failing(self, split):
        for i, chunk in enumerate(real(self, split)):
            if split.total_buckets == 1:  # the rescale's read of the old bucket, not its read-back
                calls.append(i)
                yield chunk.slice(0, chunk.num_rows // 2)
                raise OSError("disk gone")
            yield chunk

    monkeypatch.setattr(SplitRead, "iter_split", failing)
    monkeypatch.setattr(mod, "_rewrite_streamed", lambda *a: pytest.fail("the general rewrite ran"))
    snap = table.latest_snapshot().id
    with pytest.raises(OSError, match="disk gone"):
        table.maintenance.rescale_partition(partition={"dt": PARTS[0]}, bucket=4)
    monkeypatch.setattr(SplitRead, "iter_split", real)
    assert calls and table.latest_snapshot().id == snap
    assert rows(table.to_arrow()) == model.expected()
    assert {p.name for p in _root(table).rglob("data-*")} == set(_live_files(table))
