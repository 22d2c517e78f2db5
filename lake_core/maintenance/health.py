"""A table's health from cheap metadata only: the snapshot hints, the latest snapshot, its manifest
list and manifests. No data file is opened, so a sensor can afford it every tick.

Figures (per bucket, then rolled up):

- sorted runs: level-0 files plus non-empty higher levels (what Paimon's ``UniversalCompaction``
  counts against ``num-sorted-run.compaction-trigger``);
- small files: data files below a size threshold;
- snapshot count and oldest snapshot age (what ``snapshot.num-retained.*`` / ``snapshot.time-retained``
  bound); manifest count of the latest snapshot (what ``compact_manifest`` folds);
- TTL lag: how long past its expiry the oldest record is, from the time field's value statistics
  (``record-level.expire-time`` / ``record-level.time-field``, or a rule passed in);
- bucket skew: per partition, the largest bucket's rows over the mean per bucket (1.0 is even).
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lake_core.compaction.plan import level_counts, ttl_lag_s
from lake_core.compaction.record_expiry import RecordExpiry
from lake_core.errors import MaintenanceArgumentError
from lake_core.options import parse_duration_ms

if TYPE_CHECKING:
    from lake_core.manifest.metadata import DataFileMeta
    from lake_core.table import FileStoreTable

DEFAULT_SMALL_FILE_BYTES = 16 * 1024 * 1024


def partition_spec(keys, values) -> str:
    """('dt',), ('2024-01-02',) → 'dt=2024-01-02' (Paimon's partition path), '' when unpartitioned."""
    return "/".join(f"{k}={v}" for k, v in zip(keys, values))


@dataclass(frozen=True)
class BucketHealth:
    partition: str  # 'dt=2024-01-02', '' when the table is unpartitioned
    bucket: int
    files: int
    sorted_runs: int
    levels: tuple[tuple[str, int], ...]  # (('L0', files), ('L5', files)): plan.level_counts as pairs
    small_files: int
    rows: int
    bytes: int
    ttl_lag_s: int | None  # None: no record-expiry rule

    @property
    def location(self) -> str:
        """'dt=2024-01-02/bucket-3' (the directory the bucket's files live in)."""
        return "/".join(p for p in (self.partition, f"bucket-{self.bucket}") if p)


@dataclass(frozen=True)
class PartitionSkew:
    partition: str
    buckets: int  # bucket count of the partition
    max_rows: int  # rows of its largest bucket
    mean_rows: float
    largest_bucket: int

    @property
    def skew(self) -> float:
        return self.max_rows / self.mean_rows if self.mean_rows else 1.0


@dataclass(frozen=True)
class TableHealth:
    """What ``table.maintenance.health()`` reports; frozen, computed from metadata at one instant."""

    table: str
    snapshot_id: int | None  # latest snapshot (None: empty table)
    snapshot_count: int
    earliest_snapshot_id: int | None
    oldest_snapshot_age_s: float | None
    manifest_count: int  # data manifests (base + delta) of the latest snapshot
    small_file_bytes: int
    buckets: tuple[BucketHealth, ...]  # sorted by partition, bucket
    skew: tuple[PartitionSkew, ...]  # one per partition
    ttl_field: str | None = None
    ttl_s: int | None = None
    now_ms: int = 0

    # -- roll-ups ---------------------------------------------------------------------------------
    @property
    def files(self) -> int:
        return sum(b.files for b in self.buckets)

    @property
    def small_files(self) -> int:
        return sum(b.small_files for b in self.buckets)

    @property
    def max_sorted_runs(self) -> int:
        return max((b.sorted_runs for b in self.buckets), default=0)

    def worst(self, figure: str) -> BucketHealth | None:
        """The bucket with the highest ``figure`` ('sorted_runs', 'small_files', 'ttl_lag_s'); the first
        by partition and bucket on a tie."""
        ranked = [b for b in self.buckets if getattr(b, figure) is not None]
        return min(ranked, key=lambda b: (-getattr(b, figure), b.partition, b.bucket)) if ranked else None

    @property
    def ttl_lag_s(self) -> int | None:
        if self.ttl_field is None:
            return None
        return max((b.ttl_lag_s or 0 for b in self.buckets), default=0)

    @property
    def max_skew(self) -> PartitionSkew | None:
        return max(self.skew, key=lambda p: (p.skew, p.partition)) if self.skew else None

    def as_metadata(self) -> dict[str, Any]:
        """Flat numbers for Dagster metadata (None values left out)."""
        worst_skew = self.max_skew
        out = {
            "snapshot_id": self.snapshot_id,
            "snapshot_count": self.snapshot_count,
            "oldest_snapshot_age_s": self.oldest_snapshot_age_s,
            "manifest_count": self.manifest_count,
            "buckets": len(self.buckets),
            "files": self.files,
            "small_files": self.small_files,
            "max_sorted_runs": self.max_sorted_runs,
            "ttl_lag_s": self.ttl_lag_s,
            "max_bucket_skew": round(worst_skew.skew, 3) if worst_skew else None,
        }
        return {k: v for k, v in out.items() if v is not None}


def _record_expiry(table: FileStoreTable, now_s: int, ttl_field: str | None, ttl) -> RecordExpiry | None:
    if ttl_field is None and ttl is None:
        return RecordExpiry.of(table.store, now_s)  # the table's own record-level.* options
    if ttl_field is None or ttl is None:
        raise MaintenanceArgumentError(f"health of {table.identifier}: give both ttl_field and ttl (or neither)")
    if ttl_field not in table.schema.field_names:
        raise MaintenanceArgumentError(
            f"health of {table.identifier}: ttl_field {ttl_field!r} is not a column "
            f"(columns: {table.schema.field_names})"
        )
    if hasattr(ttl, "total_seconds"):
        ttl_s = int(ttl.total_seconds())
    else:
        ttl_s = parse_duration_ms("ttl", str(ttl)) // 1000
    return RecordExpiry(ttl_field, table.schema.field(ttl_field).type, ttl_s, now_s)


def _sorted_runs(files) -> int:
    counts = level_counts(files)
    return counts.get("L0", 0) + sum(1 for lv in counts if lv != "L0")


def table_health(
    table: FileStoreTable,
    *,
    small_file_bytes: int = DEFAULT_SMALL_FILE_BYTES,
    ttl_field: str | None = None,
    ttl=None,
    now_ms: int | None = None,
) -> TableHealth:
    """Health of ``table`` at its latest snapshot (see the module docstring for the figures)."""
    if not isinstance(small_file_bytes, int) or small_file_bytes < 1:
        raise MaintenanceArgumentError(
            f"health of {table.identifier}: small_file_bytes {small_file_bytes!r} must be a positive number of bytes"
        )
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    expiry = _record_expiry(table, now_ms // 1000, ttl_field, ttl)
    sm = table.snapshot_manager
    latest = sm.latest()
    earliest_id = sm.earliest_id()
    if latest is None or earliest_id is None:
        return TableHealth(
            table.identifier,
            None,
            0,
            None,
            None,
            0,
            small_file_bytes,
            (),
            (),
            expiry.field if expiry else None,
            expiry.expire_s if expiry else None,
            now_ms,
        )
    try:
        oldest_age = max(0.0, (now_ms - sm.get(earliest_id).time_millis) / 1000)
    except Exception:  # noqa: BLE001 - expired between the hint and the read: the next one is as old
        oldest_age = None
    store = table.manifest_store
    groups: dict[tuple[bytes, int], list] = defaultdict(list)
    for e in store.live_entries(latest):
        groups[(e.partition, e.bucket)].append(e)
    keys = table.schema.partition_keys
    buckets: list[BucketHealth] = []
    per_partition: dict[str, list[tuple[int, int, int]]] = defaultdict(list)  # spec -> (bucket, rows, total)
    for (partition, bucket), entries in groups.items():
        files: list[DataFileMeta] = [e.file for e in entries]
        spec = partition_spec(keys, store.partition_values(partition))
        rows = sum(f.row_count for f in files)
        buckets.append(
            BucketHealth(
                spec,
                bucket,
                len(files),
                _sorted_runs(files),
                tuple(level_counts(files).items()),
                sum(1 for f in files if f.file_size < small_file_bytes),
                rows,
                sum(f.file_size for f in files),
                ttl_lag_s(files, expiry, table.store),
            )
        )
        per_partition[spec].append((bucket, rows, entries[0].total_buckets))
    buckets.sort(key=lambda b: (b.partition, b.bucket))
    skew = []
    for spec, items in sorted(per_partition.items()):
        # fixed buckets: empty buckets count (they hold no entry); dynamic (-1): the buckets seen
        n = max(max(total for _, _, total in items), len(items))
        largest = max(items, key=lambda i: (i[1], -i[0]))
        skew.append(PartitionSkew(spec, n, largest[1], sum(r for _, r, _ in items) / n, largest[0]))
    return TableHealth(
        table.identifier,
        latest.id,
        latest.id - earliest_id + 1,
        earliest_id,
        oldest_age,
        len(store.data_manifests(latest)),
        small_file_bytes,
        tuple(buckets),
        tuple(skew),
        expiry.field if expiry else None,
        expiry.expire_s if expiry else None,
        now_ms,
    )
