"""Record-level expiry (``record-level.expire-time`` + ``record-level.time-field``), Paimon's
``RecordLevelExpire`` with one deliberate difference (the merge order below).

**The rule.** A key expires when the row a reader sees for it — the key's *merged* row — has a
time field older than now - expire-time. Expiry therefore runs *after* the merge engine merged
every row of the key, and only in a compaction that holds the key's whole history: one that
drops retractions (its output is the bucket's highest non-empty level, so no older row of its keys
is left outside it; a full compaction and ``compact(expire_records=True)`` always are), or, with
deletion vectors, any compaction to a level >= 1 (the key's older row is merged in and masked).
Other compactions expire nothing, so an expired key never falls back to an older version left in
a level the compaction did not reach.
Per merge engine:

- deduplicate: the newest row decides; an old row arriving late supersedes the stored one, then
  the key expires (no row): the superseded value never comes back;
- partial-update: the merged row decides (its time field is the newest non-NULL one);
- aggregation: the aggregated row is kept or dropped whole, by its aggregated time field (give
  the time field ``max`` to keep a key while any contribution is recent); never a partial sum;
- first-row: the first row decides; later rows of the key were ignored and stay ignored.

Java Paimon filters each file's rows *before* merging, so an expired late row lets the value it
replaced reappear, and an aggregate silently loses old contributions; we do not. Expiry writes no
changelog row: a compaction's changelog shows its merge (a late update included), then the key
leaves the table silently, as Java emits nothing for expired records (expiry is retention, not a
delete).

Rows with a NULL time field never expire (Java 1.1+; 1.0 fails the compaction). That includes the
rows of files written before the time field was added: they have no value for it, so NULL.

A file "has expired records" when the minimum of the time field in its value statistics is older
than the cutoff. The statistics are read through the file's own schema and mapped by field id
(:func:`lake_core.read.evolution.evolved_value_stats`, Java's ``SimpleStatsEvolution``), so
files written before any ``alter_table`` (a rescale's ``bucket`` change included) still count; a
file that predates the time field has a NULL minimum, so nothing expired.

Time field types: INT (epoch seconds), BIGINT (epoch seconds, or milliseconds when the value is
at least 10^12, Paimon's rule), TIMESTAMP and TIMESTAMP_LTZ.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_core import arrow_memory
from lake_core.manifest.metadata import DataFileMeta
from lake_core.read.evolution import evolved_value_stats

if TYPE_CHECKING:
    from lake_core.store import FileStore

_MILLIS_FROM = 1_000_000_000_000  # Java: a BIGINT at or above this is epoch millis


def _to_seconds(value) -> int | None:
    if value is None:
        return None
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.UTC)
        return int(value.timestamp() // 1)
    v = int(value)
    return v // 1000 if v >= _MILLIS_FROM else v


@dataclass(frozen=True)
class RecordExpiry:
    """The expiry rule fixed at one instant (``now_s``), so every unit of a job agrees."""

    field: str
    type: pa.DataType
    expire_s: int
    now_s: int

    @staticmethod
    def of(store, now_s: int) -> RecordExpiry | None:
        opts = store.options
        expire_ms, field = opts.record_level_expire_time_ms, opts.record_level_time_field
        if expire_ms is None or not field:
            return None
        return RecordExpiry(field, store.schema.field(field).type, expire_ms // 1000, now_s)

    @property
    def cutoff_s(self) -> int:
        """Rows with a time (in seconds) below this are expired."""
        return self.now_s - self.expire_s

    def seconds(self, col: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, np.ndarray]:
        """(seconds as int64, null mask) of a time-field column, vectorized."""
        col = arrow_memory.one_array(col)
        nulls = col.is_null().to_numpy(zero_copy_only=False) if col.null_count else np.zeros(len(col), bool)
        if pa.types.is_timestamp(self.type):
            unit = {"s": 1, "ms": 1000, "us": 1_000_000, "ns": 1_000_000_000}[self.type.unit]
            raw = pc.fill_null(col.cast(pa.int64()), 0).to_numpy()
            return np.floor_divide(raw, unit), nulls
        raw = pc.fill_null(col.cast(pa.int64()), 0).to_numpy()
        if pa.types.is_int64(self.type):
            raw = np.where(raw >= _MILLIS_FROM, raw // 1000, raw)
        return raw, nulls

    def expired_mask(self, rows: pa.Table) -> tuple[np.ndarray, np.ndarray]:
        """(which rows had expired, which have a NULL time field) of merged ``rows``."""
        secs, nulls = self.seconds(rows[self.field])
        return (secs < self.cutoff_s) & ~nulls, nulls

    def file_min_seconds(self, f: DataFileMeta, store: FileStore) -> int | None:
        """Minimum of the time field in ``f``'s value statistics, mapped by field id from the
        schema ``f`` was written with (None: unknown, or all NULL)."""
        lo, _hi, _nulls = evolved_value_stats(store, f).get(self.field, (None, None, None))
        try:
            return _to_seconds(lo)
        except (TypeError, ValueError):  # an older type that is no time (changed since): unknown
            return None

    def file_has_expired(self, f: DataFileMeta, store: FileStore) -> bool:
        m = self.file_min_seconds(f, store)
        return m is not None and m < self.cutoff_s


def expired_file_test(expiry: RecordExpiry | None, store: FileStore) -> Callable[[DataFileMeta], bool]:
    """Whether a file's statistics show expired records (always False without expiry)."""
    if expiry is None:
        return lambda f: False
    return lambda f: expiry.file_has_expired(f, store)
