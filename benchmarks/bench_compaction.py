"""Compaction benchmark. Every scenario runs in its own process (the table is built in one
process, the timed step runs in a fresh one), so peak memory is the step's own.

  full-1m      full compaction of 1M rows + 200k updates (bucket 4)
  full-20-l0   full compaction of 20 level-0 runs (20 commits of rows/20 overlapping keys, bucket 4)
  read-50      merged-read rows/s after 50 small commits: with inline compaction, without any
               compaction, and after a full compaction
  stream-<N>x  streamed merged read (``to_arrow_batch_reader``) of one bucket holding N x the read
               budget (``read.batch-size``, --budget rows) plus N x budget / 2 updates, two
               overlapping runs: rows/s, peak Arrow memory while reading (sampled per batch) and
               peak RSS (warm: after one untimed read). Memory should not grow with N.

    .venv/bin/python -m benchmarks.bench_compaction [--rows 1000000] [--runs 3] [--scenarios ...]
    .venv/bin/python -m benchmarks.bench_compaction --scenarios stream-1x,stream-10x [--budget 65536]
"""
from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _table(path: str, write_only: bool):
    from benchmarks import workload
    from lake_core import Catalog
    cat = Catalog(f"file://{path}")
    cat.create_database("db")
    return cat.create_table("db.t", schema=workload.SCHEMA, primary_keys=["id"],
                            options={"bucket": "4", "write-only": str(write_only).lower()})


def build(scenario: str, path: str, rows: int, budget: int) -> None:
    import numpy as np

    from benchmarks import workload
    if scenario.startswith("stream-"):
        from lake_core import Catalog
        n = int(scenario[len("stream-"):-1]) * budget
        cat = Catalog(f"file://{path}")
        cat.create_database("db")
        t = cat.create_table("db.t", schema=workload.SCHEMA, primary_keys=["id"],
                             options={"bucket": "1", "write-only": "true", "read.batch-size": str(budget)})
        t.write_arrow(workload.initial(n))
        t.write_arrow(workload.updates(n, n // 2))
    elif scenario == "full-1m":
        t = _table(path, True)
        t.write_arrow(workload.initial(rows))
        t.write_arrow(workload.updates(rows, rows // 5))
    elif scenario == "full-20-l0":
        t = _table(path, True)
        per = rows // 20
        for i in range(20):
            ids = np.random.default_rng(10 + i).choice(rows, size=per, replace=False).astype(np.int64)
            t.write_arrow(workload.make_rows(ids, seed=100 + i))
    else:  # read-50-<inline|none|compacted>
        mode = scenario.rsplit("-", 1)[1]
        t = _table(path, mode != "inline")
        t.write_arrow(workload.initial(rows))
        for i in range(50):
            t.write_arrow(workload.updates(rows, 2000 if rows >= 100_000 else max(1, rows // 50)).slice(0))
        if mode == "compacted":
            t.maintenance.compact(full=True)


def timed(scenario: str, path: str) -> dict:
    from lake_core import Catalog
    t = Catalog(f"file://{path}").get_table("db.t")
    t0 = time.perf_counter()
    out = {}
    if scenario.startswith("full"):
        r = t.maintenance.compact(full=True)
        rows = r.rows_in
    elif scenario.startswith("stream-"):
        rows, peak = _stream(t)  # warm-up: the first read of a process pays one-time set-up
        t0 = time.perf_counter()
        rows, peak = _stream(t)
        out["peak_arrow_mb"] = peak / 2 ** 20
    else:
        rows = t.to_arrow().num_rows
    secs = time.perf_counter() - t0
    return {"secs": secs, "rows": rows, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            **out}


def _stream(t) -> tuple[int, int]:
    """Rows of a streamed read of ``t`` and the peak Arrow memory while reading (each batch dropped)."""
    import pyarrow as pa
    base = pa.total_allocated_bytes()
    rows, peak = 0, 0
    for batch in t.to_arrow_batch_reader():
        rows += batch.num_rows
        peak = max(peak, pa.total_allocated_bytes() - base)
        del batch
    return rows, peak


def _sub(*args: str) -> dict:
    proc = subprocess.run([sys.executable, "-m", "benchmarks.bench_compaction", *args], capture_output=True, text=True,
                          cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"benchmark step {args} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1]) if proc.stdout.strip() else {}


def run(scenario: str, rows: int, runs: int, budget: int) -> dict:
    results = []
    for _ in range(runs):
        base = tempfile.mkdtemp(prefix="bench-compaction-")
        try:
            _sub("--build", scenario, "--path", base, "--rows", str(rows), "--budget", str(budget))
            results.append(_sub("--timed", scenario, "--path", base))
        finally:
            shutil.rmtree(base, ignore_errors=True)
    secs = statistics.median(r["secs"] for r in results)
    return {"scenario": scenario, "rows": results[0]["rows"], "rows_s": results[0]["rows"] / secs, "secs": secs,
            "peak_rss_mb": max(r["peak_rss_mb"] for r in results),
            "peak_arrow_mb": max(r.get("peak_arrow_mb", float("nan")) for r in results)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--budget", type=int, default=65_536, help="read.batch-size of the stream-<N>x scenarios")
    ap.add_argument("--scenarios", default="full-1m,full-20-l0,read-50-inline,read-50-none,read-50-compacted")
    ap.add_argument("--build", help=argparse.SUPPRESS)
    ap.add_argument("--timed", help=argparse.SUPPRESS)
    ap.add_argument("--path", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.build:
        build(args.build, args.path, args.rows, args.budget)
        return
    if args.timed:
        print(json.dumps(timed(args.timed, args.path)))
        return
    print(f"{'scenario':<20}{'rows':>12}{'rows/s':>14}{'seconds':>10}{'peak RSS MB':>13}{'peak Arrow MB':>15}")
    out = {}
    for s in args.scenarios.split(","):
        r = out[s] = run(s, args.rows, args.runs, args.budget)
        print(f"{s:<20}{r['rows']:>12,}{r['rows_s']:>14,.0f}{r['secs']:>10.2f}{r['peak_rss_mb']:>13,.0f}"
              f"{r['peak_arrow_mb']:>15,.1f}", flush=True)
    if "read-50-inline" in out and "read-50-compacted" in out:
        print(f"merged read after 50 commits, inline compaction vs fully compacted: "
              f"x{out['read-50-compacted']['rows_s'] / out['read-50-inline']['rows_s']:.2f} slower (target <= 1.5)")
    print("targets: full compaction >= 3,500,000 rows/s; peak memory independent of bucket size")


if __name__ == "__main__":
    main()
