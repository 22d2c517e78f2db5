"""Merge-engine benchmark (engine level, in memory): one bucket's worth of a merged read of
1,000,000 rows plus 200,000 updates (two sorted runs, concatenated oldest -> newest), merged with
``merge(rows, drop_deletes=True)`` by deduplicate, partial-update and aggregation; beside them the
in-process "ceilings" (polars last-non-null per column, NumPy reduceat) on the same
data. Medians of >= 5 warm runs; rows/s counts input rows. No assertions.

    .venv/bin/python -m benchmarks.bench_merge [--rows 1000000] [--updates 200000] [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from benchmarks import workload
from lake_core.merge import create_merge_engine
from lake_core.merge.base import KIND, SEQ
from lake_core.schema.table_schema import TableSchema

ENGINES = {
    "deduplicate": {"merge-engine": "deduplicate"},
    "partial-update": {"merge-engine": "partial-update"},
    "partial-update (sequence group)": {"merge-engine": "partial-update", "fields.ts.sequence-group": "qty,price,name"},
    "aggregation": {
        "merge-engine": "aggregation",
        "fields.qty.aggregate-function": "sum",
        "fields.price.aggregate-function": "max",
        "fields.ts.aggregate-function": "min",
    },
    "aggregation (sum, count, listagg)": {
        "merge-engine": "aggregation",
        "fields.qty.aggregate-function": "sum",
        "fields.ts.aggregate-function": "count",
        "fields.name.aggregate-function": "listagg",
        "fields.price.aggregate-function": "sum",
    },
}


def make_input(rows_n: int, upd_n: int) -> pa.Table:
    base = workload.initial(rows_n).sort_by("id")
    upd = workload.updates(rows_n, upd_n).sort_by("id")
    # partial updates: half the update rows leave qty and name NULL
    rng = np.random.default_rng(5)
    holes = rng.random(upd_n) < 0.5
    upd = upd.set_column(1, "qty", pc.if_else(pa.array(holes), pa.scalar(None, pa.int32()), upd["qty"]))
    upd = upd.set_column(3, "name", pc.if_else(pa.array(holes), pa.scalar(None, pa.string()), upd["name"]))
    t = pa.concat_tables([base, upd]).combine_chunks()
    n = t.num_rows
    t = t.append_column(pa.field(SEQ, pa.int64(), nullable=False), pa.array(np.arange(n, dtype=np.int64)))
    return t.append_column(pa.field(KIND, pa.int8(), nullable=False), pa.array(np.zeros(n, np.int8)))


def timeit(fn, runs: int) -> float:
    fn()  # warm-up, dropped
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def ceiling_polars_last_non_null(t: pa.Table):
    import polars as pl

    df = pl.from_arrow(t.select(workload.SCHEMA.names))
    return (
        df.sort("id", maintain_order=True)
        .group_by("id", maintain_order=True)
        .agg([pl.col(c).drop_nulls().last() for c in workload.SCHEMA.names[1:]])
    )


def ceiling_numpy_reduceat(t: pa.Table):
    ids = t["id"].to_numpy()
    order = np.argsort(ids, kind="stable")
    s = ids[order]
    starts = np.flatnonzero(np.concatenate([[True], s[1:] != s[:-1]]))
    qty = pc.fill_null(t["qty"], 0).to_numpy()[order]
    price = t["price"].to_numpy()[order]
    ts = t["ts"].to_numpy()[order]
    return np.add.reduceat(qty, starts), np.maximum.reduceat(price, starts), np.minimum.reduceat(ts, starts)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--updates", type=int, default=200_000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    t = make_input(args.rows, args.updates)
    n = t.num_rows
    print(
        f"merge of {args.rows:,} rows + {args.updates:,} updates ({n:,} input rows, one bucket), "
        f"median of {args.runs} warm runs"
    )
    results = {}
    for label, opts in ENGINES.items():
        schema = TableSchema.create(workload.SCHEMA, (), ("id",), opts)
        eng = create_merge_engine(schema)
        out_rows = eng.merge(t, drop_deletes=True).num_rows
        sec = timeit(lambda: eng.merge(t, drop_deletes=True), args.runs)
        results[label] = sec
        print(
            f"  {label:36s} {sec * 1000:8.1f} ms  {n / sec / 1e6:6.2f} M input rows/s  "
            f"{out_rows / sec / 1e6:6.2f} M output rows/s"
        )
    for label, fn in (
        ("ceiling: polars last-non-null", ceiling_polars_last_non_null),
        ("ceiling: numpy sort + reduceat", ceiling_numpy_reduceat),
    ):
        sec = timeit(lambda: fn(t), args.runs)
        print(f"  {label:36s} {sec * 1000:8.1f} ms  {n / sec / 1e6:6.2f} M input rows/s")


if __name__ == "__main__":
    main()
