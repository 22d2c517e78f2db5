"""What a blocking check costs beside the operation it verifies: the deep check (re-reads the table
before and after: ``verify_rescale``, ``verify_compaction``) against the in-task check (compares
the figures the tasks computed: ``check_rescale``, ``result.check()``), in this process.

- rescale: one partition of N rows (an initial commit plus a 10% update, so the read merges),
  2 -> 8 buckets;
- compaction: the same rows in 2 buckets as 5 overlapping level-0 commits, full compaction with
  ``verify=True`` (the in-task check needs its figures); plus what the figures cost inside the
  compaction (its units run with and without ``verify``, nothing committed).

Each run works on a fresh copy of the table; the two checks run in alternating order (deep first on
even runs). Prints the medians and the check/operation ratios.

    .venv/bin/python -m benchmarks.bench_verify [--rows 1000000] [--runs 3]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from benchmarks.bench_rescale import build_table as build_rescale_table
from lake_core import Catalog, check_rescale, run_locally
from lake_core.compaction.job import abort_compaction

SCHEMA = pa.schema(
    [("dt", pa.string()), ("id", pa.int64()), ("name", pa.string()), ("v", pa.int64()), ("d", pa.float64())]
)


def build_compaction_table(warehouse: Path, rows: int) -> None:
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t",
        SCHEMA,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": "2", "write-only": "true"},
    )
    rng = np.random.default_rng(7)
    for c in range(5):
        ids = np.arange(rows, dtype=np.int64) if c == 0 else rng.choice(rows, rows // 5, replace=False)
        n = len(ids)
        table.write_arrow(
            pa.table(
                {
                    "dt": pa.array(["2024-01-01"] * n),
                    "id": pa.array(ids.astype(np.int64)),
                    "name": pa.array([f"name-{i % 1000}" for i in range(n)]),
                    "v": pa.array(rng.integers(0, 10**9, n)),
                    "d": pa.array(rng.random(n)),
                },
                schema=SCHEMA,
            )
        )


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def rescale_run(warehouse: Path, i: int) -> dict:
    table = Catalog(str(warehouse)).get_table("db.t")
    op_s, result = _timed(lambda: run_locally(table.maintenance.rescale_job(bucket=8)))
    table = Catalog(str(warehouse)).get_table("db.t")
    rewritten = {p.partition: p.snapshot_read for p in result.partitions if p.skipped is None}

    def deep():
        return table.maintenance.verify_rescale(partitions=rewritten, snapshot_id=result.snapshot_id, bucket=8)

    def in_task():
        return check_rescale(result, bucket=8)

    return _checks(op_s, deep, in_task, i)


def compaction_run(warehouse: Path, i: int) -> dict:
    table = Catalog(str(warehouse)).get_table("db.t")
    op_s, result = _timed(lambda: table.maintenance.compact(full=True, verify=True))

    def deep():
        return table.maintenance.verify_compaction(
            before_snapshot_id=result.snapshot_id - 1, after_snapshot_id=result.snapshot_id
        )

    def in_task():
        return result.check()

    return _checks(op_s, deep, in_task, i)


def _checks(op_s: float, deep, in_task, i: int) -> dict:
    order = [("deep", deep), ("in_task", in_task)]
    out = {"op": op_s}
    for name, fn in order if i % 2 == 0 else reversed(order):
        secs, v = _timed(fn)
        if not v.passed:
            raise SystemExit(f"{name} check failed: {v.problems}")
        out[name] = secs
    return out


def figures_overhead_run(warehouse: Path, i: int) -> dict:
    """The compaction's units (no commit) with and without ``verify`` (the in-task figures), alternating."""
    table = Catalog(str(warehouse)).get_table("db.t")
    out = {}
    for verify in (True, False) if i % 2 == 0 else (False, True):
        units = table.maintenance.plan_compaction(full=True, verify=verify).units
        t0 = time.perf_counter()
        outcomes = [table.maintenance.compact_unit(unit=u) for u in units]
        out["with" if verify else "without"] = time.perf_counter() - t0
        abort_compaction(table.store, outcomes)
    return out


def _median(runs: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def _report(what: str, runs: list[dict]) -> None:
    op, deep, new = _median(runs, "op"), _median(runs, "deep"), _median(runs, "in_task")
    print(
        f"{what}: operation {op:.2f} s; deep check {deep:.2f} s ({deep / op:.2f}x); "
        f"in-task check {new * 1000:.2f} ms ({new / op:.4f}x)  [runs: "
        + "; ".join(f"{r['op']:.2f}/{r['deep']:.2f}/{r['in_task'] * 1000:.1f}ms" for r in runs)
        + "]",
        flush=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for what, build, run in (
            ("rescale 2 -> 8 buckets", lambda p: build_rescale_table(p, args.rows, 2), rescale_run),
            ("full compaction, 5 commits", lambda p: build_compaction_table(p, args.rows), compaction_run),
        ):
            source = Path(tmp) / "source"
            build(source)
            runs = []
            for i in range(args.runs):
                copy = Path(tmp) / f"run{i}"
                shutil.copytree(source, copy)
                runs.append(run(copy, i))
                shutil.rmtree(copy)
            _report(what, runs)
            if run is compaction_run:
                over = [figures_overhead_run(source, i) for i in range(args.runs)]
                w, wo = _median(over, "with"), _median(over, "without")
                print(
                    f"  the compaction's units: {wo:.2f} s without verify, {w:.2f} s with "
                    f"(+{(w - wo) / wo:.0%})  [runs: "
                    + "; ".join(f"{r['without']:.2f}/{r['with']:.2f}" for r in over)
                    + "]",
                    flush=True,
                )
            shutil.rmtree(source)


if __name__ == "__main__":
    main()
