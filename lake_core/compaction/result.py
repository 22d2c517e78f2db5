"""What a dedicated compaction did (or, as a dry run, would do)."""

from __future__ import annotations

from dataclasses import dataclass, field

from lake_core.compaction.figures import BucketFigures, CompactionCheck, check_compaction
from lake_core.result import OperationResult, fact


@dataclass(frozen=True, kw_only=True)
class CompactionResult(OperationResult):
    operation: str = "compact"
    full: bool = fact(False, hidden=True)  # in the headline
    expire_records: bool = fact(False, hidden=True)
    base_snapshot_id: int | None = fact(None, label="read snapshot")
    snapshot_id: int | None = fact(
        None, summary=True, label="snapshot produced"
    )  # the COMPACT snapshot, None if nothing was committed
    units_planned: int = fact(0, summary=True)
    units_run: int = fact(0, summary=True)
    units_skipped: int = fact(0, summary=True)
    skipped: tuple[str, ...] = ()  # why each skipped unit was skipped
    files_read: int = fact(0, summary=True, size="bytes_read")
    bytes_read: int = 0
    files_written: int = fact(0, summary=True, size="bytes_written")
    bytes_written: int = 0
    files_upgraded: int = fact(0, summary=True)  # moved to a higher level without rewriting (not read)
    rows_in: int = 0
    rows_out: int = 0
    rows_dropped_deletes: int = 0
    rows_expired: int = fact(0, summary=True)  # merged rows (keys) dropped by record-level expiry
    rows_null_time: int = 0  # merged rows kept although expiry is on: their time field is NULL
    levels_before: dict = field(default_factory=dict)  # "L0" -> file count, over the selected buckets
    levels_after: dict = field(default_factory=dict)
    ttl_lag_before_s: int | None = None  # age past expiry of the oldest expired record (None: no expiry)
    ttl_lag_after_s: int | None = None
    options: dict = field(default_factory=dict)  # dynamic options of this job (policy overrides)
    expiry_field: str | None = None  # record-level.time-field in effect (None: no record expiry)
    expiry_cutoff_s: int | None = fact(None, unit="epoch")  # records with an older time (epoch s) expire in this job
    verify: bool = False  # the units computed the in-task figures (``compact(verify=True)``)
    # per committed unit: rows and checksums computed in its task (lake_core.compaction.figures)
    figures: tuple[BucketFigures, ...] = fact((), hidden=True)

    def headline(self) -> str:
        """``'compact on db.t'``; a record expiry (``expire_records``) reads as one."""
        what = "record expiry" if self.expire_records else ("full compaction" if self.full else "compaction")
        return f"{what} of {self.table}" + (" (dry run)" if self.dry_run else "")

    def did_something(self) -> bool:
        return bool(self.units_planned) if self.dry_run else self.snapshot_id is not None

    def noop_reason(self) -> str | None:
        """Why nothing was committed, in the operation's own terms (a record expiry that found
        nothing is "nothing to expire", not "nothing to compact")."""
        if self.did_something():
            return None
        if self.skipped:
            first = self.skipped[0] + (f" (and {len(self.skipped) - 1} more)" if len(self.skipped) > 1 else "")
            return f"every unit was skipped: {first}"
        if self.expire_records:
            return "nothing to expire: no bucket holds records past the TTL"
        if self.base_snapshot_id is None:
            return "nothing to compact: the table has no snapshot yet"
        if self.full:
            return "nothing to compact: every bucket is already one file at the top level"
        return "nothing to compact: no bucket needs compaction"

    def check(self, *, expired_must_be_gone: bool = False) -> CompactionCheck:
        """The in-task figures compared (:func:`~lake_core.compaction.figures.check_compaction`);
        reads no table file. Raises ``VerificationUnavailableError`` unless the compaction ran
        with ``verify=True``."""
        return check_compaction(self, expired_must_be_gone=expired_must_be_gone)
