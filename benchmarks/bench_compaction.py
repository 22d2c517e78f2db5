"""Compaction benchmark. Every scenario runs in its own process (the table is built in one
process, the timed step runs in a fresh one), so peak memory is the step's own.

  full-1m      full compaction of 1M rows + 200k updates (bucket 4)
  full-1m-verify  full-1m with ``verify=True`` (the units compute the in-task check's figures,
               their written files read back) and the check itself
  full-20-l0   full compaction of 20 level-0 runs (20 commits of rows/20 overlapping keys, bucket 4)
  full-4m      full-1m with 4x the rows (4M + 800k updates): peak memory must not grow with the bucket
  read-50      merged-read rows/s after 50 small commits: with inline compaction, without any
               compaction, and after a full compaction
  stream-<N>x  streamed merged read (``to_arrow_batch_reader``) of one bucket holding N x the read
               budget (``read.batch-size``, --budget rows) plus N x budget / 2 updates, two
               overlapping runs: rows/s, peak Arrow memory while reading (sampled per batch) and
               peak RSS (warm: after one untimed read). Memory should not grow with N.

The timed process imports lake_core and pyarrow (whose first ``pa.array`` imports pandas, ~0.2 s),
and for ``-verify`` polars (~0.3 s, which the figures' hashing needs), before the clock starts: a
process start-up cost, not a compaction cost. Peak memory: the
process's peak RSS, its growth during the step, and the peak of Arrow's allocator. CPU s is the
step's CPU time (all threads): on a shared machine it moves less with other load than seconds do.

With ``--java`` the full-compaction scenarios are also run by Java Paimon 1.0 (the test driver,
``BatchTableWrite.compact`` of every bucket then one commit) on a copy of the same table, in a JVM
with a full JIT that first compacted another copy to warm up.

    .venv/bin/python -m benchmarks.bench_compaction [--rows 1000000] [--runs 3] [--scenarios ...] [--java]
    .venv/bin/python -m benchmarks.bench_compaction --scenarios stream-1x,stream-10x [--budget 65536]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.steps import add_step_options, handle_step, run_step

ROOT = Path(__file__).resolve().parent.parent


def _table(path: str, write_only: bool):
    from benchmarks import workload
    from lake_core import Catalog

    cat = Catalog(f"file://{path}")
    cat.create_database("db")
    return cat.create_table(
        "db.t",
        schema=workload.SCHEMA,
        primary_keys=["id"],
        options={"bucket": "4", "write-only": str(write_only).lower()},
    )


def build(scenario: str, path: str, rows: int, budget: int) -> None:
    import numpy as np

    from benchmarks import workload

    if scenario.startswith("stream-"):
        from lake_core import Catalog

        n = int(scenario[len("stream-") : -1]) * budget
        cat = Catalog(f"file://{path}")
        cat.create_database("db")
        t = cat.create_table(
            "db.t",
            schema=workload.SCHEMA,
            primary_keys=["id"],
            options={"bucket": "1", "write-only": "true", "read.batch-size": str(budget)},
        )
        t.write_arrow(workload.initial(n))
        t.write_arrow(workload.updates(n, n // 2))
    elif scenario in ("full-1m", "full-1m-verify", "full-4m"):
        rows = rows * 4 if scenario == "full-4m" else rows
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
        for _ in range(50):
            t.write_arrow(workload.updates(rows, 2000 if rows >= 100_000 else max(1, rows // 50)).slice(0))
        if mode == "compacted":
            t.maintenance.compact(full=True)


def _rss_mb() -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024


def timed(scenario: str, path: str) -> dict:
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute  # noqa: F401
    import pyarrow.parquet  # noqa: F401

    import lake_core.compaction.job  # noqa: F401
    from lake_core import Catalog

    pa.array(np.arange(1))  # pyarrow imports pandas on first use
    if scenario.endswith("-verify"):
        import polars  # noqa: F401 - the figures' hashing imports it (0.3 s): a process start-up cost too
    t = Catalog(f"file://{path}").get_table("db.t")
    base = _rss_mb()
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    out = {}
    if scenario.startswith("full"):
        verify = scenario.endswith("-verify")
        r = t.maintenance.compact(full=True, verify=verify)
        if verify and not r.check().passed:
            raise SystemExit(f"the in-task check failed: {r.check().problems}")
        rows = r.rows_in
    elif scenario.startswith("stream-"):
        rows, peak = _stream(t)  # warm-up: the first read of a process pays one-time set-up
        cpu0, t0 = time.process_time(), time.perf_counter()
        rows, peak = _stream(t)
        out["peak_arrow_mb"] = peak / 2**20
    else:
        rows = t.to_arrow().num_rows
    secs = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "secs": secs,
        "cpu_s": cpu,
        "rows": rows,
        "peak_rss_mb": peak,
        "growth_mb": max(0.0, peak - base),
        "peak_arrow_mb": pa.default_memory_pool().max_memory() / 2**20,
        **out,
    }


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


JAVA_BENCH_JVM = ("-Xmx2g", "-Dlog4j2.statusLoggerLevel=OFF")  # full JIT: Java at its best


def _proc_cpu_s(pid: int) -> float:
    """CPU seconds (user + system, all threads) a process has used so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def java_compaction(scenario: str, rows: int, runs: int) -> dict:
    """Java Paimon's full compaction of the table ``build`` makes, timed after a warm-up run
    (wall seconds and the JVM's CPU seconds, GC threads included)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from fixtures.java_paimon import JavaPaimon
    from lake_core import Catalog

    secs, cpus = [], []
    with JavaPaimon(jvm_options=JAVA_BENCH_JVM) as java:
        java.ping()
        for i in range(runs + 1):
            base = tempfile.mkdtemp(prefix="bench-compaction-java-")
            try:
                _sub("--build", scenario, "--path", base, "--rows", str(rows), "--budget", "65536")
                t = Catalog(f"file://{base}").get_table("db.t")
                n = sum(e.file.row_count for e in t.manifest_store.live_entries(t.latest_snapshot()))
                cpu0 = _proc_cpu_s(java._proc.pid)
                t0 = time.perf_counter()
                java.compact(t, full=True, options={"write-only": "false"})  # write-only: no compact manager
                took, cpu = time.perf_counter() - t0, _proc_cpu_s(java._proc.pid) - cpu0
                t = Catalog(f"file://{base}").get_table("db.t")
                levels = {e.file.level for e in t.manifest_store.live_entries(t.latest_snapshot())}
                if levels != {t.options.num_levels - 1}:
                    raise SystemExit(f"Java Paimon's full compaction left files at levels {sorted(levels)}")
                if i:  # the first run loads Paimon's classes and warms the JIT
                    secs.append(took)
                    cpus.append(cpu)
            finally:
                shutil.rmtree(base, ignore_errors=True)
    s = statistics.median(secs)
    return {"rows": n, "secs": s, "rows_s": n / s, "cpu_s": statistics.median(cpus)}


def _sub(*args: str) -> dict:
    return run_step("benchmarks.bench_compaction", *args)


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
    return {
        "scenario": scenario,
        "rows": results[0]["rows"],
        "rows_s": results[0]["rows"] / secs,
        "secs": secs,
        "cpu_s": statistics.median(r["cpu_s"] for r in results),
        **{k: max(r[k] for r in results) for k in ("peak_rss_mb", "growth_mb", "peak_arrow_mb")},
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--budget", type=int, default=65_536, help="read.batch-size of the stream-<N>x scenarios")
    ap.add_argument(
        "--scenarios",
        default="full-1m,full-1m-verify,full-20-l0,full-4m,read-50-inline,read-50-none,read-50-compacted",
    )
    ap.add_argument("--java", action="store_true", help="also time Java Paimon's full compaction of the same tables")
    add_step_options(ap)
    args = ap.parse_args(argv)
    if handle_step(args, lambda scenario, path: build(scenario, path, args.rows, args.budget), timed):
        return
    print(
        f"{'scenario':<20}{'rows':>12}{'rows/s':>14}{'seconds':>10}{'CPU s':>8}{'peak RSS MB':>13}{'growth MB':>11}"
        f"{'peak Arrow MB':>15}{'Java rows/s':>14}{'Java CPU s':>12}{'ours/Java':>11}{'by CPU':>8}"
    )
    out = {}
    for s in args.scenarios.split(","):
        r = out[s] = run(s, args.rows, args.runs, args.budget)
        java = ""
        if args.java and s.startswith("full") and not s.endswith("-verify"):
            j = java_compaction(s, args.rows, args.runs)
            java = (
                f"{j['rows_s']:>14,.0f}{j['cpu_s']:>12.2f}{r['rows_s'] / j['rows_s']:>10.2f}x"
                f"{j['cpu_s'] / r['cpu_s']:>7.2f}x"
            )
        print(
            f"{s:<20}{r['rows']:>12,}{r['rows_s']:>14,.0f}{r['secs']:>10.2f}{r['cpu_s']:>8.2f}{r['peak_rss_mb']:>13,.0f}"
            f"{r['growth_mb']:>11,.0f}{r['peak_arrow_mb']:>15,.1f}{java}",
            flush=True,
        )
    if "read-50-inline" in out and "read-50-compacted" in out:
        print(
            f"merged read after 50 commits, inline compaction vs fully compacted: "
            f"x{out['read-50-compacted']['rows_s'] / out['read-50-inline']['rows_s']:.2f} slower (target <= 1.5)"
        )
    print(
        "targets: full compaction >= 3,500,000 rows/s and >= 2x Java Paimon; peak memory independent of bucket "
        "size (full-4m beside full-1m)"
    )


if __name__ == "__main__":
    main()
