"""Reading one data file whole (``read_data_file``) and streamed (``iter_data_file``) per format.

A KV data file of ``--rows`` rows (the shared workload's columns plus ``_KEY_id``,
``_SEQUENCE_NUMBER``, ``_VALUE_KIND``) is written once per format; then, in this process, each read
is timed ``--runs`` times (median seconds, rows/s) and the peak of Arrow's allocator during the read
is sampled (per chunk for the streamed read, whose chunks are dropped once counted).

    .venv/bin/python -m benchmarks.bench_data_file_read [--rows 1000000] [--runs 3] [--formats orc,avro]
        [--batch-rows 65536]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import numpy as np
import pyarrow as pa

from benchmarks import workload
from lake_core.format.data_file import iter_data_file, read_data_file, write_data_file
from lake_core.format.file_format import file_extension


def _kv_table(rows: int) -> pa.Table:
    t = workload.initial(rows)
    return (
        t.append_column("_KEY_id", t.column("id"))
        .append_column("_SEQUENCE_NUMBER", pa.array(np.arange(rows), pa.int64()))
        .append_column("_VALUE_KIND", pa.array(np.zeros(rows, np.int8)))
    )


def _whole(path: str, fmt: str, schema: pa.Schema) -> tuple[int, int]:
    base = pa.total_allocated_bytes()
    t = read_data_file(path, fmt, schema.names, schema)
    return t.num_rows, pa.total_allocated_bytes() - base


def _streamed(path: str, fmt: str, schema: pa.Schema, batch_rows: int) -> tuple[int, int]:
    base = pa.total_allocated_bytes()
    rows = peak = 0
    for chunk in iter_data_file(path, fmt, schema.names, schema, batch_rows):
        peak = max(peak, pa.total_allocated_bytes() - base)
        rows += chunk.num_rows
        del chunk
    return rows, peak


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--formats", default="orc,avro")
    parser.add_argument("--batch-rows", type=int, default=65_536)
    args = parser.parse_args()
    table = _kv_table(args.rows)
    schema = table.schema
    print(f"{args.rows} rows, {table.nbytes / 1e6:.0f} MB as Arrow; streamed in chunks of {args.batch_rows} rows")
    with tempfile.TemporaryDirectory() as tmp:
        for fmt in args.formats.split(","):
            path = os.path.join(tmp, f"data.{file_extension(fmt)}")
            write_data_file(table, list(schema), fmt, path)
            for name, read in (
                ("whole", lambda: _whole(path, fmt, schema)),
                ("streamed", lambda: _streamed(path, fmt, schema, args.batch_rows)),
            ):
                secs, peaks = [], []
                for _ in range(args.runs):
                    t0 = time.perf_counter()
                    rows, peak = read()
                    secs.append(time.perf_counter() - t0)
                    peaks.append(peak)
                    assert rows == args.rows, (fmt, name, rows)
                med = statistics.median(secs)
                print(
                    f"{fmt:5} {name:9} {med:7.3f} s  {args.rows / med / 1e6:6.2f} M rows/s  "
                    f"peak Arrow {max(peaks) / 1e6:7.1f} MB  (file {os.path.getsize(path) / 1e6:.1f} MB)"
                )


if __name__ == "__main__":
    main()
