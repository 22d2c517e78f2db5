"""Verification where the data is: row counts and order-independent checksums a compaction unit
computes while it merges and writes (:class:`UnitFigures`), carried back with its outcome, summed
in the :class:`~lake_core.compaction.result.CompactionResult` and compared by
:func:`check_compaction`, which reads no table file (the deep check, reading both snapshots, is
:func:`lake_core.compaction.verify.verify_compaction`).

Opt-in: units compute figures only when the compaction runs with ``verify=True`` (carried by the
plan and each unit, so Spark tasks see it); reading the written files back and hashing both sides
costs each unit about a third more CPU, which a compaction nobody checks should not pay.

What one unit compares, over the table's columns (what ``to_arrow`` returns):

- ``read``: the rows a reader sees (no ``-U``/``-D``) of the unit's input files merged by key, as
  the compaction merges them (deletion vectors applied; a deletion-vector or lookup table's
  looked-up older row of a key merged in; Java's lookup merge) — the content the unit's output
  replaces. The bucket's files outside the unit are the same files before and after the commit,
  so what a reader of the bucket sees changes only through the unit's files.
- ``dropped``: of ``read``, the rows the unit drops by design: records past the record-level TTL
  (also counted in ``rows_expired``) and first-row keys already stored in another file of the bucket.
- ``written``: the visible rows of the files the unit wrote, read back from storage in the task.
  Read back rather than summed from the batches handed to the writer: those batches are ``read``
  minus ``dropped`` by construction, so comparing them would compare a value with itself; the read
  back covers the writer, the encoding and the storage.
- the same three for retractions (``-U``/``-D`` rows, which readers never see): kept below the top
  level, dropped at it.
- ``expired_written``: expired records (at the job's cutoff) in the read-back files: 0.

The unit is correct when ``written == read - dropped``, the retractions likewise, and no expired
record was written. Checksums of one comparison are computed in one process (one task), as
:mod:`lake_core.format.checksum` requires.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lake_core.errors import VerificationUnavailableError
from lake_core.format.checksum import EMPTY, Checksum

if TYPE_CHECKING:
    from lake_core.compaction.result import CompactionResult

# What the in-task check compares, for the check's metadata and the docs (service/compaction-on-spark.md).
COMPARED = (
    "per unit (partition, bucket), computed in the task: the visible rows of its input merged by key minus the "
    "rows dropped by design (expired records, first-row keys stored elsewhere) against the rows of the files it "
    "wrote, read back; retractions likewise; no expired record written"
)


@dataclass(frozen=True)
class UnitFigures:
    """One unit's figures (see the module): rows and checksums before, dropped and after."""

    read: Checksum = EMPTY
    dropped: Checksum = EMPTY
    written: Checksum = EMPTY
    retractions_read: Checksum = EMPTY
    retractions_dropped: Checksum = EMPTY
    retractions_written: Checksum = EMPTY
    expired_written: int = 0
    expiry_applied: bool = False  # the unit dropped expired records (it holds its keys' whole history)

    @property
    def expected(self) -> Checksum:
        return self.read - self.dropped

    @property
    def retractions_expected(self) -> Checksum:
        return self.retractions_read - self.retractions_dropped

    def problems(self) -> list[str]:
        out = []
        if self.written != self.expected:
            out.append(
                f"read {self.read} minus dropped {self.dropped.rows} rows = {self.expected}, but wrote {self.written}"
            )
        if self.retractions_written != self.retractions_expected:
            out.append(f"retractions: expected {self.retractions_expected}, wrote {self.retractions_written}")
        if self.expired_written:
            out.append(f"{self.expired_written} expired record(s) written")
        return out


@dataclass(frozen=True)
class BucketFigures:
    """A committed unit's figures with where it ran: partition ('dt=2024-01-01') and bucket."""

    partition: str
    bucket: int
    figures: UnitFigures
    rows_expired: int = 0  # of ``figures.dropped``: records past the TTL

    def describe(self) -> str:
        return f"partition '{self.partition}' bucket {self.bucket}" if self.partition else f"bucket {self.bucket}"


def _total(checksums) -> Checksum:
    out = EMPTY
    for c in checksums:
        out = out + c
    return out


@dataclass(frozen=True)
class CompactionCheck:
    """The in-task figures of a compaction compared (``passed``, ``problems``, ``as_metadata``, as
    :class:`~lake_core.compaction.verify.CompactionVerification`); no table file is read."""

    store: str
    before_snapshot_id: int | None  # the snapshot the compaction planned from
    after_snapshot_id: int | None  # its COMPACT snapshot
    buckets_verified: int
    rows_before: int  # visible rows the units' merges read
    rows_dropped: int  # of them, dropped by design
    expired_dropped: int  # of those, records past the TTL
    rows_expected: int
    rows_after: int  # visible rows read back from the files written
    checksum_before: str
    checksum_expected: str
    checksum_after: str
    retractions_before: int
    retractions_after: int
    expired_surviving: int  # expired records in the files written
    expired_must_be_gone: bool
    units_without_figures: int  # committed units whose outcome carries none (an older worker)
    compared: str
    problems: tuple[str, ...]
    buckets: tuple[BucketFigures, ...] = ()

    @property
    def passed(self) -> bool:
        return not self.problems

    def as_metadata(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in ("problems", "buckets")
        }
        out["passed"] = self.passed
        return out


def check_compaction(result: CompactionResult, *, expired_must_be_gone: bool = False) -> CompactionCheck:
    """Compare the figures the units of ``result`` computed in their tasks: for each committed unit,
    what it wrote (read back) against what its merge read minus what it dropped by design; a
    mismatch names the partition and bucket. A unit that applied record expiry must have written no
    expired record; ``expired_must_be_gone`` (a TTL compaction): every unit must have applied it.

    Raises :class:`~lake_core.errors.VerificationUnavailableError` for a compaction run without
    ``verify=True``: its units computed no figures, and a check with nothing to compare must not pass."""
    if not result.verify:
        raise VerificationUnavailableError(
            f"{result.operation} of {result.table} ran without verify=True: its units computed no figures to "
            "check; run it with verify=True (e.g. table.maintenance.compact(verify=True)), or compare the "
            "snapshots with table.maintenance.verify_compaction"
        )
    buckets = result.figures
    problems = [f"{b.describe()}: {p}" for b in buckets for p in b.figures.problems()]
    missing = result.units_run - len(buckets)
    if missing > 0:
        problems.append(f"{missing} committed unit(s) returned no figures: they cannot be verified in-task")
    if expired_must_be_gone:
        problems += [
            f"{b.describe()}: record expiry was not applied (the unit is not at the top level)"
            for b in buckets
            if not b.figures.expiry_applied
        ]
    expired_surviving = sum(b.figures.expired_written for b in buckets)
    before = _total(b.figures.read for b in buckets)
    dropped = _total(b.figures.dropped for b in buckets)
    after = _total(b.figures.written for b in buckets)
    return CompactionCheck(
        store=result.table,
        before_snapshot_id=result.base_snapshot_id,
        after_snapshot_id=result.snapshot_id,
        buckets_verified=len(buckets),
        rows_before=before.rows,
        rows_dropped=dropped.rows,
        expired_dropped=sum(b.rows_expired for b in buckets),
        rows_expected=(before - dropped).rows,
        rows_after=after.rows,
        checksum_before=before.digest,
        checksum_expected=(before - dropped).digest,
        checksum_after=after.digest,
        retractions_before=sum(b.figures.retractions_read.rows for b in buckets),
        retractions_after=sum(b.figures.retractions_written.rows for b in buckets),
        expired_surviving=expired_surviving,
        expired_must_be_gone=expired_must_be_gone,
        units_without_figures=max(0, missing),
        compared=COMPARED,
        problems=tuple(problems),
        buckets=buckets,
    )
