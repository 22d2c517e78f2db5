"""Maintenance benchmark: planning a read after many small commits, before and after
``compact_manifest``, beside a fresh table holding the same rows; and expiring 1,000 snapshots
(lake_core, and Java Paimon's ``ExpireSnapshots`` on a copy of the same table with ``--java``).

The table: 2,000 snapshots of 5 upserted keys each (one bucket), a full data compaction every 20
commits, with default manifest options: every commit runs minor manifest compaction, and the
16 MB full-compaction trigger is out of reach for a small table, so DELETE entries and small
manifests pile up. ``--no-merge`` disables merging inside commits (what a writer that never merges
manifests, such as pypaimon, leaves behind; use fewer commits, building is quadratic). Planning is
timed on a new table handle each run (cold manifest cache); medians of 5 runs. No assertions.

    .venv/bin/python -m benchmarks.bench_maintenance [--commits 2000] [--expire 1000] [--java] [--no-merge]
"""

from __future__ import annotations

import argparse
import datetime as dt
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import pyarrow as pa

from lake_core import Catalog
from lake_core.compaction.bucket_compact import compact_bucket

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64())])
OPTIONS = {"bucket": "1", "write-only": "true"}
NO_MERGE = {"manifest.merge-min-count": "1000000", "manifest.full-compaction-threshold-size": "1 gb"}


def _compact_all(t) -> None:
    by_bucket: dict = {}
    for e in t.manifest_store.live_entries(t.latest_snapshot()):
        by_bucket.setdefault((e.partition, e.bucket, e.total_buckets), []).append(e.file)
    t.new_batch_write_builder().new_commit().commit(
        [compact_bucket(t.store, p, b, tb, files) for (p, b, tb), files in by_bucket.items()]
    )


def build(wh: str, commits: int, options: dict) -> None:
    cat = Catalog(wh)
    cat.create_database("db")
    t = cat.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options=options)
    n = 0
    while t.latest_snapshot() is None or t.latest_snapshot().id < commits:
        ids = [(n * 5 + k) % 5000 for k in range(5)]
        t.write_arrow(pa.table({"id": ids, "v": [n] * 5}, schema=SCHEMA))
        n += 1
        if n % 20 == 0:
            _compact_all(t)


def plan_seconds(wh: str, runs: int = 5) -> tuple[float, int]:
    times, entries = [], 0
    for _ in range(runs):
        t = Catalog(wh).get_table("db.t")  # new handle: cold manifest cache
        t0 = time.perf_counter()
        splits = t.new_read_builder().new_scan().plan().splits()
        times.append(time.perf_counter() - t0)
        entries = len(t.manifest_store.data_manifests(t.latest_snapshot()))
        assert splits is not None
    return statistics.median(times), entries


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--commits", type=int, default=2000)
    ap.add_argument("--expire", type=int, default=1000)
    ap.add_argument("--java", action="store_true", help="also time Java Paimon's expiry on a copy")
    ap.add_argument("--no-merge", action="store_true", help="write without manifest merging in commits")
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="bench-maint-"))
    try:
        wh = (base / "wh").as_uri()
        t0 = time.perf_counter()
        build(wh, args.commits, {**OPTIONS, **(NO_MERGE if args.no_merge else {})})
        print(f"built {args.commits} snapshots in {time.perf_counter() - t0:.1f} s")
        t = Catalog(wh).get_table("db.t")

        before, n_before = plan_seconds(wh)
        res = t.maintenance.compact_manifest()
        after, n_after = plan_seconds(wh)
        fresh_wh = (base / "fresh").as_uri()
        cat = Catalog(fresh_wh)
        cat.create_database("db")
        cat.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options=OPTIONS).write_arrow(t.to_arrow())
        fresh, n_fresh = plan_seconds(fresh_wh)
        print(f"plan a read after {args.commits} commits: {before * 1000:8.1f} ms ({n_before} manifests)")
        print(f"  after compact_manifest ({res.duration_s:.2f} s): {after * 1000:8.1f} ms ({n_after} manifests)")
        print(f"  fresh table, same rows:            {fresh * 1000:8.1f} ms ({n_fresh} manifests)")
        print(f"  after / fresh: {after / fresh:.2f}x   before / fresh: {before / fresh:.2f}x")

        if args.java:
            shutil.copytree(base / "wh", base / "java")
        t0 = time.perf_counter()
        r = (
            Catalog(wh)
            .get_table("db.t")
            .maintenance.expire_snapshots(
                retain_min=max(1, args.commits - args.expire + 1), older_than=dt.timedelta(0), max_deletes=args.expire
            )
        )
        took = time.perf_counter() - t0
        print(
            f"expire {len(r.expired_snapshots)} snapshots (lake_core): {took:.2f} s, "
            f"{r.deleted_data_files} data files + {r.deleted_metadata_files} metadata files, "
            f"{r.bytes_reclaimed / 1e6:.1f} MB"
        )
        if args.java:
            import sys

            sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
            from fixtures.java_paimon import JavaPaimon

            with JavaPaimon() as java:
                java.ping()
                t0 = time.perf_counter()
                n = java.expire_snapshots(
                    str(base / "java" / "db.db" / "t"),
                    retain_min=max(1, args.commits - args.expire + 1),
                    time_retained_ms=0,
                    max_deletes=args.expire,
                )
                print(
                    f"expire {n} snapshots (Java Paimon; JVM up, Paimon classes load in this call): {time.perf_counter() - t0:.2f} s"
                )
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
