"""What a dedicated compaction did (or, as a dry run, would do)."""

from __future__ import annotations

from dataclasses import dataclass, field

from lake_core.compaction.figures import BucketFigures, CompactionCheck, check_compaction
from lake_core.result import OperationResult


@dataclass(frozen=True, kw_only=True)
class CompactionResult(OperationResult):
    operation: str = "compact"
    full: bool = False
    expire_records: bool = False
    base_snapshot_id: int | None = None
    snapshot_id: int | None = None  # the COMPACT snapshot, None if nothing was committed
    units_planned: int = 0
    units_run: int = 0
    units_skipped: int = 0
    skipped: tuple[str, ...] = ()  # why each skipped unit was skipped
    files_read: int = 0
    bytes_read: int = 0
    files_written: int = 0
    bytes_written: int = 0
    files_upgraded: int = 0  # moved to a higher level without rewriting
    rows_in: int = 0
    rows_out: int = 0
    rows_dropped_deletes: int = 0
    rows_expired: int = 0  # merged rows (keys) dropped by record-level expiry
    rows_null_time: int = 0  # merged rows kept although expiry is on: their time field is NULL
    levels_before: dict = field(default_factory=dict)  # "L0" -> file count, over the selected buckets
    levels_after: dict = field(default_factory=dict)
    ttl_lag_before_s: int | None = None  # age past expiry of the oldest expired record (None: no expiry)
    ttl_lag_after_s: int | None = None
    options: dict = field(default_factory=dict)  # dynamic options of this job (policy overrides)
    expiry_field: str | None = None  # record-level.time-field in effect (None: no record expiry)
    expiry_cutoff_s: int | None = None  # records with an older time (epoch s) expire in this job
    verify: bool = False  # the units computed the in-task figures (``compact(verify=True)``)
    # per committed unit: rows and checksums computed in its task (lake_core.compaction.figures)
    figures: tuple[BucketFigures, ...] = ()

    def check(self, *, expired_must_be_gone: bool = False) -> CompactionCheck:
        """The in-task figures compared (:func:`~lake_core.compaction.figures.check_compaction`);
        reads no table file. Raises ``VerificationUnavailableError`` unless the compaction ran
        with ``verify=True``."""
        return check_compaction(self, expired_must_be_gone=expired_must_be_gone)
