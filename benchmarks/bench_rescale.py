"""Rescale benchmark: one partition of N rows (default 2,000,000; written as an initial commit plus
an update commit of 10%, so the read merges) rescaled from 2 to 8 buckets with
``table.maintenance.rescale``: read + merge, re-bucket, write, read back, verify, commit.

Each run rescales a fresh copy of the table in a fresh process, which reports its wall time and
its CPU seconds (all threads) and its peak resident memory above the process's resident size just
before the rescale (so imports and the interpreter are not counted; polars, which the checksums
need, is imported before the clock as in bench_compaction). Prints the median of the runs, their
range and the load average: the rescale streams, so the peak should not grow with ``--rows``.

``--before REF`` also rescales with the ``lake_core`` of a git ref (a temporary worktree, built
into its own copy of the table by that ref), and ``--compaction`` times a full compaction of the
same table (``compact(full=True)``, and with ``verify=True``: the compaction that reads its files
back and checksums both sides, as the rescale always does), the yardstick of "compaction speed".
All of them alternate run by run, so load on a shared machine falls on each alike; the ratios of
the medians are printed, CPU seconds beside the wall (they move less with other load).

    .venv/bin/python -m benchmarks.bench_rescale [--rows 2000000] [--runs 3] [--from-buckets 2] [--to-buckets 8]
        [--before REF] [--compaction]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve()


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


def worker(warehouse: str, to_buckets: int, op: str = "rescale") -> dict:
    import resource

    import polars  # noqa: F401 - before the clock, as bench_compaction: the checksums need it (~0.3 s to import)

    from lake_core import Catalog

    table = Catalog(warehouse).get_table("db.t")
    base = _rss_kib()
    started = time.perf_counter()
    cpu = time.process_time()
    if op == "rescale":
        result = table.maintenance.rescale(bucket=to_buckets)
        figures = {
            "rows": result.rows,
            "files_in": result.files_in,
            "files_out": result.files_out,
            "bytes_out": result.bytes_out,
        }
    else:  # compaction of the same table: the yardstick
        done = table.maintenance.compact(full=True, verify=op == "compact-verify")
        if op == "compact-verify" and not done.check().passed:
            raise SystemExit(f"the compaction's in-task check failed: {done.check()}")
        figures = {"rows": done.rows_out}
    elapsed = time.perf_counter() - started
    cpu = time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    return {"seconds": elapsed, "cpu_seconds": cpu, "peak_mib": (peak - base) / 1024, **figures}


def _rss_kib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def _run_worker(tree: Path, copy: Path, to_buckets: int, op: str) -> dict:
    """One timed step in a fresh process, with the ``lake_core`` of ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    cmd = [sys.executable, str(HERE), "--worker", str(copy), "--to-buckets", str(to_buckets), "--op", op]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tree, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"{op} run with {tree} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _build_in(tree: Path, warehouse: Path, rows: int, buckets: int) -> None:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    cmd = [sys.executable, str(HERE), "--build", str(warehouse), "--rows", str(rows), "--from-buckets", str(buckets)]
    subprocess.run(cmd, check=True, cwd=tree, env=env)


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--from-buckets", type=int, default=2)
    ap.add_argument("--to-buckets", type=int, default=8)
    ap.add_argument("--before", help="a git ref whose rescale runs beside this checkout's")
    ap.add_argument("--compaction", action="store_true", help="also time a full compaction of the same table")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--op", default="rescale", help=argparse.SUPPRESS)
    ap.add_argument("--build", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.to_buckets, args.op)))
        return
    if args.build:
        build_table(Path(args.build), args.rows, args.from_buckets)
        return
    tmp = Path(tempfile.mkdtemp(prefix="bench-rescale-"))
    systems: dict[str, tuple[Path, str]] = {"rescale": (ROOT, "rescale")}
    try:
        if args.before:
            before = tmp / "before-tree"
            subprocess.run(
                ["git", "worktree", "add", "--detach", str(before), args.before],
                cwd=ROOT,
                check=True,
                capture_output=True,
            )
            rev = subprocess.run(
                ["git", "rev-parse", "--short", args.before], cwd=ROOT, capture_output=True, text=True
            ).stdout.strip()
            systems[f"rescale at {args.before} ({rev})"] = (before, "rescale")
        if args.compaction:
            systems["compaction"] = (ROOT, "compact")
            systems["compaction, verify=True"] = (ROOT, "compact-verify")
        sources: dict[Path, Path] = {}
        t0 = time.perf_counter()
        for tree, _op in systems.values():
            if tree not in sources:  # each tree builds its own table (a ref may write other files)
                sources[tree] = tmp / f"source-{len(sources)}"
                _build_in(tree, sources[tree], args.rows, args.from_buckets)
        print(
            f"built a {args.rows:,}-row partition in {args.from_buckets} buckets ({len(sources)} copies) in "
            f"{time.perf_counter() - t0:.1f}s; load average {_load()}",
            flush=True,
        )
        runs: dict[str, list[dict]] = {name: [] for name in systems}
        for i in range(args.runs):
            names = list(systems)
            for name in names[i % len(names) :] + names[: i % len(names)]:  # a different one first each round
                tree, op = systems[name]
                copy = tmp / f"run{i}"
                shutil.copytree(sources[tree], copy)
                runs[name].append(_run_worker(tree, copy, args.to_buckets, op))
                shutil.rmtree(copy)
        print(f"{args.rows:,} rows, {args.from_buckets} -> {args.to_buckets} buckets, {args.runs} runs each:")
        medians = {}
        for name, rs in runs.items():
            secs = statistics.median(r["seconds"] for r in rs)
            cpu = statistics.median(r["cpu_seconds"] for r in rs)
            peak = statistics.median(r["peak_mib"] for r in rs)
            n = rs[0]["rows"]
            medians[name] = (n / secs, cpu)
            files = f", {rs[0]['files_in']} files in, {rs[0]['files_out']} out" if "files_in" in rs[0] else ""
            print(
                f"  {name}: {n / secs:,.0f} rows/s (range {n / max(r['seconds'] for r in rs):,.0f}-"
                f"{n / min(r['seconds'] for r in rs):,.0f}), median {secs:.2f} s, CPU {cpu:.2f} s "
                f"(range {min(r['cpu_seconds'] for r in rs):.2f}-{max(r['cpu_seconds'] for r in rs):.2f}), "
                f"peak memory +{peak:,.0f} MiB{files}"
            )
        base_rate, base_cpu = medians["rescale"]
        for name, (rate, cpu) in medians.items():
            if name != "rescale":
                print(f"  rescale / {name}: rows/s x{base_rate / rate:.2f}, CPU x{base_cpu / cpu:.2f}")
        print(f"  load average {_load()}")
    finally:
        if args.before:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(tmp / "before-tree")], cwd=ROOT, capture_output=True
            )
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
