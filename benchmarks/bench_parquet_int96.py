"""Cost of writing TIMESTAMP(9) columns as Parquet INT96 (per column, footer rewritten) instead
of pyarrow's INT64 nanoseconds: one data file of N rows with an id, a string and one or three
nanosecond timestamp columns. Prints the median of --runs writes of each.

    .venv/bin/python -m benchmarks.bench_parquet_int96 [--rows 1000000] [--runs 5]
"""

from __future__ import annotations

import argparse
import io

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.bench_merge import timeit
from lake_core.format.data_file import write_data_file
from lake_core.format.parquet_file import parquet_write_options


def _table(rows: int, ts_columns: int) -> pa.Table:
    rng = np.random.default_rng(7)
    cols = {"id": pa.array(np.arange(rows, dtype=np.int64)), "s": pa.array([f"v{i % 1000}" for i in range(rows)])}
    for c in range(ts_columns):
        cols[f"ts{c}"] = pa.array(1_700_000_000_000_000_000 + rng.integers(0, 10**15, rows), pa.timestamp("ns"))
    return pa.table(cols)


def _fields(table: pa.Table) -> list[pa.Field]:
    return [
        pa.field(f.name, f.type, f.nullable, {b"PARQUET:field_id": str(i).encode()}) for i, f in enumerate(table.schema)
    ]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    for ts_columns in (1, 3):
        table = _table(args.rows, ts_columns)
        fields = _fields(table)

        def int96():
            write_data_file(table, fields, "parquet", io.BytesIO())

        def int64():  # what lake_core wrote before: pyarrow's INT64 TIMESTAMP(NANOS)
            with pq.ParquetWriter(io.BytesIO(), pa.schema(fields), **parquet_write_options(table)) as w:
                w.write_table(table.cast(pa.schema(fields)))

        a, b = timeit(int96, args.runs), timeit(int64, args.runs)
        print(
            f"{args.rows} rows, {ts_columns} TIMESTAMP(9) column(s): INT96 {a * 1000:.0f} ms, "
            f"INT64 nanos {b * 1000:.0f} ms ({(a / b - 1) * 100:+.0f}%)"
        )


if __name__ == "__main__":
    main()
