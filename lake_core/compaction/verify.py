"""Verify that a compaction changed a table's layout and not its content: read the table at the
snapshot before and at the snapshot after, and compare them by key.

Without record expiry the two must hold the same keys with the same rows (rows, key checksum and
row checksum equal; no deleted key came back). With record expiry (``expiry_field`` and the
job's cutoff), keys may only go when their record had expired; ``expired_must_be_gone`` also
requires that no expired record survives (a targeted TTL compaction). Vectorized with polars
joins over the key columns and a per-row hash.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from ..maintenance.checksum import table_checksum
from .expire import RecordExpiry

if TYPE_CHECKING:
    from ..table import FileStoreTable

_HASH = "__lake_row_hash"


@dataclass(frozen=True)
class CompactionVerification:
    table: str
    before_snapshot_id: int
    after_snapshot_id: int
    rows_before: int
    rows_after: int
    rows_expected: int  # rows before minus the records that had expired (all of them without expiry)
    key_checksum_expected: str
    key_checksum_after: str
    row_checksum_expected: str
    row_checksum_after: str
    resurrected_keys: int  # keys visible after that were not before (deleted rows come back)
    lost_keys: int  # keys whose record had not expired, gone after
    changed_rows: int  # keys in both whose row differs
    expired_dropped: int  # expired records gone after
    expired_surviving: int  # expired records still visible after
    expired_must_be_gone: bool
    problems: tuple[str, ...]

    @property
    def passed(self) -> bool:
        return not self.problems

    def as_metadata(self) -> dict:
        out = {k: v for k, v in self.__dict__.items() if k != "problems"}
        out["passed"] = self.passed
        return out


def verify_compaction(table: "FileStoreTable", *, before_snapshot_id: int, after_snapshot_id: int,
                      expiry_field: str | None = None, expiry_cutoff_s: int | None = None,
                      expired_must_be_gone: bool = False) -> CompactionVerification:
    import polars as pl

    keys = list(table.schema.primary_keys)
    before = table.to_arrow(snapshot_id=before_snapshot_id)
    after = table.to_arrow(snapshot_id=after_snapshot_id).select(before.column_names)
    expired_before = _expired_mask(table, before, expiry_field, expiry_cutoff_s)
    expired_after = _expired_mask(table, after, expiry_field, expiry_cutoff_s)
    expected = before.filter(pa.array(~expired_before)) if expired_before is not None else before

    def hashed(t: pa.Table) -> "pl.DataFrame":
        df = pl.from_arrow(t)
        return df.select(keys).with_columns(df.hash_rows(seed=0x5EED).alias(_HASH))

    b, e, a = hashed(before), hashed(expected), hashed(after)
    resurrected = a.join(b, on=keys, how="anti").height
    lost = e.join(a, on=keys, how="anti").height
    both = a.join(e, on=keys, how="inner", suffix="_expected")
    changed = both.filter(pl.col(_HASH) != pl.col(_HASH + "_expected")).height
    expired_dropped = (b.height - e.height) - (int(expired_after.sum()) if expired_after is not None else 0)
    surviving = int(expired_after.sum()) if expired_after is not None else 0

    key_exp, key_after = table_checksum(expected.select(keys)), table_checksum(after.select(keys))
    row_exp, row_after = table_checksum(expected), table_checksum(after)
    problems = []
    if resurrected:
        problems.append(f"{resurrected} key(s) visible after the compaction were not before (deleted rows came back)")
    if lost:
        problems.append(f"{lost} key(s) whose record had not expired are gone after the compaction")
    if changed:
        problems.append(f"{changed} row(s) changed their values")
    if expired_must_be_gone and surviving:
        problems.append(f"{surviving} expired record(s) ({expiry_field} before {expiry_cutoff_s} s) survived")
    if not problems and (key_exp != key_after or row_exp != row_after):
        problems.append(f"checksums differ: keys {key_exp} -> {key_after}, rows {row_exp} -> {row_after}")
    return CompactionVerification(
        table.identifier, before_snapshot_id, after_snapshot_id, before.num_rows, after.num_rows, expected.num_rows,
        key_exp.digest, key_after.digest, row_exp.digest, row_after.digest, resurrected, lost, changed,
        max(expired_dropped, 0), surviving, expired_must_be_gone, tuple(problems))


def _expired_mask(table: "FileStoreTable", rows: pa.Table, field: str | None, cutoff_s: int | None):
    """Which rows had expired at ``cutoff_s`` (lake_core's record-level rule), or None without expiry."""
    if field is None or cutoff_s is None:
        return None
    rule = RecordExpiry(field, table.schema.field(field).type, 0, cutoff_s)
    secs, nulls = rule.seconds(rows[field])
    return (secs < cutoff_s) & ~nulls
