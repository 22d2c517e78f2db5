"""Shared pieces of the rescale tests: a partitioned primary-key table and its dict model."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa

from lake_core import Catalog

SCHEMA = pa.schema(
    [("dt", pa.string()), ("id", pa.int64()), ("name", pa.string()), ("v", pa.int64()), ("op", pa.string())]
)
PK = ["dt", "id", "name"]
PARTS = ["2024-01-01", "2024-01-02", "2024-01-03"]


class Model:
    def __init__(self):
        self.rows: dict[tuple, dict] = {}

    def batch(self, rnd: random.Random, n: int, parts=PARTS, deletes: bool = True) -> pa.Table:
        out, seen = [], set()
        for _ in range(n):
            key = (rnd.choice(parts), rnd.randint(0, 300), rnd.choice(["", "a", "é", "a longer name"]))
            if key in seen:
                continue
            seen.add(key)
            op = "-D" if deletes and key in self.rows and rnd.random() < 0.2 else "+I"
            row = {"dt": key[0], "id": key[1], "name": key[2], "v": rnd.randint(-(10**9), 10**9), "op": op}
            out.append(row)
            self.apply(row)
        return pa.Table.from_pylist(out, schema=SCHEMA)

    def apply(self, row: dict) -> None:
        key = (row["dt"], row["id"], row["name"])
        if row["op"] == "-D":
            self.rows.pop(key, None)
        else:
            self.rows[key] = dict(row)

    def expected(self) -> list[dict]:
        return sorted(self.rows.values(), key=lambda r: (r["dt"], r["id"], r["name"]))


def rows(t: pa.Table) -> list[dict]:
    return sorted(t.select(SCHEMA.names).to_pylist(), key=lambda r: (r["dt"], r["id"], r["name"]))


def make_table(warehouse, storage_options=None, bucket: int = 2, options=None):
    catalog = Catalog(warehouse, storage_options)
    catalog.create_database("db", ignore_if_exists=True)
    opts = {"bucket": str(bucket), "rowkind.field": "op"}
    opts.update(options or {})
    return catalog, catalog.create_table("db.t", SCHEMA, primary_keys=PK, partition_keys=["dt"], options=opts)


def bucket_counts(table) -> dict[str, set]:
    """Partition -> the set of total-bucket counts of its live files."""
    out: dict[str, set] = {}
    for e in table.manifest_store.live_entries(table.latest_snapshot()):
        out.setdefault(table.manifest_store.partition_values(e.partition)[0], set()).add(e.total_buckets)
    return out


def assert_rows_in_their_buckets(table) -> None:
    """Every live row sits in the bucket Paimon's hash gives it for its partition's count."""
    from lake_core.bucket.assign import assign_buckets

    keys = list(table.schema.bucket_keys())
    types = [table.schema.field(k).type for k in keys]
    reader = table.new_read_builder().new_read()
    for split in table.new_read_builder().new_scan().plan().splits():
        t = reader.read_split(split)
        got = assign_buckets([t[k] for k in keys], types, split.total_buckets)
        assert (got == split.bucket).all(), (split.partition_values, split.bucket)


def filled_table(warehouse, storage_options=None, *, seed: int, commits: int = 3, n: int = 120, options=None):
    """(catalog, table, model): the table after ``commits`` random batches (with deletes) of its model."""
    rnd = random.Random(seed)
    catalog, table = make_table(warehouse, storage_options, options=options)
    model = Model()
    for _ in range(commits):
        table.write_arrow(model.batch(rnd, n))
    return catalog, table, model


def data_file_names(root: Path) -> set[str]:
    return {p.name for p in root.rglob("data-*")}


@contextmanager
def a_data_file_vanishes(table, root: Path, partition: str = PARTS[-1]) -> Iterator[str]:
    """A live data file of ``partition`` is gone while the block runs (the job's unit reading it must
    fail); it is put back afterwards. Yields its file name."""
    victim = next(
        e.file.file_name
        for e in table.manifest_store.live_entries(table.latest_snapshot())
        if table.manifest_store.partition_values(e.partition)[0] == partition
    )
    path = next(root.rglob(victim))
    data = path.read_bytes()
    path.unlink()
    try:
        yield victim
    finally:
        path.write_bytes(data)
