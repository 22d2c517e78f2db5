"""Deletion vectors: Paimon's exact bytes, what compaction marks, reads, and the index files kept
consistent by compaction, expiry, orphan removal and overwrite; switching a merge-on-read table on."""

from __future__ import annotations

import datetime
import os
import zlib

import numpy as np
import pyarrow as pa
import pytest

from lake_core import Catalog
from lake_core.deletion_vectors import DeletionVector
from lake_core.deletion_vectors.index_file import DV_INDEX, decode_index_file, encode_index_file
from lake_core.deletion_vectors.maintainer import load_vectors
from lake_core.deletion_vectors.roaring import deserialize32
from lake_core.errors import FormatError, UnsupportedOptionError
from lake_core.schema.change import SchemaChange

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])


# -- bytes ---------------------------------------------------------------------------------------
def test_index_file_bytes_are_paimons_worked_example():
    # rows 1, 3, 5, 7 of one data file deleted: the 37-byte file Java's DeletionVectorsIndexFile writes
    data, metas = encode_index_file({"data-x-0.parquet": DeletionVector.of([7, 1, 5, 3])})
    assert data.hex() == ("010000001c5e43f2d03a3000000100000000000300100000000100030005000700a9151f29")
    assert (metas[0].offset, metas[0].length, metas[0].cardinality) == (1, 28, 4)
    assert zlib.crc32(data[5:33]) == 0xA9151F29


@pytest.mark.parametrize("bitmap64", [False, True])
@pytest.mark.parametrize("n", [0, 1, 4096, 4097, 70_000])
def test_round_trip_array_and_bitmap_containers(bitmap64, n):
    rng = np.random.default_rng(n)
    pos = rng.choice(5_000_000, n, replace=False) if n != 4097 else np.arange(4097)  # one full-ish container
    data, metas = encode_index_file({"a": DeletionVector.of(pos, bitmap64=bitmap64)})
    if n == 0:
        assert metas == ()
        return
    got = decode_index_file(data, metas, "test")["a"]
    assert np.array_equal(got.positions, np.unique(pos).astype(np.uint64)) and got.bitmap64 == bitmap64


def test_reads_run_containers_java_writes_after_run_optimize():
    # cookie 12347 with 1 container (run flag set): key 0, card-1 = 9, runs [10..14] and [100..104]
    buf = (
        np.array([12347], "<u4").tobytes()
        + bytes([1])
        + np.array([0, 9], "<u2").tobytes()
        + np.array([2, 10, 4, 100, 4], "<u2").tobytes()
    )
    values, end = deserialize32(buf)
    assert values.tolist() == [10, 11, 12, 13, 14, 100, 101, 102, 103, 104] and end == len(buf)


def test_corrupt_vector_is_refused():
    data, metas = encode_index_file({"a": DeletionVector.of([1, 2, 3])})
    bad = data[:-1] + bytes([data[-1] ^ 1])
    with pytest.raises(FormatError, match="checksum"):
        decode_index_file(bad, metas, "index-1")


# -- tables --------------------------------------------------------------------------------------
def _table(tmp_path, name="db.t", schema=SCHEMA, **opts):
    cat = Catalog(f"file://{tmp_path}")
    cat.create_database("db")
    return cat, cat.create_table(
        name, schema=schema, primary_keys=["k"], options={"bucket": "1", "deletion-vectors.enabled": "true", **opts}
    )


def _dv_entries(t):
    return [e for e in t.manifest_store.index_entries(t.latest_snapshot()) if e.index_type == DV_INDEX]


def _rows(keys, tag):
    return pa.table({"k": keys, "v": [f"{tag}{k}" for k in keys]}, schema=SCHEMA)


def test_update_marks_the_old_row_and_reads_need_no_merge(tmp_path):
    cat, t = _table(tmp_path)
    t.write_arrow(_rows(list(range(10)), "a"))
    t.write_arrow(_rows([2, 5, 7], "b"))
    t = cat.get_table("db.t")
    entries = _dv_entries(t)
    assert len(entries) == 1 and entries[0].row_count == 1  # one vector, for the first file
    live = {e.file.file_name: e.file for e in t.manifest_store.live_entries(t.latest_snapshot())}
    assert all(f.level > 0 for f in live.values())  # writes were compacted up at once
    ((name, dv),) = load_vectors(t, entries).items()
    assert live[name].row_count == 10 and dv.positions.tolist() == [2, 5, 7]  # keys 2, 5, 7 sit at 2, 5, 7
    got = {r["k"]: r["v"] for r in t.to_arrow().to_pylist()}
    assert got == {k: ("b" if k in (2, 5, 7) else "a") + str(k) for k in range(10)}


def test_delete_marks_the_row_and_stores_no_retraction(tmp_path):
    schema = SCHEMA.append(pa.field("op", pa.string()))
    cat, t = _table(tmp_path, schema=schema, **{"rowkind.field": "op"})
    t.write_arrow(pa.table({"k": [1, 2, 3], "v": ["a", "b", "c"], "op": ["+I"] * 3}, schema=schema))
    t.write_arrow(pa.table({"k": [2], "v": [None], "op": ["-D"]}, schema=schema))
    t = cat.get_table("db.t")
    assert sorted(t.to_arrow()["k"].to_pylist()) == [1, 3]
    live = [e.file for e in t.manifest_store.live_entries(t.latest_snapshot())]
    assert sum(f.row_count for f in live) == 3  # the -D was dropped at compaction, the old row masked
    assert sum(dv.cardinality for dv in load_vectors(t, _dv_entries(t)).values()) == 1


def test_delete_and_write_only_level0_is_invisible_until_compacted(tmp_path):
    cat, t = _table(tmp_path, **{"write-only": "true"})
    t.write_arrow(_rows(list(range(3000)), "a"))
    assert cat.get_table("db.t").to_arrow().num_rows == 0  # level 0 only: invisible, as in Java
    t.maintenance.compact()
    t = cat.get_table("db.t")
    assert sorted(t.to_arrow()["k"].to_pylist()) == list(range(3000))
    t.write_arrow(_rows([2, 4000], "b"))
    t.maintenance.compact()  # the small level-0 file is forced up alone; key 2 found below and masked
    t = cat.get_table("db.t")
    want = {k: f"a{k}" for k in range(3000)}
    want.update({2: "b2", 4000: "b4000"})
    assert {r["k"]: r["v"] for r in t.to_arrow().to_pylist()} == want
    assert len(_dv_entries(t)) == 1


def test_full_compaction_drops_vectors_and_expiry_orphans_keep_index_files_consistent(tmp_path):
    cat, t = _table(
        tmp_path, **{"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1", "write-only": "true"}
    )
    t.write_arrow(_rows(list(range(20)), "a"))
    t.maintenance.compact()
    for i in range(3):
        t.write_arrow(_rows([i, 10 + i], f"u{i}"))
        t.maintenance.compact()
    t = cat.get_table("db.t")
    assert _dv_entries(t)
    want = {r["k"]: r["v"] for r in t.to_arrow().to_pylist()}
    index_dir = tmp_path / "db.db" / "t" / "index"
    t.maintenance.expire_snapshots(retain_min=1, retain_max=1)
    t.maintenance.remove_orphan_files(older_than=datetime.timedelta(0), force=True)
    on_disk = set(os.listdir(index_dir))
    listed = {e.file_name for e in cat.get_table("db.t").manifest_store.index_entries(t.latest_snapshot())}
    assert {n for n in on_disk if not n.startswith("index-manifest")} == listed  # nothing dangles, nothing lost
    t.maintenance.compact(full=True)
    t = cat.get_table("db.t")
    assert _dv_entries(t) == []  # every file rewritten: no vector left, the old index file DELETEd
    assert {r["k"]: r["v"] for r in t.to_arrow().to_pylist()} == want


def test_overwrite_drops_the_partitions_vectors(tmp_path):
    cat, t = _table(tmp_path)
    t.write_arrow(_rows([1, 2, 3], "a"))
    t.write_arrow(_rows([2], "b"))
    assert _dv_entries(cat.get_table("db.t"))
    cat.get_table("db.t").write_arrow(_rows([9], "c"), overwrite=True)
    t = cat.get_table("db.t")
    assert _dv_entries(t) == [] and t.to_arrow().to_pylist() == [{"k": 9, "v": "c9"}]


def test_turning_on_for_a_merge_on_read_table(tmp_path):
    cat = Catalog(f"file://{tmp_path}")
    cat.create_database("db")
    t = cat.create_table(
        "db.t", schema=SCHEMA, primary_keys=["k"], options={"bucket": "1", "num-sorted-run.compaction-trigger": "2"}
    )
    for i in range(5):  # several levels holding versions of the same keys
        t.write_arrow(_rows(list(range(i, i + 6)), f"w{i}"))
    want = {r["k"]: r["v"] for r in cat.get_table("db.t").to_arrow().to_pylist()}
    cat.alter_table("db.t", [SchemaChange.set_option("deletion-vectors.enabled", "true")])
    t = cat.get_table("db.t")
    assert {r["k"]: r["v"] for r in t.to_arrow().to_pylist()} == want  # no vectors yet: buckets are merged
    t.write_arrow(_rows([0, 3], "x"))  # the first DV compaction of a bucket without vectors is full
    want.update({0: "x0", 3: "x3"})
    t = cat.get_table("db.t")
    assert {r["k"]: r["v"] for r in t.to_arrow().to_pylist()} == want
    t.write_arrow(_rows([1], "y"))
    want[1] = "y1"
    assert {r["k"]: r["v"] for r in cat.get_table("db.t").to_arrow().to_pylist()} == want


def test_first_row_with_vectors_is_refused(tmp_path):
    with pytest.raises(UnsupportedOptionError, match="first-row"):
        _table(tmp_path, **{"merge-engine": "first-row"})


def test_rescale_keeps_rows_and_drops_the_replaced_vectors(tmp_path):
    cat, t = _table(tmp_path)
    t.write_arrow(_rows(list(range(50)), "a"))
    t.write_arrow(_rows([3, 30], "b"))
    assert _dv_entries(cat.get_table("db.t"))
    want = {r["k"]: r["v"] for r in cat.get_table("db.t").to_arrow().to_pylist()}
    cat.get_table("db.t").maintenance.rescale(bucket=3)
    t = cat.get_table("db.t")
    assert _dv_entries(t) == []  # every vector named a file the rescale replaced
    assert {r["k"]: r["v"] for r in t.to_arrow().to_pylist()} == want
    t.write_arrow(_rows([3], "c"))
    want[3] = "c3"
    assert {r["k"]: r["v"] for r in cat.get_table("db.t").to_arrow().to_pylist()} == want


def test_a_level0_file_without_retractions_moves_up_unwritten_and_masks_the_older_rows(tmp_path):
    """As Java's lookup rewriter upgrades a deletion-vector table's level-0 file that holds no
    retraction: same file, higher level, and only the older rows of its keys are marked."""
    cat, t = _table(tmp_path)
    t.write_arrow(_rows(list(range(100)), "a"))
    t = cat.get_table("db.t")
    (first,) = [e.file for e in t.manifest_store.live_entries(t.latest_snapshot())]
    assert first.level > 0 and first.delete_row_count == 0  # the first write's file, moved up as it is
    files_before = set(os.listdir(tmp_path / "db.db" / "t" / "bucket-0"))
    t.write_arrow(_rows([3, 50, 200], "b"))
    t = cat.get_table("db.t")
    live = {e.file.file_name: e.file for e in t.manifest_store.live_entries(t.latest_snapshot())}
    assert first.file_name in live
    new = [f for name, f in live.items() if name != first.file_name]
    assert len(new) == 1 and new[0].level > 0 and new[0].row_count == 3  # upgraded, not merged into others
    data_files_written = set(os.listdir(tmp_path / "db.db" / "t" / "bucket-0")) - files_before
    assert {n for n in data_files_written if n.startswith("data-")} == {new[0].file_name}  # written once
    ((name, dv),) = load_vectors(t, _dv_entries(t)).items()
    assert name == first.file_name and dv.positions.tolist() == [3, 50]
    want = {k: f"a{k}" for k in range(100)} | {3: "b3", 50: "b50", 200: "b200"}
    assert {r["k"]: r["v"] for r in t.to_arrow().to_pylist()} == want


def test_a_level0_file_with_retractions_is_rewritten_so_raw_reads_find_none(tmp_path):
    schema = SCHEMA.append(pa.field("op", pa.string()))
    cat, t = _table(tmp_path, schema=schema, **{"rowkind.field": "op"})
    t.write_arrow(pa.table({"k": [1, 2, 3], "v": ["a", "b", "c"], "op": ["+I"] * 3}, schema=schema))
    t.write_arrow(pa.table({"k": [2, 9], "v": [None, "z"], "op": ["-D", "+I"]}, schema=schema))
    t = cat.get_table("db.t")
    live = [e.file for e in t.manifest_store.live_entries(t.latest_snapshot())]
    assert all(f.level > 0 and f.delete_row_count == 0 for f in live)  # the -D never left level 0
    assert sorted(t.to_arrow()["k"].to_pylist()) == [1, 3, 9]


def test_lookups_probe_cached_keys_and_see_each_commits_vectors(tmp_path):
    """Later commits find their keys in the process's cache of file keys (no Parquet read of the
    older files), and a row masked by an earlier commit is not found again."""
    from lake_core.compaction.lookup_cache import LOOKUP_KEYS

    LOOKUP_KEYS.clear()
    cat, t = _table(tmp_path)
    t.write_arrow(_rows(list(range(1000)), "a"))
    t.write_arrow(_rows([10, 20], "b"))
    assert LOOKUP_KEYS.cached_bytes > 0  # the first file's keys, read once
    t.write_arrow(_rows([10, 30], "c"))  # 10 is masked in the first file: found in the second one
    t = cat.get_table("db.t")
    want = {k: f"a{k}" for k in range(1000)} | {10: "c10", 20: "b20", 30: "c30"}
    assert {r["k"]: r["v"] for r in t.to_arrow().to_pylist()} == want
    stored = sum(e.file.row_count for e in t.manifest_store.live_entries(t.latest_snapshot()))
    masked = sum(dv.cardinality for dv in load_vectors(t, _dv_entries(t)).values())
    assert stored - masked == 1000  # every key live exactly once
    LOOKUP_KEYS.clear()
    assert LOOKUP_KEYS.cached_bytes == 0


def test_the_lookup_cache_stays_within_its_budget():
    from lake_core.compaction.lookup_cache import LookupKeyCache
    from lake_core.manifest.metadata import DataFileMeta

    cache = LookupKeyCache(max_bytes=3 * 8 * 1000)
    reads = []

    def table(i):
        def read():
            reads.append(i)
            return pa.table({"k": np.arange(1000, dtype=np.int64) + i})

        return read

    metas = [DataFileMeta.__new__(DataFileMeta) for _ in range(5)]
    for i, m in enumerate(metas):
        object.__setattr__(m, "file_size", 100 + i)
        cache.get(path=f"f{i}", f=m, schema_id=0, columns=["k"], read=table(i))
    assert cache.cached_bytes <= 3 * 8 * 1000
    cache.get(path="f4", f=metas[4], schema_id=0, columns=["k"], read=table(4))  # recent: still cached
    cache.get(path="f0", f=metas[0], schema_id=0, columns=["k"], read=table(0))  # evicted: read again
    assert reads == [0, 1, 2, 3, 4, 0]


def _reads_per_commit(path, buckets: int, monkeypatch) -> list[tuple[int, int]]:
    """(index manifest reads, snapshot hint reads) of each of three update commits to a DV table
    of ``buckets`` buckets, every bucket written (and compacted) each time; checks the rows."""
    from lake_core.io.fileio import FileIO

    cat = Catalog(f"file://{path}")
    cat.create_database("db")
    t = cat.create_table(
        "db.t", schema=SCHEMA, primary_keys=["k"], options={"bucket": str(buckets), "deletion-vectors.enabled": "true"}
    )
    model = {k: "a" for k in range(400)}
    t.write_arrow(pa.table({"k": list(model), "v": list(model.values())}, schema=SCHEMA))
    reads: list[str] = []
    real = FileIO.read_bytes
    monkeypatch.setattr(FileIO, "read_bytes", lambda self, p, *a, **k: reads.append(p) or real(self, p, *a, **k))
    out = []
    for i in range(3):
        keys = list(range(i, 400, 3))
        t.write_arrow(pa.table({"k": keys, "v": [f"u{i}"] * len(keys)}, schema=SCHEMA))
        model.update({k: f"u{i}" for k in keys})
        out.append(
            (
                sum("/manifest/index-manifest-" in p for p in reads),
                sum(p.endswith("/snapshot/LATEST") for p in reads),
            )
        )
        reads.clear()
    monkeypatch.undo()
    assert len({m.bucket for m in t.manifest_store.delta_entries(t.latest_snapshot())}) == buckets
    assert {r["k"]: r["v"] for r in t.to_arrow().to_pylist()} == model
    return out


def test_a_commit_reads_the_latest_snapshot_and_its_index_manifest_once_for_all_buckets(tmp_path, monkeypatch):
    """Each bucket's inline compaction extends the deletion vectors of the latest snapshot: one read
    of the snapshot hint and of the index manifest serves every bucket of the commit (on object
    storage each is a round trip), so eight buckets cost the reads of one."""
    one = _reads_per_commit(tmp_path / "one", 1, monkeypatch)
    eight = _reads_per_commit(tmp_path / "eight", 8, monkeypatch)
    assert [hints for _m, hints in eight] == [hints for _m, hints in one], (one, eight)
    assert all(manifests <= 1 for manifests, _hints in one + eight), (one, eight)  # at most once
