"""Partition expiry (Paimon's ``expire_partitions`` procedure, Java ``PartitionExpire`` with the
default ``values-time`` strategy).

A partition's time comes from its values: ``timestamp_pattern`` names them (``$dt``, or
``$dt $hour:00:00``; default: the first partition field), ``timestamp_formatter`` parses the result
(a Java ``DateTimeFormatter`` pattern such as ``yyyyMMdd``; default ``yyyy-MM-dd`` with an optional
``HH:mm:ss`` part). Partitions older than ``now - expiration_time`` are dropped in one OVERWRITE
commit that deletes all their files from the table's view; the files themselves go when the
snapshots that still hold them expire (``expire_snapshots``), so time travel keeps working until
then. Partitions whose values do not parse are left alone and reported.
"""

from __future__ import annotations

import datetime as _dt
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lake_core.commit.file_store_commit import FileStoreCommit
from lake_core.errors import MaintenanceArgumentError
from lake_core.options import parse_duration_ms
from lake_core.result import OperationResult, fact, shown
from lake_core.schema.partition_selector import partition_text

if TYPE_CHECKING:
    from lake_core.table import FileStoreTable

_JAVA_TO_STRPTIME = [("yyyy", "%Y"), ("MM", "%m"), ("dd", "%d"), ("HH", "%H"), ("mm", "%M"), ("ss", "%S")]
_DEFAULT_FORMATS = ("%Y-%m-%d %H:%M:%S", "%Y-%m-%d")


@dataclass(frozen=True, kw_only=True)
class ExpirePartitionsResult(OperationResult):
    expired_partitions: tuple[str, ...] = fact((), summary=True)
    dropped_files: int = fact(0, summary=True, label="files dropped")
    snapshot_id: int | None = fact(None, summary=True, label="snapshot produced")
    unparseable_partitions: tuple[str, ...] = ()
    skipped: str | None = None


def _strptime_format(table: FileStoreTable, formatter: str) -> str:
    out = formatter
    for java, py in _JAVA_TO_STRPTIME:
        out = out.replace(java, py)
    if re.search(r"[A-Za-z]", re.sub(r"%[YmdHMS]", "", out)):
        raise MaintenanceArgumentError(
            f"timestamp_formatter {formatter!r} for table {table.identifier} uses pattern letters lake_core does not "
            "parse; use yyyy, MM, dd, HH, mm and ss"
        )
    return out


def _expiration_ms(table: FileStoreTable, value) -> int:
    if isinstance(value, _dt.timedelta):
        ms = int(value.total_seconds() * 1000)
    elif isinstance(value, str):
        ms = parse_duration_ms("partition.expiration-time", value)
    else:
        raise MaintenanceArgumentError(
            f"expiration_time = {value!r} for table {table.identifier} must be a timedelta or a duration like '7 d'"
        )
    if ms <= 0:
        raise MaintenanceArgumentError(
            f"expiration_time = {shown(value)} for table {table.identifier} must be positive"
        )
    return ms


def expire_partitions(
    table: FileStoreTable,
    *,
    expiration_time,
    timestamp_formatter: str | None = None,
    timestamp_pattern: str | None = None,
    dry_run: bool = False,
) -> ExpirePartitionsResult:
    started = time.monotonic()
    names = list(table.schema.partition_keys)
    if not names:
        raise MaintenanceArgumentError(f"expire_partitions: table {table.identifier} is not partitioned")
    ttl_ms = _expiration_ms(table, expiration_time)
    fmt = _strptime_format(table, timestamp_formatter) if timestamp_formatter else None
    if timestamp_pattern is not None:
        unknown = [n for n in re.findall(r"\$(\w+)", timestamp_pattern) if n not in names]
        if unknown or "$" not in timestamp_pattern:
            raise MaintenanceArgumentError(
                f"timestamp_pattern {timestamp_pattern!r} for table {table.identifier} must name partition fields "
                f"as $field ({', '.join(names)}); unknown: {', '.join(unknown) or 'none named'}"
            )
    if not isinstance(dry_run, bool):
        raise MaintenanceArgumentError(f"dry_run = {dry_run!r} for table {table.identifier} must be True or False")

    cutoff = _dt.datetime.now() - _dt.timedelta(milliseconds=ttl_ms)  # local time, as Java's LocalDateTime
    store = table.manifest_store
    latest = table.latest_snapshot()
    live = store.live_entries(latest) if latest else []
    expired: dict[bytes, str] = {}
    bad: list[str] = []
    files = 0
    for e in live:
        if e.partition in expired:
            files += 1
            continue
        values = dict(zip(names, store.partition_values(e.partition)))
        desc = partition_text(names, list(values.values()))
        text = (
            str(values[names[0]])
            if timestamp_pattern is None
            else re.sub(r"\$(\w+)", lambda m: str(values[m.group(1)]), timestamp_pattern)
        )
        when = None
        for f in [fmt] if fmt else _DEFAULT_FORMATS:
            try:
                when = _dt.datetime.strptime(text, f)
                break
            except ValueError:
                continue
        if when is None:
            if desc not in bad:
                bad.append(desc)
        elif when < cutoff:
            expired[e.partition] = desc
            files += 1

    def result(**kw) -> ExpirePartitionsResult:
        return ExpirePartitionsResult(
            operation="expire_partitions",
            table=table.identifier,
            dry_run=dry_run,
            duration_s=time.monotonic() - started,
            expired_partitions=tuple(sorted(expired.values())),
            unparseable_partitions=tuple(bad),
            **kw,
        )

    if not expired:
        return result(skipped="no partition is older than the expiration time")
    if dry_run:
        return result(dropped_files=files)
    drop = frozenset(expired)
    snaps = FileStoreCommit(table.store, hooks=table).commit([], overwrite=lambda p: p in drop)
    return result(dropped_files=files, snapshot_id=snaps[0].id if snaps else None)
