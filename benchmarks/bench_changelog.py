"""Changelog-producing compaction vs plain compaction. A table of ``--rows`` rows, fully compacted,
gets one commit of ``--updates`` rows (half updates of stored keys, half new keys) at level 0
(``write-only``), then one dedicated compaction is timed (each step in a fresh process):

  plain-full        changelog-producer none: full compaction (rows/s over every row read)
  full-changelog    changelog-producer full-compaction: full compaction + its changelog
  plain-l0          changelog-producer none: level 0 forced up to the level below the top and
                    rewritten (no lookup, no changelog; rows/s over the level-0 rows)
  lookup-changelog  changelog-producer lookup: level 0 forced up, each key looked up in the top
                    level, -U/+U/+I written (rows/s over the level-0 rows)

``--java`` also times Java Paimon 1.0's compaction (``BatchTableWrite.compact``) of a copy of the
same table for the lookup and full-compaction producers (the JVM is started before timing).

    .venv/bin/python -m benchmarks.bench_changelog [--rows 1000000] [--updates 200000] [--runs 3] [--java]
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.steps import add_step_options, handle_step, run_step

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = {
    "plain-full": ("none", True),
    "full-changelog": ("full-compaction", True),
    "plain-l0": ("none", False),
    "lookup-changelog": ("lookup", False),
}


def build(scenario: str, path: str, rows: int, updates: int) -> None:
    import numpy as np
    import pyarrow as pa

    from benchmarks import workload
    from lake_core import Catalog

    producer, _full = SCENARIOS[scenario]
    cat = Catalog(f"file://{path}")
    cat.create_database("db")
    options = {"bucket": "4", "write-only": "true", "changelog-producer": producer}
    if scenario == "plain-l0":  # rewrite the level-0 files as the lookup producer does, not just move them
        options["compaction.force-rewrite-all-files"] = "true"
    t = cat.create_table("db.t", schema=workload.SCHEMA, primary_keys=["id"], options=options)
    t.write_arrow(workload.initial(rows))
    t.maintenance.compact(full=True)
    half = updates // 2
    old = np.random.default_rng(3).choice(rows, size=half, replace=False).astype(np.int64)
    new = np.arange(rows, rows + updates - half, dtype=np.int64)
    t.write_arrow(pa.concat_tables([workload.make_rows(old, seed=4), workload.make_rows(new, seed=5)]))
    # Java's user-triggered compaction refuses write-only tables; the timed step is a dedicated compaction anyway
    from lake_core.schema.change import SchemaChange

    cat.alter_table("db.t", SchemaChange.set_option("write-only", "false"))


def _force_level0_up(t):
    """plain-l0: the same unit a lookup table's compaction runs (ForceUpLevel0), without lookup."""
    from lake_core.compaction.job import commit_compaction
    from lake_core.compaction.picker import UniversalConfig, force_pick_level0
    from lake_core.compaction.plan import BucketCompactionUnit, CompactionPlan, run_unit
    from lake_core.lsm.levels import Levels, key_decoder

    units, outcomes = [], []
    store = t.manifest_store
    snap = t.snapshot_manager.latest()
    groups: dict = {}
    for e in store.live_entries(snap):
        groups.setdefault((e.partition, e.bucket, e.total_buckets), []).append(e.file)
    for (part, bucket, total), files in sorted(groups.items()):
        levels = Levels.of(files, t.options.num_levels, key_decoder(t.key_types))
        p = force_pick_level0(levels.sorted_runs(), levels.number_of_levels, UniversalConfig.from_options(t.options))
        if p.unit is None:
            continue
        u = BucketCompactionUnit(
            part, (), bucket, total, p.unit.files, p.unit.output_level, levels.max_level, False, p.unit.reason
        )
        units.append(u)
        outcomes.append(run_unit(t.store, u))
    plan = CompactionPlan(snap.id, tuple(units), (), None)
    commit_compaction(t.store, plan, outcomes, hooks=t)
    return sum(o.counts.rows_in for o in outcomes)


def timed(scenario: str, path: str) -> dict:
    from lake_core import Catalog

    t = Catalog(f"file://{path}").get_table("db.t")
    _producer, full = SCENARIOS[scenario]
    level0 = sum(f.row_count for s in t.new_read_builder().new_scan().plan().splits() for f in s.files if f.level == 0)
    t0 = time.perf_counter()
    if scenario == "plain-l0":
        _force_level0_up(t)
        rows = level0
    else:
        r = t.maintenance.compact(full=full)
        rows = r.rows_in if full else level0
    secs = time.perf_counter() - t0
    t = Catalog(f"file://{path}").get_table("db.t")
    latest = t.latest_snapshot()
    changelog = latest.changelog_record_count or 0
    return {
        "secs": secs,
        "rows": rows,
        "changelog_rows": changelog,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def _sub(*args: str) -> dict:
    return run_step("benchmarks.bench_changelog", *args)


def _java_compact(java, path: str, full: bool) -> dict:
    from lake_core import Catalog

    table_dir = str(Path(path) / "db.db" / "t")
    t = Catalog(f"file://{path}").get_table("db.t")
    level0 = sum(f.row_count for s in t.new_read_builder().new_scan().plan().splits() for f in s.files if f.level == 0)
    total = sum(f.row_count for s in t.new_read_builder().new_scan().plan().splits() for f in s.files)
    t0 = time.perf_counter()
    java.compact(table_dir, full=full)
    secs = time.perf_counter() - t0
    latest = Catalog(f"file://{path}").get_table("db.t").latest_snapshot()
    return {
        "secs": secs,
        "rows": total if full else level0,
        "changelog_rows": latest.changelog_record_count or 0,
        "peak_rss_mb": float("nan"),
    }


def run(scenario: str, rows: int, updates: int, runs: int, java=None) -> tuple[dict, dict | None]:
    results, java_results = [], []
    for _ in range(runs):
        base = tempfile.mkdtemp(prefix="bench-changelog-")
        try:
            _sub("--build", scenario, "--path", base, "--rows", str(rows), "--updates", str(updates))
            if java is not None and scenario in ("full-changelog", "lookup-changelog"):
                shutil.copytree(base, base + "-java")
                java_results.append(_java_compact(java, base + "-java", SCENARIOS[scenario][1]))
            results.append(_sub("--timed", scenario, "--path", base))
        finally:
            shutil.rmtree(base, ignore_errors=True)
            shutil.rmtree(base + "-java", ignore_errors=True)

    def summary(rs):
        secs = statistics.median(r["secs"] for r in rs)
        return {
            "rows": rs[0]["rows"],
            "rows_s": rs[0]["rows"] / secs,
            "secs": secs,
            "changelog_rows": rs[0]["changelog_rows"],
            "peak_rss_mb": max(r["peak_rss_mb"] for r in rs),
        }

    return summary(results), (summary(java_results) if java_results else None)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--updates", type=int, default=200_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument("--java", action="store_true", help="also time Java Paimon 1.0 on a copy")
    add_step_options(ap)
    args = ap.parse_args(argv)
    if handle_step(args, lambda scenario, path: build(scenario, path, args.rows, args.updates), timed):
        return
    java = None
    if args.java:
        sys.path.insert(0, str(ROOT / "tests"))
        from fixtures.java_paimon import JavaPaimon

        java = JavaPaimon()
        java.ping()  # the JVM starts outside the timings
    print(f"{'scenario':<26}{'rows':>12}{'rows/s':>14}{'seconds':>10}{'changelog':>12}{'peak RSS MB':>13}")
    try:
        for s in args.scenarios.split(","):
            r, j = run(s, args.rows, args.updates, args.runs, java)
            print(
                f"{s:<26}{r['rows']:>12,}{r['rows_s']:>14,.0f}{r['secs']:>10.2f}{r['changelog_rows']:>12,}"
                f"{r['peak_rss_mb']:>13,.0f}",
                flush=True,
            )
            if j is not None:
                print(
                    f"{s + ' (Java 1.0)':<26}{j['rows']:>12,}{j['rows_s']:>14,.0f}{j['secs']:>10.2f}"
                    f"{j['changelog_rows']:>12,}{'':>13}",
                    flush=True,
                )
    finally:
        if java is not None:
            java.close()


if __name__ == "__main__":
    main()
