"""Dynamic-bucket tables shared with pypaimon 2.1.0 in both directions: each writer continues
the other's HASH index, and both readers show every key once with its newest value."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from lake_core import Catalog

from .helpers import assert_each_key_once, assert_hash_index_consistent

pytestmark = pytest.mark.interop

SCHEMA = pa.schema(
    [("dt", pa.string()), ("k", pa.int32()), ("name", pa.string()), ("v", pa.int64()), ("note", pa.string())]
)
PK = ["dt", "k", "name"]
OPTIONS = {"dynamic-bucket.target-row-num": "4"}


class Model:
    def __init__(self):
        self.rows: dict[tuple, dict] = {}

    def batch(self, rnd: random.Random, writer: str, n: int, new_keys: int) -> pa.Table:
        """Updates of n existing keys (when there are some) plus new_keys new keys."""
        existing = list(self.rows)
        picked = rnd.sample(existing, min(n, len(existing)))
        out = []
        for dt, k, name in picked:
            out.append({"dt": dt, "k": k, "name": name, "v": rnd.randint(0, 10**6), "note": f"upd by {writer}"})
        for _ in range(new_keys):
            while True:
                key = (
                    rnd.choice(["2024-01-01", "2024-01-02", "x"]),
                    rnd.randint(-50, 5000),
                    rnd.choice(["", "a", "abcdefg", "abcdefgh", "a much longer name", "é"]),
                )
                if key not in self.rows and all((r["dt"], r["k"], r["name"]) != key for r in out):
                    break
            out.append(
                {"dt": key[0], "k": key[1], "name": key[2], "v": rnd.randint(0, 10**6), "note": f"new by {writer}"}
            )
        for r in out:
            self.rows[(r["dt"], r["k"], r["name"])] = r
        return pa.Table.from_pylist(out, schema=SCHEMA)

    def sorted_rows(self):
        return sorted(self.rows.values(), key=lambda r: (r["dt"], r["k"], r["name"]))


def normalize(t: pa.Table):
    return sorted(t.select(SCHEMA.names).to_pylist(), key=lambda r: (r["dt"], r["k"], r["name"]))


def check_both_readers(warehouse, pypaimon, table, model):
    ours = normalize(table.to_arrow())
    theirs = normalize(pypaimon.read(warehouse, "db.t"))
    assert ours == model.sorted_rows()
    assert theirs == model.sorted_rows()
    assert_each_key_once(table)
    assert_hash_index_consistent(table, 4)


@pytest.mark.parametrize("start", ["pypaimon", "lake_core"])
def test_alternating_writers_on_a_dynamic_bucket_table(warehouse, pypaimon, start):
    rnd = random.Random(7 if start == "pypaimon" else 8)
    model = Model()
    if start == "pypaimon":
        pypaimon.create_table(warehouse, "db.t", SCHEMA, primary_keys=PK, partition_keys=["dt"], options=OPTIONS)
    else:
        cat = Catalog(warehouse)
        cat.create_database("db")
        cat.create_table("db.t", schema=SCHEMA, primary_keys=PK, partition_keys=["dt"], options=OPTIONS)
    table = Catalog(warehouse).get_table("db.t")
    assert table.bucket_mode == "dynamic"
    writers = ["pypaimon", "lake_core"] if start == "pypaimon" else ["lake_core", "pypaimon"]
    for round_ in range(3):
        for writer in writers:
            data = model.batch(rnd, writer, n=12, new_keys=15 if round_ == 0 else 9)
            if writer == "pypaimon":
                pypaimon.write(warehouse, "db.t", data)
            else:
                table.write_arrow(data)
            check_both_readers(warehouse, pypaimon, table, model)
    # many buckets per partition were opened and continued by both writers
    entries = table.manifest_store.index_entries(table.latest_snapshot())
    assert max(e.bucket for e in entries) >= 3


def test_pypaimon_reads_our_cross_partition_table(warehouse, pypaimon):
    cat = Catalog(warehouse)
    cat.create_database("db")
    schema = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])
    t = cat.create_table(
        "db.x",
        schema=schema,
        primary_keys=["id"],
        partition_keys=["dt"],
        options={"dynamic-bucket.target-row-num": "3"},
    )
    model = {}
    rnd = random.Random(3)
    for _ in range(4):
        batch = [
            {"dt": rnd.choice(["a", "b", "c"]), "id": rnd.randint(0, 30), "v": str(rnd.random())} for _ in range(25)
        ]
        t.write_arrow(pa.Table.from_pylist(batch, schema=schema))
        for r in batch:
            model[r["id"]] = r
        want = sorted(model.values(), key=lambda r: r["id"])
        assert sorted(t.to_arrow().to_pylist(), key=lambda r: r["id"]) == want
        assert sorted(pypaimon.read(warehouse, "db.x").to_pylist(), key=lambda r: r["id"]) == want


def test_we_continue_after_a_pypaimon_partition_overwrite(warehouse, pypaimon):
    pypaimon.create_table(warehouse, "db.t", SCHEMA, primary_keys=PK, partition_keys=["dt"], options=OPTIONS)
    table = Catalog(warehouse).get_table("db.t")
    rnd = random.Random(11)
    model = Model()
    table.write_arrow(model.batch(rnd, "lake_core", 0, 20))
    # pypaimon replaces partition 'x' (its HASH index goes with it)
    fresh = [{"dt": "x", "k": i, "name": "o", "v": i, "note": "overwrite"} for i in range(6)]
    pypaimon.write(warehouse, "db.t", pa.Table.from_pylist(fresh, schema=SCHEMA), overwrite={"dt": "x"})
    model.rows = {k: r for k, r in model.rows.items() if k[0] != "x"}
    for r in fresh:
        model.rows[(r["dt"], r["k"], r["name"])] = r
    check_both_readers(warehouse, pypaimon, table, model)
    more = [{"dt": "x", "k": i, "name": "o", "v": -i, "note": "ours"} for i in range(3, 10)]
    table.write_arrow(pa.Table.from_pylist(more, schema=SCHEMA))
    for r in more:
        model.rows[(r["dt"], r["k"], r["name"])] = r
    check_both_readers(warehouse, pypaimon, table, model)
    pypaimon.write(warehouse, "db.t", model.batch(rnd, "pypaimon", 10, 5))
    check_both_readers(warehouse, pypaimon, table, model)
