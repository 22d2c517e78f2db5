"""Scale benchmark: planning and committing a full compaction of a table with many small buckets.

The table: ``--buckets`` buckets x ``--partitions`` partitions of a primary-key table, one small
data file per (partition, bucket), written through the normal write path in commits of
``--per-commit`` partitions (``write-only``, so no inline compaction). It is generated once into
``--table-dir`` (reused when present) and every measurement runs on a hard-linked copy of it.

A full compaction of it is one unit per bucket; every unit is a lone small level-0 file, which
compaction moves to the top level by metadata only (an upgrade: no data file is read or written),
so the job's single COMPACT commit carries one DELETE and one ADD entry per bucket.

Each measurement runs in a fresh process: (a) planning (``table.maintenance.compaction_job``,
cold: a new table handle), then again on a second table handle of the same process (what the next
sensor tick or planning call does: the process-wide manifest cache serves what the first decoded),
and a cold plan of one bucket (``buckets=[0]``: the other buckets' entries are not decoded), (b) running the units (upgrades, in 2 threads; reported, not a target),
(c) the one commit, (d) peak memory of that process (``ru_maxrss``). Planning and the commit are
given in wall-clock seconds and in CPU seconds of the process (all its threads), which other load
on a shared machine disturbs far less. With ``--baseline-src DIR``
the same measurement also runs against the ``lake_core`` in ``DIR`` (a checkout of the commit
before, e.g. a ``git worktree``) and the figures print side by side.

    PYTHONPATH=$PWD .venv/bin/python -m benchmarks.bench_scale [--partitions 1000] [--buckets 100]
        [--table-dir /tmp/bench-scale-100x1000] [--baseline-src /tmp/lake-base]

``--partitions 100`` is the quick variant (10,000 buckets).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

SCHEMA = pa.schema([("p", pa.int32()), ("id", pa.int64()), ("v", pa.int64())])
ROWS_PER_BUCKET = 8  # a few rows per bucket: with hashing, every bucket of a partition gets some


def generate(table_dir: Path, partitions: int, buckets: int, per_commit: int) -> None:
    from lake_core import Catalog  # noqa: PLC0415 - the measurement imports lake_core from --src

    cat = Catalog(table_dir.as_uri())
    cat.create_database("db")
    t = cat.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["p", "id"],
        partition_keys=["p"],
        options={"bucket": str(buckets), "write-only": "true"},
    )
    rows = buckets * ROWS_PER_BUCKET
    for start in range(0, partitions, per_commit):
        n = min(per_commit, partitions - start)
        ids = np.arange(rows * n, dtype=np.int64)
        t.write_arrow(
            pa.table({"p": (start + ids // rows).astype(np.int32), "id": ids % rows, "v": ids}, schema=SCHEMA)
        )
        print(f"  generated partitions {start}..{start + n - 1}", flush=True)


def measure(table_dir: Path) -> dict:
    """Runs in a fresh process: plan, run, commit a full compaction of the table at ``table_dir``."""
    from lake_core import Catalog  # noqa: PLC0415 - imported from the --src under measurement
    from lake_core.distributed import run_units_locally  # noqa: PLC0415 - as above

    t = Catalog(table_dir.as_uri()).get_table("db.t")
    live_before = t.latest_snapshot()
    t0, c0 = time.perf_counter(), time.process_time()
    job = t.maintenance.compaction_job(full=True)
    plan_s, plan_cpu_s = time.perf_counter() - t0, time.process_time() - c0
    again = Catalog(table_dir.as_uri()).get_table("db.t")  # a second open: the next tick's
    t0, c0 = time.perf_counter(), time.process_time()
    assert len(again.maintenance.compaction_job(full=True).plan.units) == len(job.plan.units)
    plan_again_s, plan_again_cpu_s = time.perf_counter() - t0, time.process_time() - c0
    plan_bucket_s = _plan_one_bucket(table_dir)
    t0 = time.perf_counter()
    outcomes = run_units_locally(job, parallelism=2)
    run_s = time.perf_counter() - t0
    t0, c0 = time.perf_counter(), time.process_time()
    result = job.commit(outcomes)
    commit_s, commit_cpu_s = time.perf_counter() - t0, time.process_time() - c0
    maxrss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    # read back: a new handle sees every file at the top level, from the new snapshot's manifests
    t2 = Catalog(table_dir.as_uri()).get_table("db.t")
    snap = t2.latest_snapshot()
    live = t2.manifest_store.live_entries(snap)
    levels = sorted({e.file.level for e in live})
    return {
        "plan_s": plan_s,
        "plan_cpu_s": plan_cpu_s,
        "plan_again_s": plan_again_s,
        "plan_again_cpu_s": plan_again_cpu_s,
        "plan_bucket_s": plan_bucket_s,
        "run_s": run_s,
        "commit_s": commit_s,
        "commit_cpu_s": commit_cpu_s,
        "maxrss_mb": maxrss_mb,
        "units": len(job.plan.units),
        "files_upgraded": result.files_upgraded,
        "snapshot": snap.id,
        "base_snapshot": live_before.id,
        "live_files_after": len(live),
        "levels_after": levels,
        "manifests_after": len(t2.manifest_store.data_manifests(snap)),
    }


def _plan_one_bucket(table_dir: Path) -> float | None:
    """CPU seconds to plan bucket 0 of every partition on a new handle with nothing cached (None:
    the lake_core measured has no bucket selection)."""
    import lake_core  # noqa: PLC0415 - as in measure()

    clear = getattr(lake_core, "clear_manifest_cache", None)
    if clear is None:
        return None
    clear()
    t = lake_core.Catalog(table_dir.as_uri()).get_table("db.t")
    t0 = time.process_time()
    plan = t.maintenance.plan_compaction(full=True, buckets=[0])
    seconds = time.process_time() - t0
    assert plan.units and {u.bucket for u in plan.units} == {0}
    return seconds


def run_measure(src: Path, pristine: Path, scratch: Path) -> dict:
    copy = scratch / "copy"
    if copy.exists():
        shutil.rmtree(copy)
    subprocess.run(["cp", "-al", str(pristine), str(copy)], check=True)
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--measure", str(copy)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    shutil.rmtree(copy)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _cell(fmt: str, value) -> str:
    return "-" if value is None else fmt.format(value)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--buckets", type=int, default=100)
    ap.add_argument("--per-commit", type=int, default=100, help="partitions per generating commit")
    ap.add_argument("--table-dir", help="where the generated table is kept (default: a temp dir)")
    ap.add_argument("--src", default=str(Path(__file__).resolve().parent.parent), help="lake_core to measure")
    ap.add_argument("--baseline-src", help="also measure the lake_core of this checkout (the commit before)")
    ap.add_argument("--measure", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(measure(Path(args.measure))))
        return
    scratch = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    pristine = Path(args.table_dir) if args.table_dir else scratch / "table"
    try:
        if not (pristine / "db.db").exists():
            print(f"generating {args.buckets} buckets x {args.partitions} partitions into {pristine}", flush=True)
            t0 = time.perf_counter()
            generate(pristine, args.partitions, args.buckets, args.per_commit)
            print(f"generated in {time.perf_counter() - t0:.1f} s", flush=True)
        runs = {"after": run_measure(Path(args.src), pristine, scratch)}
        if args.baseline_src:
            runs = {"before": run_measure(Path(args.baseline_src), pristine, scratch), **runs}
        print(f"\n{args.buckets} buckets x {args.partitions} partitions, full compaction (2 cores)")
        rows = [
            ("plan (s)", "plan_s", "{:.2f}"),
            ("  CPU (s)", "plan_cpu_s", "{:.2f}"),
            ("plan, 2nd open (s)", "plan_again_s", "{:.2f}"),
            ("  CPU (s)", "plan_again_cpu_s", "{:.2f}"),
            ("1 bucket, CPU (s)", "plan_bucket_s", "{:.2f}"),
            ("run units (s)", "run_s", "{:.2f}"),
            ("commit (s)", "commit_s", "{:.2f}"),
            ("  CPU (s)", "commit_cpu_s", "{:.2f}"),
            ("peak RSS (MB)", "maxrss_mb", "{:.0f}"),
            ("units", "units", "{}"),
            ("live files after", "live_files_after", "{}"),
            ("manifests after", "manifests_after", "{}"),
        ]
        print(f"{'':20}" + "".join(f"{k:>12}" for k in runs))
        for label, key, fmt in rows:
            print(f"{label:20}" + "".join(f"{_cell(fmt, r[key]):>12}" for r in runs.values()))
        for name, r in runs.items():
            assert r["units"] == r["live_files_after"] == r["files_upgraded"], (name, r)
            assert r["levels_after"] == [max(r["levels_after"])], (name, r)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
