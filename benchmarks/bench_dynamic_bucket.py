"""Dynamic bucket benchmark: 1M new keys in one commit, then 200k updates, into a dynamic-bucket
table, beside the same workload on a fixed-bucket table (bucket=4), each mode in its own process
(peak RSS is per mode). Prints medians of warm runs in rows/s; no assertions.

Modes:
  fixed             bucket = 4 (the bench_core workload)
  fixed-1           bucket = 1 (same layout as 'dynamic': one bucket, one writer thread)
  dynamic           bucket = -1, default target-row-num 2,000,000 (1M keys fit one bucket)
  dynamic-4         bucket = -1, target-row-num 250,000 (4 buckets, like fixed)
  cross-partition   bucket = -1, PK id, partition 'region' = id % 4; every update moves its
                    key to another region (-D in the old partition + insert in the new)

    .venv/bin/python -m benchmarks.bench_dynamic_bucket [--rows 1000000] [--updates 200000] [--runs 3]
                                                        [--modes fixed,fixed-1,dynamic,dynamic-4,cross-partition]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

MODES = {
    "fixed": ({"bucket": "4"}, False),
    "fixed-1": ({"bucket": "1"}, False),
    "dynamic": ({}, False),
    "dynamic-4": ({"dynamic-bucket.target-row-num": "250000"}, False),
    "cross-partition": ({}, True),
}


def _with_region(table, shift: int):
    import pyarrow as pa
    import pyarrow.compute as pc

    region = pc.cast(
        pc.add(pc.bit_wise_and(table["id"], pa.scalar(3, pa.int64())), pa.scalar(shift, pa.int64())), pa.int32()
    )
    region = pc.cast(pc.bit_wise_and(region, pa.scalar(3, pa.int32())), pa.int32())
    return table.append_column("region", region)


def worker(mode: str, rows_n: int, upd_n: int, runs: int) -> dict:
    from benchmarks import workload

    options, cross = MODES[mode]
    rows, upd = workload.initial(rows_n), workload.updates(rows_n, upd_n)
    schema = workload.SCHEMA
    pk, parts = ["id"], []
    if cross:
        rows, upd = _with_region(rows, 0), _with_region(upd, 1)  # every update changes region
        schema = rows.schema
        parts = ["region"]
    from benchmarks.lake_runs import timed_runs

    def buckets(table) -> dict:
        live = table.manifest_store.live_entries(table.latest_snapshot())
        return {"buckets": len({(e.partition, e.bucket) for e in live})}

    return timed_runs(
        rows,
        upd,
        runs,
        lambda cat: cat.create_table("db.t", schema=schema, primary_keys=pk, partition_keys=parts, options=options),
        extra=buckets,
    )


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--updates", type=int, default=200_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--modes", default="fixed,fixed-1,dynamic,dynamic-4,cross-partition")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker, args.rows, args.updates, args.runs)))
        return
    table = []
    for mode in args.modes.split(","):
        print(
            f"running {mode}: {args.runs} warm runs of {args.rows:,} new keys + {args.updates:,} updates ...",
            flush=True,
        )
        cmd = [
            sys.executable,
            "-m",
            "benchmarks.bench_dynamic_bucket",
            "--worker",
            mode,
            "--rows",
            str(args.rows),
            "--updates",
            str(args.updates),
            "--runs",
            str(args.runs),
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        if proc.returncode != 0:
            raise SystemExit(f"{mode} failed:\n{proc.stderr[-3000:]}")
        res = json.loads(proc.stdout.strip().splitlines()[-1])
        med = {p: statistics.median(r[p] for r in res["runs"]) for p in ("write", "update", "read")}
        table.append(
            {
                "mode": mode,
                "write": args.rows / med["write"],
                "update": args.updates / med["update"],
                "read": res["runs"][0]["read_rows"] / med["read"],
                "rows": res["runs"][0]["read_rows"],
                "buckets": res["runs"][0]["buckets"],
                "rss": res["peak_rss_mb"],
            }
        )
    print()
    print(
        f"{'mode':<17}{'write rows/s':>14}{'update rows/s':>15}{'read rows/s':>13}{'live rows':>11}"
        f"{'buckets':>9}{'peak RSS MB':>13}"
    )
    for r in table:
        print(
            f"{r['mode']:<17}{r['write']:>14,.0f}{r['update']:>15,.0f}{r['read']:>13,.0f}{r['rows']:>11,}"
            f"{r['buckets']:>9}{r['rss']:>13,.0f}"
        )
    by = {r["mode"]: r for r in table}
    pairs = [("dynamic", "fixed"), ("dynamic-4", "fixed"), ("dynamic", "fixed-1"), ("cross-partition", "fixed")]
    for m, ref in pairs:
        if m in by and ref in by:
            r, f = by[m], by[ref]
            print(
                f"{m} vs {ref}: write x{r['write'] / f['write']:.2f}, update x{r['update'] / f['update']:.2f}"
                "  (target for dynamic: within 1.5x, i.e. >= x0.67)"
            )


if __name__ == "__main__":
    main()
