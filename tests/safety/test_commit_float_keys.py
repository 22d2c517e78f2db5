"""Item 9: float keys follow Java's ``Double.compare``: NaN is one key (equal to itself, above
+inf), -0.0 and 0.0 are two keys. Merging, deletes, filters and key ranges all agree."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest

from lake_core import Catalog

NAN = float("nan")


def _table(warehouse, key_type=pa.float64(), keys=("k",), bucket="1", extra=()):
    cat = Catalog(warehouse)
    cat.create_database("db", ignore_if_exists=True)
    fields = [pa.field(k, key_type if k == "k" else pa.int64(), nullable=False) for k in keys]
    schema = pa.schema(fields + [pa.field("v", pa.string())] + list(extra))
    return cat.create_table("db.t", schema=schema, primary_keys=list(keys), options={"bucket": bucket}), schema


def _rows(schema, **cols):
    return pa.table({n: pa.array(v, schema.field(n).type) for n, v in cols.items()}, schema=schema)


def _canon(k):
    """Java's view of a key: one NaN; -0.0 and 0.0 kept apart by their sign."""
    return ("nan",) if math.isnan(k) else (k, math.copysign(1.0, k))


def _model(commits):
    out = {}
    for ks, vs in commits:
        for k, v in zip(ks, vs):
            out[_canon(k)] = v
    return out


def _got(t):
    rows = t.to_arrow().to_pylist()
    keys = [_canon(r["k"]) for r in rows]
    assert len(keys) == len(set(keys)), f"duplicate primary keys: {rows}"
    return {_canon(r["k"]): r["v"] for r in rows}


@pytest.mark.parametrize("key_type", [pa.float64(), pa.float32()])
def test_nan_is_one_key_and_signed_zeros_are_two(warehouse, key_type):
    t, schema = _table(warehouse, key_type)
    commits = [
        ([NAN, 0.0, 1.5], ["n1", "z1", "a"]),
        ([NAN, -0.0, float("inf")], ["n2", "m2", "i"]),
        ([0.0, NAN, -float("inf")], ["z3", "n3", "j"]),
    ]
    for ks, vs in commits:
        t.write_arrow(_rows(schema, k=ks, v=vs))
    assert _got(t) == _model(commits)
    # One batch with the same keys twice folds them too.
    t.write_arrow(_rows(schema, k=[NAN, NAN, -0.0, -0.0], v=["x", "y", "p", "q"]))
    assert _got(t) == _model(commits + [([NAN, -0.0], ["y", "q"])])


def test_delete_where_nan_and_signed_zero(warehouse):
    t, schema = _table(warehouse)
    t.write_arrow(_rows(schema, k=[NAN, 0.0, -0.0, 2.0], v=["n", "z", "m", "b"]))
    t.write_arrow(_rows(schema, k=[NAN, 3.0], v=["n2", "c"]))
    pb = t.predicate_builder()
    assert t.to_arrow(filter=pb.equal("k", NAN))["v"].to_pylist() == ["n2"]
    assert t.to_arrow(filter=pb.equal("k", 0.0))["v"].to_pylist() == ["z"]
    assert t.to_arrow(filter=pb.equal("k", -0.0))["v"].to_pylist() == ["m"]
    assert sorted(t.to_arrow(filter=pb.greater_than("k", 2.5))["v"].to_pylist()) == ["c", "n2"]  # NaN is largest
    assert sorted(t.to_arrow(filter=pb.less_than("k", NAN))["v"].to_pylist()) == ["b", "c", "m", "z"]
    assert t.to_arrow(filter=pb.is_in("k", [NAN, -0.0]))["v"].to_pylist() in (["m", "n2"], ["n2", "m"])
    t.delete_where(pb.equal("k", NAN))
    assert _got(t) == {_canon(0.0): "z", _canon(-0.0): "m", _canon(2.0): "b", _canon(3.0): "c"}
    t.delete_where(pb.equal("k", 0.0))
    assert _got(t) == {_canon(-0.0): "m", _canon(2.0): "b", _canon(3.0): "c"}


def test_nan_keys_in_a_composite_key_and_many_buckets(warehouse):
    t, schema = _table(warehouse, keys=("k", "id"), bucket="3")
    rng = np.random.default_rng(7)
    commits = []
    for c in range(4):
        ks = rng.choice([NAN, 0.0, -0.0, 1.0], size=30).tolist()
        ids = rng.integers(0, 4, size=30).tolist()
        vs = [f"c{c}-{i}" for i in range(30)]
        commits.append((ks, ids, vs))
        t.write_arrow(_rows(schema, k=ks, id=ids, v=vs))
    model = {}
    for ks, ids, vs in commits:
        for k, i, v in zip(ks, ids, vs):
            model[(_canon(k), i)] = v
    rows = t.to_arrow().to_pylist()
    got = {(_canon(r["k"]), r["id"]): r["v"] for r in rows}
    assert len(got) == len(rows)
    assert got == model


def test_nan_bucket_matches_java_binary_row_bits():
    """Java's BinaryRowWriter stores a double's raw bits (no NaN canonicalisation), so the bucket
    of a key is the hash of those bits; a canonical NaN and -0.0 hash as their own bit patterns."""
    import struct

    from lake_core.bucket.assign import hash_row_bytes, hash_rows
    from lake_core.format.binary_row.writer import serialize_row

    for v in (NAN, -0.0, 0.0):
        row = serialize_row([v], [pa.float64()])
        assert row[-8:] == struct.pack("<d", v)
        assert hash_rows([pa.array([v])], [pa.float64()])[0] == hash_row_bytes(row[4:])  # no arity prefix
