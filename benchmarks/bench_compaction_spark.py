"""Dedicated compaction on Spark against the same compaction in-process.

Two identical tables (``rows`` rows + 20% updates, bucket 4, write-only) are fully compacted, one by
``table.maintenance.compact`` (units in 2 threads), one by ``jobs.compact.compact_on_spark`` on
``local[2]`` (one Spark task per unit). The Spark session and its Python workers are started
before timing and their start-up is printed apart; the tables are checked to hold the same rows.

    .venv/bin/python -m benchmarks.bench_compaction_spark [--rows 1000000] [--runs 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time


def _build(path: str, name: str, rows: int):
    from benchmarks import workload
    from lake_core import Catalog

    cat = Catalog(f"file://{path}")
    if "db" not in cat.list_databases():
        cat.create_database("db")
    t = cat.create_table(
        name, schema=workload.SCHEMA, primary_keys=["id"], options={"bucket": "4", "write-only": "true"}
    )
    t.write_arrow(workload.initial(rows))
    t.write_arrow(workload.updates(rows, rows // 5))
    return t


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    from jobs.compact import compact_on_spark
    from jobs.spark import spark_session

    t0 = time.monotonic()
    spark = spark_session(master="local[2]", app_name="bench-compaction-spark")
    # start both Python workers and import lake_core in them (workers are reused across jobs)
    spark.sparkContext.parallelize([0, 1], 2).map(lambda _: bool(__import__("lake_core.compaction"))).count()
    print(f"spark session start-up: {time.monotonic() - t0:.1f} s")
    local_s, spark_s = [], []
    for run in range(args.runs):
        with tempfile.TemporaryDirectory() as d:
            a, _ = _build(d, "db.a", args.rows), _build(d, "db.b", args.rows)
            t0 = time.monotonic()
            ra = a.maintenance.compact(full=True)
            local_s.append(time.monotonic() - t0)
            t0 = time.monotonic()
            rb = compact_on_spark(spark, f"file://{d}", "db.b", full=True)
            spark_s.append(time.monotonic() - t0)
            assert (ra.rows_in, ra.rows_out, ra.units_run) == (rb.rows_in, rb.rows_out, rb.units_run)
            print(
                f"run {run + 1}: in-process {local_s[-1]:.2f} s, spark {spark_s[-1]:.2f} s "
                f"({rb.rows_in} rows in, {rb.units_run} units)"
            )
    rows_in = ra.rows_in
    for label, times in (("in-process (2 threads)", local_s), ("spark local[2], 1 task/unit", spark_s)):
        med = statistics.median(times)
        print(f"{label:30s} median {med:.2f} s  {rows_in / med:,.0f} rows/s")
    spark.stop()


if __name__ == "__main__":
    main()
