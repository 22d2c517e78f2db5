"""The chunked k-way merge gives exactly the one-shot merge, for any chunk size and key shape,
and a compaction reading files in tiny chunks leaves the table as a whole-bucket merge would."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lake_core import Catalog
from lake_core.format.float_order import java_order_key
from lake_core.kv.system_fields import KIND, SEQ
from lake_core.lsm.merge_stream import merge_sorted_runs

runs_strategy = st.lists(
    st.lists(st.tuples(st.sampled_from(["a", "b", "é", "zz"]), st.integers(-5, 5)), max_size=25, unique=True),
    min_size=1,
    max_size=5,
)


def _run_table(keys, seq_start):
    keys = sorted(keys)
    return pa.table(
        {
            "s": pa.array([k[0] for k in keys], pa.string()),
            "i": pa.array([k[1] for k in keys], pa.int64()),
            SEQ: pa.array(np.arange(seq_start, seq_start + len(keys)), pa.int64()),
            KIND: pa.array(np.zeros(len(keys), np.int8)),
        }
    )


def _last_per_key(rows: pa.Table) -> pa.Table:
    """Reference merge: newest row per key, in key order."""
    best = {}
    for r in rows.to_pylist():
        k = (r["s"], r["i"])
        if k not in best or r[SEQ] > best[k][SEQ]:
            best[k] = r
    return pa.Table.from_pylist([best[k] for k in sorted(best)], schema=rows.schema)


@settings(max_examples=60, deadline=None)
@given(runs=runs_strategy, chunk=st.integers(1, 9))
def test_chunked_merge_equals_one_shot(runs, chunk):
    tables, seq = [], 0
    for keys in runs:
        tables.append(_run_table(keys, seq))
        seq += 100
    chunks = lambda t: (t.slice(i, chunk) for i in range(0, t.num_rows, chunk))  # noqa: E731
    seen_groups = []

    def merge(rows):
        seen_groups.append(rows)
        return _last_per_key(rows)

    out = list(merge_sorted_runs([chunks(t) for t in tables], ["s", "i"], merge))
    got = pa.concat_tables(out) if out else tables[0].slice(0, 0)
    assert got.to_pylist() == _last_per_key(pa.concat_tables(tables)).to_pylist()
    keys_per_chunk = [set(zip(g["s"].to_pylist(), g["i"].to_pylist())) for g in seen_groups]
    for a, b in zip(keys_per_chunk, keys_per_chunk[1:]):
        assert not a & b  # a key's rows are never split across merge rounds


@settings(max_examples=60, deadline=None)
@given(
    runs=st.lists(
        st.lists(st.tuples(st.sampled_from(["a", "b", "zz"]), st.integers(0, 3)), max_size=20), min_size=1, max_size=4
    ),
    chunk=st.integers(1, 5),
)
def test_a_key_repeated_within_a_run_is_merged_whole(runs, chunk):
    # Paimon stores a key once per file, but a reader must not depend on it: a key repeated across
    # a chunk boundary of one run still reaches the merge function in one piece.
    tables, seq = [], 0
    for keys in runs:
        tables.append(_run_table(keys, seq))
        seq += 100
    chunks = lambda t: (t.slice(i, chunk) for i in range(0, t.num_rows, chunk))  # noqa: E731
    seen = []

    def merge(rows):
        seen.append(set(zip(rows["s"].to_pylist(), rows["i"].to_pylist())))
        return _last_per_key(rows)

    out = list(merge_sorted_runs([chunks(t) for t in tables], ["s", "i"], merge))
    got = pa.concat_tables(out) if out else tables[0].slice(0, 0)
    assert got.to_pylist() == _last_per_key(pa.concat_tables(tables)).to_pylist()
    assert all(not (a & b) for i, a in enumerate(seen) for b in seen[i + 1 :])


@pytest.mark.parametrize("engine", ["deduplicate", "aggregation"])
def test_compaction_in_tiny_chunks(warehouse, engine):
    schema = pa.schema([("k", pa.string()), ("n", pa.int64()), ("v", pa.int64())])
    # the bucket is hundreds of chunks
    opts = {"bucket": "1", "write-only": "true", "merge-engine": engine, "read.batch-size": "7"}
    if engine == "aggregation":
        opts["fields.v.aggregate-function"] = "sum"
    cat = Catalog(warehouse)
    cat.create_database("db")
    t = cat.create_table("db.t", schema=schema, primary_keys=["k", "n"], options=opts)
    rng = np.random.default_rng(7)
    for i in range(6):
        n = rng.integers(0, 300, 200)
        t.write_arrow(
            pa.table(
                {
                    "k": [f"key{x % 7}" for x in n],
                    "n": pa.array(n, pa.int64()),
                    "v": pa.array(np.full(200, i), pa.int64()),
                },
                schema=schema,
            )
        )
    before = t.to_arrow().sort_by([("k", "ascending"), ("n", "ascending")])
    stored = sum(e.file.row_count for e in t.manifest_store.live_entries(t.latest_snapshot()))
    r = t.maintenance.compact(full=True)
    assert r.rows_in == stored and r.rows_out == before.num_rows
    assert t.to_arrow().sort_by([("k", "ascending"), ("n", "ascending")]).equals(before)


@settings(max_examples=60, deadline=None)
@given(
    runs=st.lists(
        st.lists(
            st.sampled_from([float("-inf"), -1.5, -0.0, 0.0, 2.0, float("nan")]),
            max_size=6,
            unique_by=lambda v: java_order_key((v,)),
        ),
        min_size=2,
        max_size=4,
    ),
    chunk=st.integers(1, 3),
)
def test_float_keys_merge_in_java_order(runs, chunk):
    # Java's Double.compare: -0.0 < 0.0 are two keys, NaN is one key and the largest.
    tables = []
    for n, keys in enumerate(runs):
        keys = sorted(keys, key=lambda v: java_order_key((v,)))
        tables.append(
            pa.table(
                {
                    "f": pa.array(keys, pa.float64()),
                    SEQ: pa.array(np.arange(len(keys)) + 100 * n, pa.int64()),
                    KIND: pa.array(np.zeros(len(keys), np.int8)),
                }
            )
        )
    chunks = lambda t: (t.slice(i, chunk) for i in range(0, t.num_rows, chunk))  # noqa: E731

    def merge(rows):  # newest per key, in Java order
        best = {}
        for r in rows.to_pylist():
            k = java_order_key((r["f"],))
            if k not in best or r[SEQ] > best[k][SEQ]:
                best[k] = r
        return pa.Table.from_pylist([best[k] for k in sorted(best)], schema=rows.schema)

    out = list(merge_sorted_runs([chunks(t) for t in tables], ["f"], merge))
    got = [java_order_key((v,)) for t in out for v in t["f"].to_pylist()]
    want = sorted({java_order_key((v,)) for t in tables for v in t["f"].to_pylist()})
    assert got == want  # every key once, in Java order, across chunk boundaries


@settings(max_examples=60, deadline=None)
@given(runs=runs_strategy, chunk=st.integers(1, 9), data=st.data())
def test_run_sizes_are_a_hint_that_never_changes_the_merge(runs, chunk, data):
    # a run known to hold n rows ends as soon as they are read; a wrong size only costs a round
    tables = [_run_table(keys, 100 * i) for i, keys in enumerate(runs)]
    chunks = lambda t: (t.slice(i, chunk) for i in range(0, t.num_rows, chunk))  # noqa: E731
    sizes = [data.draw(st.one_of(st.none(), st.integers(0, 30), st.just(t.num_rows))) for t in tables]
    want = list(merge_sorted_runs([chunks(t) for t in tables], ["s", "i"], _last_per_key))
    got = list(merge_sorted_runs([chunks(t) for t in tables], ["s", "i"], _last_per_key, sizes))
    as_rows = lambda out: pa.concat_tables(out).to_pylist() if out else []  # noqa: E731
    assert as_rows(got) == as_rows(want)


def test_runs_read_whole_merge_in_one_round():
    tables = [_run_table([("a", i) for i in range(0, 40, step)], 100 * step) for step in (1, 3)]
    rounds = []

    def merge(rows):
        rounds.append(rows.num_rows)
        return _last_per_key(rows)

    list(merge_sorted_runs([iter([t]) for t in tables], ["s", "i"], merge, [t.num_rows for t in tables]))
    assert rounds == [sum(t.num_rows for t in tables)]
    rounds.clear()
    list(merge_sorted_runs([iter([t]) for t in tables], ["s", "i"], merge))  # ends learnt a round late
    assert len(rounds) == 2
