"""Incremental-read benchmark: rows/s of the changes of 10 commits (changelog, delta, diff), the
stream scan polling them, beside the merged read of the latest snapshot.

The table: ``id BIGINT`` plus 4 value columns, ``bucket = 4``, ``changelog-producer = input``;
10 commits of ``--rows``/10 rows each, half of them updates of earlier keys.

    .venv/bin/python -m benchmarks.bench_incremental [--rows 1000000] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time

COMMITS = 10


def _build(path: str, rows: int):
    import numpy as np

    from benchmarks import workload
    from lake_core import Catalog

    cat = Catalog(f"file://{path}")
    cat.create_database("db")
    t = cat.create_table(
        "db.t",
        schema=workload.SCHEMA,
        primary_keys=["id"],
        options={"bucket": "4", "changelog-producer": "input", "write-only": "true"},
    )
    rng = np.random.default_rng(7)
    per = rows // COMMITS
    for c in range(COMMITS):
        new = np.arange(c * per, c * per + per // 2)
        old = rng.integers(0, max(c * per, 1), per - len(new))
        t.write_arrow(workload.make_rows(np.unique(np.concatenate([new, old])), seed=c))
    return t


def _timed(fn, runs: int) -> tuple[float, int]:
    times, n = [], 0
    for _ in range(runs):
        start = time.perf_counter()
        n = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        t = _build(d, args.rows)

        def stream() -> int:
            scan = t.new_read_builder().new_stream_scan()
            scan.restore(1)
            read = t.new_read_builder().new_read()
            return sum(read.to_arrow(scan.plan().splits()).num_rows for _ in range(COMMITS))

        cases = {
            "merged read (latest)": lambda: t.to_arrow().num_rows,
            "changelog 0..10": lambda: t.to_arrow(incremental_between=(0, COMMITS), scan_mode="changelog").num_rows,
            "delta 0..10": lambda: t.to_arrow(incremental_between=(0, COMMITS), scan_mode="delta").num_rows,
            "diff 5..10": lambda: t.to_arrow(incremental_between=(COMMITS // 2, COMMITS), scan_mode="diff").num_rows,
            "stream scan 1..10": stream,
        }
        out = {}
        for name, fn in cases.items():
            secs, n = _timed(fn, args.runs)
            out[name] = {"rows": n, "seconds": round(secs, 3), "rows_per_s": int(n / secs) if secs else None}
        print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
