"""table.maintenance.health(): figures from metadata, checked against the files on disk."""

from __future__ import annotations

import datetime as dt
import os
import re
from collections import defaultdict
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lake_core import LakeError

from .helpers import SCHEMA, compact_all, make_table


def _rows(dt_value: str, ids, v: int = 1) -> pa.Table:
    ids = list(ids)
    return pa.table(
        {"dt": [dt_value] * len(ids), "id": ids, "v": [v] * len(ids), "op": ["+I"] * len(ids)}, schema=SCHEMA
    )


def disk_buckets(table) -> dict[tuple[str, int], dict]:
    """Oracle: per (partition dir, bucket), the data files on disk, their rows and sizes (every file
    is live in these tests: no compaction or overwrite ran)."""
    root = Path(table.paths.root.removeprefix("file://"))
    out: dict = defaultdict(lambda: {"files": 0, "rows": 0, "sizes": []})
    for path in root.rglob("data-*"):
        m = re.search(r"(dt=[^/]+)/bucket-(\d+)$", str(path.parent))
        b = out[(m.group(1), int(m.group(2)))]
        b["files"] += 1
        b["rows"] += pq.ParquetFile(path).metadata.num_rows
        b["sizes"].append(os.path.getsize(path))
    return dict(out)


def test_health_matches_the_files_on_disk(warehouse):
    t = make_table(warehouse, bucket="4")
    for i in range(7):  # write-only: every commit adds one level-0 file per bucket it touches
        t.write_arrow(_rows("2024-01-02", range(i * 10, i * 10 + 10)))
    t.write_arrow(_rows("2024-01-03", range(3)))
    h = t.maintenance.health()
    disk = disk_buckets(t)
    assert {(b.partition, b.bucket): b.files for b in h.buckets} == {k: v["files"] for k, v in disk.items()}
    assert {(b.partition, b.bucket): b.rows for b in h.buckets} == {k: v["rows"] for k, v in disk.items()}
    # all level 0 here: one sorted run per file
    assert all(b.sorted_runs == b.files and dict(b.levels) == {"L0": b.files} for b in h.buckets)
    assert h.max_sorted_runs == max(v["files"] for v in disk.values())
    assert h.worst("sorted_runs").location.startswith("dt=2024-01-02/bucket-")
    assert h.snapshot_count == len(list((Path(t.paths.root.removeprefix("file://")) / "snapshot").glob("snapshot-*")))
    assert h.snapshot_count == 8 and h.snapshot_id == 8 and h.earliest_snapshot_id == 1
    assert h.manifest_count >= 8  # one delta manifest per commit
    assert 0 <= h.oldest_snapshot_age_s < 600
    assert h.small_files == h.files  # everything is far below 16 MiB
    smallest = min(s for v in disk.values() for s in v["sizes"])
    assert t.maintenance.health(small_file_bytes=smallest).small_files == 0
    # skew: the largest bucket of each partition over the mean of its 4 buckets
    for p in h.skew:
        rows = {k[1]: v["rows"] for k, v in disk.items() if k[0] == p.partition}
        assert p.buckets == 4 and p.max_rows == max(rows.values())
        assert p.skew == pytest.approx(max(rows.values()) / (sum(rows.values()) / 4))
    assert h.ttl_lag_s is None
    assert hash(h) == hash(t.maintenance.health(now_ms=h.now_ms))  # frozen and hashable; same metadata, same health


def test_compaction_and_manifest_compaction_show_in_health(warehouse):
    t = make_table(warehouse, bucket="2")
    for i in range(6):
        t.write_arrow(_rows("2024-01-02", range(i * 5, i * 5 + 5)))
    before = t.maintenance.health()
    compact_all(t)
    t.maintenance.compact_manifest()
    after = t.maintenance.health()
    assert before.max_sorted_runs == 6 and after.max_sorted_runs == 1
    assert all(dict(b.levels) == {f"L{t.options.num_levels - 1}": 1} for b in after.buckets)
    assert before.manifest_count >= 6 and after.manifest_count == 1
    assert after.snapshot_count == before.snapshot_count + 2
    assert sum(b.rows for b in after.buckets) == 30


def test_bucket_skew_when_one_bucket_holds_everything(warehouse):
    t = make_table(warehouse, bucket="4")
    t.write_arrow(_rows("2024-01-02", range(400)))
    even = t.maintenance.health().skew[0]
    assert 1.0 <= even.skew < 1.5
    # keys of one bucket only: find them from the files just written (the table's own bucket choice)
    one = next(iter(disk_buckets(t)))
    path = next((Path(t.paths.root.removeprefix("file://")) / one[0] / f"bucket-{one[1]}").glob("data-*"))
    ids = pq.read_table(path).column("id").to_pylist()
    t.write_arrow(_rows("2024-01-05", ids))
    skewed = next(p for p in t.maintenance.health().skew if p.partition == "dt=2024-01-05")
    assert skewed.skew == 4.0 and skewed.largest_bucket == one[1]


def test_ttl_lag_from_the_time_field_statistics(warehouse):
    cat_schema = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("ts", pa.int64())])
    from lake_core import Catalog

    cat = Catalog(warehouse)
    cat.create_database("db", ignore_if_exists=True)
    t = cat.create_table(
        "db.ttl",
        schema=cat_schema,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": "1", "record-level.expire-time": "1 h", "record-level.time-field": "ts"},
    )
    now_s = 1_800_000_000
    t.write_arrow(pa.table({"dt": ["a", "a"], "id": [1, 2], "ts": [now_s - 3 * 3600, now_s]}, schema=cat_schema))
    h = t.maintenance.health(now_ms=now_s * 1000)
    assert h.ttl_field == "ts" and h.ttl_s == 3600
    assert h.ttl_lag_s == 2 * 3600  # the oldest record is 3 h old, 1 h is allowed
    # a rule passed in wins over the table's options
    assert t.maintenance.health(ttl_field="ts", ttl="4 h", now_ms=now_s * 1000).ttl_lag_s == 0
    assert (
        t.maintenance.health(ttl_field="ts", ttl=dt.timedelta(minutes=30), now_ms=now_s * 1000).ttl_lag_s
        == 3 * 3600 - 1800
    )


def test_empty_table_and_bad_arguments(warehouse):
    t = make_table(warehouse)
    h = t.maintenance.health()
    assert (h.snapshot_id, h.snapshot_count, h.buckets, h.max_sorted_runs) == (None, 0, (), 0)
    with pytest.raises(LakeError, match="no_such"):
        t.maintenance.health(ttl_field="no_such", ttl="1 h")
    with pytest.raises(LakeError, match="ttl_field and ttl"):
        t.maintenance.health(ttl="1 h")
    with pytest.raises(LakeError, match="small_file_bytes"):
        t.maintenance.health(small_file_bytes=0)


def test_acquired_lease_pins_until_released(warehouse):
    t = make_table(warehouse)
    for i in range(6):
        t.write_arrow(_rows("2024-01-02", [i]))
    lease = t.maintenance.acquire_lease(snapshot_id=3, holder="dagster", ttl=dt.timedelta(minutes=5))
    assert lease.snapshot_id == 3 and t.maintenance.consumers.get(lease.consumer_id) == 3
    res = t.maintenance.expire_snapshots(retain_min=1, older_than=dt.timedelta(0))
    assert res.expired_snapshots == (1, 2)
    assert t.maintenance.release_lease(consumer_id=lease.consumer_id) is True
    assert t.maintenance.release_lease(consumer_id=lease.consumer_id) is False
    assert t.maintenance.expire_snapshots(retain_min=1, older_than=dt.timedelta(0)).expired_snapshots == (3, 4, 5)
    with pytest.raises(LakeError, match="snapshot 2"):
        t.maintenance.acquire_lease(snapshot_id=2, holder="late")
    assert t.maintenance.consumers.consumers() == []
    with pytest.raises(LakeError, match="not a lease"):
        t.maintenance.release_lease(consumer_id="some-consumer")
