"""First-row compaction asks whether a key is already stored in the bucket's other levels. The
keys of those levels are read alongside the merge, one chunk per level at a time, so a commit to a
bucket many times the read batch holds (levels x batch) keys, not the bucket; the table still
equals the dict model and the changelog holds exactly the new first rows."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from lake_core import ROW_KIND, Catalog
from lake_core.format.float_order import java_order_key
from lake_core.lsm import key_probe
from lake_core.lsm.key_probe import KeyBlock, SortedKeyProbe
from lake_core.lsm.merge_stream import key_at

SCHEMA = pa.schema(
    [pa.field("k", pa.int64(), nullable=False), pa.field("n", pa.string(), nullable=False), ("v", pa.int64())]
)
BATCH = 16


def _sorted_table(keys, names=("s", "i")) -> pa.Table:
    keys = sorted({java_order_key(k): k for k in keys}.values(), key=java_order_key)  # -0.0 != 0.0
    return pa.table({n: pa.array([k[j] for k in keys]) for j, n in enumerate(names)})


def _chunked(t: pa.Table, size: int):
    return (t.slice(i, size) for i in range(0, t.num_rows, size))


def _blocks(t: pa.Table, names, block: int, chunk: int, reads: list) -> list[KeyBlock]:
    """``t`` as blocks of ``block`` rows (every other one splittable into halves); ``reads`` gets
    the key range of every block read."""

    def make(part: pa.Table, splittable: bool) -> KeyBlock:
        lo, hi = key_at(part, names, 0), key_at(part, names, part.num_rows - 1)

        def read():
            reads.append((lo, hi))
            return _chunked(part, chunk)

        def split():
            half = part.num_rows // 2
            return [make(part.slice(0, half), False), make(part.slice(half), False)] if half else None

        return KeyBlock(lo, hi, read, split if splittable else None)

    return [make(t.slice(i, block), (i // block) % 2 == 0) for i in range(0, t.num_rows, block)]


key_st = st.tuples(st.sampled_from(["a", "b", "é", "zz"]), st.integers(-4, 4))


@settings(max_examples=80, deadline=None)
@given(
    stored=st.lists(st.lists(key_st, max_size=20), max_size=4),
    probed=st.lists(key_st, max_size=40),
    cuts=st.lists(st.integers(1, 8), min_size=1, max_size=8),
    chunk=st.integers(1, 5),
    block=st.integers(1, 9),
)
def test_probe_answers_membership_for_ascending_chunks(stored, probed, cuts, chunk, block):
    reads = []
    runs = [_blocks(_sorted_table(r), ["s", "i"], block, chunk, reads) for r in stored]
    everything = {k for r in stored for k in r}
    probe = SortedKeyProbe(runs, ["s", "i"])
    keys = _sorted_table(probed)
    start, i = 0, 0
    while start < keys.num_rows:  # ascending chunks of varying size, as a merge hands them over
        part = keys.slice(start, cuts[i % len(cuts)])
        got = probe.present(part)
        want = [k in everything for k in zip(part["s"].to_pylist(), part["i"].to_pylist())]
        assert got.tolist() == want
        start += part.num_rows
        i += 1
    # a block is read only when a probed key falls in its range
    probed_keys = sorted(set(probed), key=java_order_key)
    for lo, hi in reads:
        assert any(java_order_key(lo) <= java_order_key(k) <= java_order_key(hi) for k in probed_keys)


@settings(max_examples=60, deadline=None)
@given(
    stored=st.lists(
        st.lists(st.sampled_from([float("-inf"), -1.5, -0.0, 0.0, 2.0, float("nan")]), max_size=6), max_size=3
    ),
    probed=st.lists(st.sampled_from([-1.5, -0.0, 0.0, 2.0, float("nan"), 7.0]), max_size=6),
)
def test_probe_compares_float_keys_as_java(stored, probed):
    # Double.compare: -0.0 and 0.0 are two keys, every NaN is one key
    runs = [_blocks(_sorted_table([(v,) for v in r], ("f",)), ["f"], 3, 2, []) for r in stored]
    everything = {java_order_key((v,)) for r in stored for v in r}
    keys = _sorted_table([(v,) for v in probed], ("f",))
    got = SortedKeyProbe(runs, ["f"]).present(keys)
    assert got.tolist() == [java_order_key((v,)) in everything for v in keys["f"].to_pylist()]


def _commit(rng: np.random.Generator, i: int, n: int, key_space: int) -> pa.Table:
    k = rng.integers(0, key_space, n)
    return pa.table(
        {"k": pa.array(k, pa.int64()), "n": [f"n{x % 3}" for x in k], "v": pa.array(np.full(n, i), pa.int64())},
        schema=SCHEMA,
    )


def test_first_row_commits_probe_the_bucket_a_batch_at_a_time(warehouse, monkeypatch):
    largest = {"stored": 0, "calls": 0, "read": 0}
    member = SortedKeyProbe._member

    def spy(self, keys, stored):
        largest["stored"] = max(largest["stored"], stored.num_rows)
        largest["calls"] += 1
        largest["read"] += stored.num_rows
        return member(self, keys, stored)

    monkeypatch.setattr(key_probe.SortedKeyProbe, "_member", spy)
    cat = Catalog(warehouse)
    cat.create_database("db")
    t = cat.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["k", "n"],
        options={
            "bucket": "1",
            "merge-engine": "first-row",
            "changelog-producer": "lookup",
            "read.batch-size": str(BATCH),
            "parquet.block.size": "2048",
        },
    )
    rng = np.random.default_rng(5)
    model: dict[tuple, int] = {}
    for i, n in enumerate((3000, 200, 200, 40, 40, 400)):
        rows = _commit(rng, i, n, 6000)
        new = {}
        for r in rows.to_pylist():
            key = (r["k"], r["n"])
            if key not in model and key not in new:
                new[key] = r["v"]
        model.update(new)
        prev = t.latest_snapshot().id if t.latest_snapshot() else 0
        t.write_arrow(rows)
        got = {(r["k"], r["n"]): r["v"] for r in t.to_arrow().to_pylist()}
        assert got == model
        cl = t.to_arrow(incremental_between=(prev, t.latest_snapshot().id), scan_mode="changelog")
        assert set(cl[ROW_KIND].to_pylist()) <= {"+I"}
        assert {(r["k"], r["n"]): r["v"] for r in cl.to_pylist()} == new
    files = [e.file for e in t.manifest_store.live_entries(t.latest_snapshot())]
    assert sum(f.row_count for f in files) == len(model) > 10 * BATCH * len({f.level for f in files})
    # every probe compared a merged chunk with one stored chunk: never the bucket's keys at once
    assert largest["calls"] > 0 and largest["stored"] <= BATCH

    # a commit of a few keys reads the stored keys of the row groups those keys fall in, not the
    # bucket: the cost of a commit grows with its size
    largest["read"] = 0
    rows = pa.table(
        {
            "k": pa.array([5, 1700, 1701, 4444, 9999], pa.int64()),
            "n": ["n2", "n1", "n2", "n0", "n0"],
            "v": pa.array([9] * 5, pa.int64()),
        },
        schema=SCHEMA,
    )
    for r in rows.to_pylist():
        model.setdefault((r["k"], r["n"]), r["v"])
    t.write_arrow(rows)
    assert {(r["k"], r["n"]): r["v"] for r in t.to_arrow().to_pylist()} == model
    bucket = t.fileio.local_path(t.paths.bucket_dir("", 0))
    groups = [pq.ParquetFile(os.path.join(bucket, f.file_name)).metadata for f in files]
    largest_group = max(md.row_group(g).num_rows for md in groups for g in range(md.num_row_groups))
    stored = sum(f.row_count for f in files)
    n_levels = len({f.level for f in files})
    assert 0 < largest["read"] <= 5 * largest_group * n_levels < stored / 2, (largest["read"], largest_group, stored)
