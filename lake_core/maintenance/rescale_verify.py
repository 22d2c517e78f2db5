"""Verification of a committed rescale: in-task (:func:`check_rescale`, the blocking check) or
deep (:func:`verify_rescale`).

:func:`check_rescale` compares the figures each partition's task computed and returned with its
outcome, reading no table file: rows and checksum of the partition as the task read it (every
committed row, level 0 too) against the new files read back in the same task, and the bucket
count the files were written with. The deep check below re-reads the table at both snapshots.

The deep check: independent before/after verification of a committed rescale, from the table alone.

For each rescaled partition it reads the partition at the snapshot the rescale read and at the
snapshot it committed, and compares the row count, a checksum of the primary-key columns and a
checksum of whole rows (order-independent, :mod:`.checksum`); it also checks that every live file
of the partition at the committed snapshot has the target ``_TOTAL_BUCKETS``. The rescale verifies
its own files before committing; this re-reads what readers now see, after the commit, which is
what a scheduler's blocking check records.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING

from lake_core.errors import SnapshotNotFoundError
from lake_core.format.checksum import Checksum, table_checksum
from lake_core.maintenance.rescale import RescaleResult, _named, _partition_entries, _spec_text
from lake_core.read.scan import TableScan
from lake_core.read.split_read import SplitRead

if TYPE_CHECKING:
    from lake_core.table import FileStoreTable


@dataclasses.dataclass(frozen=True, kw_only=True)
class PartitionVerification:
    partition: str  # 'dt=2024-01-01'
    snapshot_before: int
    snapshot_after: int
    rows_before: int
    rows_after: int
    row_checksum_before: str
    row_checksum_after: str
    buckets_after: tuple[int, ...]  # distinct _TOTAL_BUCKETS of the partition's live files after
    key_checksum_before: str = ""  # the deep check only
    key_checksum_after: str = ""
    problems: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return not self.problems


@dataclasses.dataclass(frozen=True, kw_only=True)
class RescaleVerification:
    table: str
    bucket: int
    snapshot_after: int
    partitions: tuple[PartitionVerification, ...]
    compared: str = "deep: each partition re-read at the snapshot the rescale read and at the one it committed"

    @property
    def passed(self) -> bool:
        return all(p.passed for p in self.partitions)

    @property
    def problems(self) -> tuple[str, ...]:
        return tuple(f"{p.partition}: {what}" for p in self.partitions for what in p.problems)


def _partition_state(table: FileStoreTable, snapshot_id: int, text: str):
    """(rows checksum, key checksum, distinct total buckets) of one partition at one snapshot."""
    snap = table.snapshot(snapshot_id)
    found = [
        (part, entries)
        for part, entries in _partition_entries(table, snap).items()
        if _spec_text(_named(table, part)) == text
    ]
    if not found:
        empty = Checksum(0, "0" * 32)
        return empty, empty, ()
    part, entries = found[0]
    # every committed row (level 0 too, where batch reads hide it): what the rescale had to carry over
    rows = SplitRead(table.store).to_arrow(
        [s for s in TableScan(table.store, snap, all_levels=True).splits() if s.partition == part]
    )
    keys = list(table.schema.primary_keys) or rows.column_names
    return table_checksum(rows), table_checksum(rows.select(keys)), tuple(sorted({e.total_buckets for e in entries}))


def verify_rescale(
    table: FileStoreTable, *, partitions: Mapping[str, int], snapshot_id: int, bucket: int
) -> RescaleVerification:
    """Verify partitions (``{'dt=2024-01-01': snapshot the rescale read}``) at ``snapshot_id``
    (the snapshot the rescale committed) against ``bucket`` buckets. Never raises for a failed
    comparison: the problems are in the result."""
    out = []
    for text, before_id in partitions.items():
        problems = []
        try:
            rows_b, keys_b, _ = _partition_state(table, before_id, text)
        except (SnapshotNotFoundError, FileNotFoundError):
            rows_b = keys_b = Checksum(-1, "")
            problems.append(f"snapshot {before_id} (before the rescale) no longer exists; cannot compare")
        rows_a, keys_a, buckets = _partition_state(table, snapshot_id, text)
        if rows_b.rows >= 0:
            if rows_a.rows != rows_b.rows:
                problems.append(f"{rows_b.rows} rows at snapshot {before_id} but {rows_a.rows} at {snapshot_id}")
            if keys_a != keys_b:
                problems.append(
                    f"key checksum {keys_b.digest} at snapshot {before_id} but {keys_a.digest} at {snapshot_id}"
                )
            elif rows_a != rows_b:
                problems.append(
                    f"same keys but row checksum {rows_b.digest} at snapshot {before_id} "
                    f"and {rows_a.digest} at {snapshot_id}: values changed"
                )
        if buckets != (bucket,) and rows_a.rows > 0:
            problems.append(
                f"live files at snapshot {snapshot_id} have {list(buckets)} total buckets, expected [{bucket}]"
            )
        out.append(
            PartitionVerification(
                partition=text,
                snapshot_before=before_id,
                snapshot_after=snapshot_id,
                rows_before=rows_b.rows,
                rows_after=rows_a.rows,
                key_checksum_before=keys_b.digest,
                key_checksum_after=keys_a.digest,
                row_checksum_before=rows_b.digest,
                row_checksum_after=rows_a.digest,
                buckets_after=buckets,
                problems=tuple(problems),
            )
        )
    return RescaleVerification(table=table.identifier, bucket=bucket, snapshot_after=snapshot_id, partitions=tuple(out))


IN_TASK = (
    "in-task: each partition's rows and checksum as its task read them against its new files read back in the same "
    "task; no table file read by the check"
)


def check_rescale(result: RescaleResult, *, bucket: int) -> RescaleVerification:
    """The in-task figures of every partition ``result`` rewrote, compared (a rescale's blocking
    check): rows and checksum before (the partition as its task read it) and after (its new files
    read back by that task), and the bucket count they were written with. Reads no table file."""
    out = []
    for p in result.partitions:
        if p.skipped is not None:
            continue
        problems = []
        if not p.checksum_after:
            problems.append("the outcome carries no read-back figures: it cannot be verified in-task")
        elif (p.rows_after, p.checksum_after) != (p.rows, p.checksum):
            problems.append(
                f"read {p.rows} rows / {p.checksum} at snapshot {p.snapshot_read} but the new files read back "
                f"{p.rows_after} rows / {p.checksum_after}"
            )
        if p.new_buckets != bucket:
            problems.append(f"rewritten into {p.new_buckets} buckets, expected {bucket}")
        if p.snapshot_committed is None:
            problems.append("not committed")
        out.append(
            PartitionVerification(
                partition=p.partition,
                snapshot_before=p.snapshot_read if p.snapshot_read is not None else -1,
                snapshot_after=p.snapshot_committed if p.snapshot_committed is not None else -1,
                rows_before=p.rows,
                rows_after=p.rows_after,
                row_checksum_before=p.checksum,
                row_checksum_after=p.checksum_after,
                buckets_after=(p.new_buckets,),
                problems=tuple(problems),
            )
        )
    return RescaleVerification(
        table=result.table,
        bucket=bucket,
        snapshot_after=result.snapshot_id if result.snapshot_id is not None else -1,
        partitions=tuple(out),
        compared=IN_TASK,
    )
