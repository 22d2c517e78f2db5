"""A large sorted run merged with a few small ones touches only the keys the small runs hold (the
sparse pick of reads that keep row kinds): the rows equal a full merge (the newest row of each key, retractions dropped, in key order), for any
retractions, new keys, keys repeated across the small runs, and float keys in Java's order."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from lake_core import Catalog
from lake_core.format.float_order import java_order_key
from lake_core.kv.system_fields import KIND, SEQ
from lake_core.lsm.sparse_merge import sparse_pick
from lake_core.read.split_read import SplitRead


def _run(keys, seqs, kinds, key_type) -> pa.Table:
    order = sorted(range(len(keys)), key=lambda i: java_order_key((keys[i],)))
    return pa.table(
        {
            "k": pa.array([keys[i] for i in order], key_type),
            "v": pa.array([seqs[i] * 10 for i in order], pa.int64()),
            SEQ: pa.array([seqs[i] for i in order], pa.int64()),
            KIND: pa.array([kinds[i] for i in order], pa.int8()),
        }
    )


def newest_per_key(rows: pa.Table) -> pa.Table:
    """The reference merge: each key's row with the highest sequence number, retractions dropped."""
    best: dict = {}
    for r in rows.to_pylist():
        k = java_order_key((r["k"],))
        if k not in best or r[SEQ] > best[k][SEQ]:
            best[k] = r
    live = [best[k] for k in sorted(best) if best[k][KIND] not in (1, 3)]
    return pa.Table.from_pylist(live, schema=rows.schema)


def _parts(data, values, key_type):
    n_big = data.draw(st.integers(48, 80))  # the small runs hold at most 4 rows: a tenth of it
    big_keys = data.draw(st.lists(values, min_size=n_big, max_size=n_big, unique_by=lambda v: java_order_key((v,))))
    seq = iter(range(10_000))
    kinds = st.sampled_from([0, 0, 0, 2, 1, 3])

    def run(keys):
        return _run(
            keys,
            [next(seq) for _ in keys],
            data.draw(st.lists(kinds, min_size=len(keys), max_size=len(keys))),
            key_type,
        )

    big = run(big_keys)
    smalls = [
        run(
            data.draw(
                st.lists(
                    st.one_of(st.sampled_from(big_keys), values), max_size=2, unique_by=lambda v: java_order_key((v,))
                )
            )
        )
        for _ in range(data.draw(st.integers(1, 2)))
    ]
    at = data.draw(st.integers(0, len(smalls)))  # the large run is usually the oldest, not always
    return smalls[:at] + [big] + smalls[at:]


def newest_positions(rows: pa.Table) -> np.ndarray:
    """The reference pick: the positions of :func:`newest_per_key`'s rows, in its order."""
    best: dict = {}
    for i, r in enumerate(rows.select(["k", SEQ, KIND]).to_pylist()):
        k = java_order_key((r["k"],))
        if k not in best or r[SEQ] > best[k][1]:
            best[k] = (i, r[SEQ], r[KIND])
    return np.array([best[k][0] for k in sorted(best) if best[k][2] not in (1, 3)], np.int64)


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_sparse_pick_gathers_the_rows_of_the_full_merge(data):
    parts = _parts(data, st.integers(-50, 50), pa.int64())
    got = sparse_pick(parts, "k", newest_positions, ["k", SEQ, KIND], ["k", "v"], small_share=0.1)
    assert got is not None
    assert got.to_pylist() == newest_per_key(pa.concat_tables(parts)).select(["k", "v"]).to_pylist()


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_sparse_pick_orders_float_keys_as_java(data):
    # -0.0 and 0.0 are two keys, every NaN one key that sorts last
    values = st.one_of(
        st.sampled_from([-0.0, 0.0, float("nan"), float("inf"), float("-inf")]), st.floats(-100, 100, allow_nan=False)
    )
    parts = _parts(data, values, pa.float64())
    got = sparse_pick(parts, "k", newest_positions, ["k", SEQ, KIND], ["k", "v"], small_share=0.1)
    assert got is not None
    want = newest_per_key(pa.concat_tables(parts)).select(["k", "v"])
    assert [java_order_key((v,)) for v in got["k"].to_pylist()] == [java_order_key((v,)) for v in want["k"].to_pylist()]
    assert got.drop_columns(["k"]).to_pylist() == want.drop_columns(["k"]).to_pylist()


def test_shapes_it_does_not_apply_to_are_left_to_the_full_merge():
    def pick(parts):
        return sparse_pick(parts, "k", newest_positions, ["k", SEQ, KIND], ["k"], small_share=0.1)

    big = _run(list(range(40)), list(range(40)), [0] * 40, pa.int64())
    assert pick([big]) is None  # nothing to merge with
    half = _run(list(range(0, 40, 2)), list(range(100, 120)), [0] * 20, pa.int64())
    assert pick([big, half]) is None  # the small runs are not small
    twice = _run([1, 1] + list(range(2, 40)), list(range(40)), [0] * 40, pa.int64())
    assert pick([twice, half.slice(0, 2)]) is None  # a key stored twice
    strings = pa.table(
        {"k": [str(i) for i in range(40)], SEQ: pa.array(range(40), pa.int64()), KIND: pa.array([0] * 40, pa.int8())}
    )
    assert pick([strings, strings.slice(0, 2)]) is None  # not NumPy-ordered


def test_a_table_between_compactions_reads_as_the_model_through_the_run_order_merge(warehouse, monkeypatch):
    """A deduplicate table's runs follow one another in sequence order, so a read takes each key's
    last row by run order (no sequence numbers read), retractions dropped."""
    used = []
    original = SplitRead._last_rows_of_parts

    def spy(self, parts):
        used.append(len(parts))
        return original(self, parts)

    monkeypatch.setattr(SplitRead, "_last_rows_of_parts", spy)
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.int64()), ("op", pa.string())])
    t = (
        Catalog(warehouse).create_table(
            "db.t", schema=schema, primary_keys=["k"], options={"bucket": "2", "rowkind.field": "op"}
        )
        if Catalog(warehouse).create_database("db") is None
        else None
    )
    rng = np.random.default_rng(3)
    model: dict[int, int] = {}
    t.write_arrow(
        pa.table({"k": np.arange(20_000), "v": np.zeros(20_000, np.int64), "op": ["+I"] * 20_000}, schema=schema)
    )
    model.update({k: 0 for k in range(20_000)})
    for i in range(1, 8):
        keys = np.unique(rng.integers(0, 25_000, 300))
        ops = np.where(rng.random(len(keys)) < 0.2, "-D", "+I")
        t.write_arrow(pa.table({"k": keys, "v": np.full(len(keys), i), "op": ops}, schema=schema))
        for k, op in zip(keys.tolist(), ops.tolist()):
            if op == "-D":
                model.pop(k, None)
            else:
                model[k] = i
        got = t.to_arrow()
        assert dict(zip(got["k"].to_pylist(), got["v"].to_pylist())) == model
        assert all(np.all(np.diff(b.column("k").to_numpy()) > 0) for b in t.to_arrow_batch_reader())
    assert any(n > 1 for n in used)
