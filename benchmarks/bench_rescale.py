"""Rescale benchmark: one partition of N rows (default 2,000,000; written as an initial commit plus
an update commit of 10%, so the read merges) rescaled from 2 to 8 buckets with
``table.maintenance.rescale``: read + merge, re-bucket, write, read back, verify, commit.

Each run rescales a fresh copy of the table in a fresh process, which reports its wall time and
its CPU seconds (all threads) and its peak resident memory above the process's resident size just
before the rescale (so imports and the interpreter are not counted; polars, which the checksums
need, is imported before the clock as in bench_compaction). Prints the median of the runs, their
range and the load average: the rescale streams, so the peak should not grow with ``--rows``.

    .venv/bin/python -m benchmarks.bench_rescale [--rows 2000000] [--runs 3] [--from-buckets 2] [--to-buckets 8]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def build_table(warehouse: Path, rows: int, buckets: int) -> None:
    import numpy as np
    import pyarrow as pa

    from lake_core import Catalog

    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    schema = pa.schema(
        [("dt", pa.string()), ("id", pa.int64()), ("name", pa.string()), ("v", pa.int64()), ("d", pa.float64())]
    )
    table = catalog.create_table(
        "db.t", schema, primary_keys=["dt", "id"], partition_keys=["dt"], options={"bucket": str(buckets)}
    )
    rng = np.random.default_rng(7)

    def batch(ids):
        n = len(ids)
        return pa.table(
            {
                "dt": pa.array(["2024-01-01"] * n),
                "id": pa.array(ids),
                "name": pa.array([f"name-{i % 1000}" for i in range(n)]),
                "v": pa.array(rng.integers(0, 10**9, n)),
                "d": pa.array(rng.random(n)),
            },
            schema=schema,
        )

    table.write_arrow(batch(np.arange(rows, dtype=np.int64)))
    table.write_arrow(batch(rng.choice(rows, rows // 10, replace=False).astype(np.int64)))


def worker(warehouse: str, to_buckets: int) -> dict:
    import resource

    import polars  # noqa: F401 - before the clock, as bench_compaction: the checksums need it (~0.3 s to import)

    from lake_core import Catalog

    table = Catalog(warehouse).get_table("db.t")
    base = _rss_kib()
    started = time.perf_counter()
    cpu = time.process_time()
    result = table.maintenance.rescale(bucket=to_buckets)
    elapsed = time.perf_counter() - started
    cpu = time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    return {
        "seconds": elapsed,
        "cpu_seconds": cpu,
        "rows": result.rows,
        "files_in": result.files_in,
        "files_out": result.files_out,
        "bytes_out": result.bytes_out,
        "peak_mib": (peak - base) / 1024,
    }


def _rss_kib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--from-buckets", type=int, default=2)
    ap.add_argument("--to-buckets", type=int, default=8)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.to_buckets)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "source"
        t0 = time.perf_counter()
        build_table(source, args.rows, args.from_buckets)
        print(
            f"built a {args.rows:,}-row partition in {args.from_buckets} buckets in {time.perf_counter() - t0:.1f}s",
            flush=True,
        )
        runs = []
        for i in range(args.runs):
            copy = Path(tmp) / f"run{i}"
            shutil.copytree(source, copy)
            proc = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "benchmarks.bench_rescale",
                    "--worker",
                    str(copy),
                    "--to-buckets",
                    str(args.to_buckets),
                ],
                capture_output=True,
                text=True,
                cwd=ROOT,
            )
            if proc.returncode != 0:
                raise SystemExit(f"rescale run failed:\n{proc.stderr[-3000:]}")
            runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
            shutil.rmtree(copy)
    secs = statistics.median(r["seconds"] for r in runs)
    cpu = statistics.median(r["cpu_seconds"] for r in runs)
    peak = statistics.median(r["peak_mib"] for r in runs)
    r0 = runs[0]
    print(
        f"rescale {args.from_buckets} -> {args.to_buckets} buckets, {r0['rows']:,} live rows "
        f"({r0['files_in']} files in, {r0['files_out']} out, {r0['bytes_out'] / 2**20:.0f} MiB written)"
    )
    each = ", ".join(f"{r['seconds']:.2f}s" for r in runs)
    print(
        f"  median of {len(runs)} runs: {secs:.2f} s = {r0['rows'] / secs:,.0f} rows/s "
        f"(range {r0['rows'] / max(r['seconds'] for r in runs):,.0f}-{r0['rows'] / min(r['seconds'] for r in runs):,.0f}), "
        f"CPU {cpu:.2f} s (all threads), peak memory +{peak:,.0f} MiB (runs: {each})"
    )
    print(f"  load average {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")


if __name__ == "__main__":
    main()
