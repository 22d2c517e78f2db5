"""Tag time retention (Paimon's ``TagTimeExpire``, ``tag.default-time-retained``).

A tag created with a time retained (per tag, or ``tag.default-time-retained``) is written as Java's
``Tag``: the snapshot's JSON plus ``tagCreateTime`` (a local date-time, as Jackson writes
``LocalDateTime``: ``[year, month, day, hour, minute, second, nano]``, trailing zeros left out)
and ``tagTimeRetained`` (seconds with nine decimals, as Jackson writes a ``Duration``). A tag
without a time retained is the plain snapshot JSON and never expires by time.

Expiry (after each commit unless ``write-only``, and ``table.maintenance.expire_tags``): a tag
whose ``tagCreateTime + tagTimeRetained`` lies before now (local time, as Java's
``LocalDateTime.now()``) is deleted; with ``older_than``, also every tag created before it.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
import time
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING

from lake_core.errors import LakeError, MaintenanceArgumentError, TagNotFoundError
from lake_core.maintenance.tag_deletion import delete_tags
from lake_core.result import OperationResult, fact
from lake_core.snapshot.snapshot import Snapshot

if TYPE_CHECKING:
    from lake_core.table import FileStoreTable

_ISO_DURATION = re.compile(r"^PT(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?$")


def default_time_retained(table: FileStoreTable) -> _dt.timedelta | None:
    ms = table.options.tag_default_time_retained_ms
    return None if ms is None else _dt.timedelta(milliseconds=ms)


def _local_date_time(t: _dt.datetime) -> str:
    parts = [t.year, t.month, t.day, t.hour, t.minute]
    nano = t.microsecond * 1000
    if t.second or nano:
        parts.append(t.second)
        if nano:
            parts.append(nano)
    return "[ " + ", ".join(map(str, parts)) + " ]"


def tag_json(snapshot: Snapshot, time_retained: _dt.timedelta | None, now: _dt.datetime | None = None) -> str:
    """A tag file's text: the snapshot alone, or with ``tagCreateTime``/``tagTimeRetained``."""
    text = snapshot.to_json()
    if time_retained is None:
        return text
    now = now or _dt.datetime.now()
    micros = (time_retained.days * 86_400 + time_retained.seconds) * 1_000_000 + time_retained.microseconds
    seconds = Decimal(micros) / Decimal(1_000_000)
    extra = (
        f',\n  "tagCreateTime" : {_local_date_time(now)},\n'
        f'  "tagTimeRetained" : {seconds.quantize(Decimal("0.000000001"))}\n}}'
    )
    assert text.endswith("\n}")
    return text[:-2] + extra


def _parse_create_time(v) -> _dt.datetime | None:
    if isinstance(v, list) and len(v) >= 5:
        sec = v[5] if len(v) > 5 else 0
        nano = v[6] if len(v) > 6 else 0
        return _dt.datetime(v[0], v[1], v[2], v[3], v[4], sec, nano // 1000)
    if isinstance(v, str):
        return _dt.datetime.fromisoformat(v)
    return None


def _parse_retained(v) -> _dt.timedelta | None:
    if isinstance(v, (int, float)):
        return _dt.timedelta(seconds=float(v))
    if isinstance(v, str):
        m = _ISO_DURATION.match(v)
        if m:
            h, mi, s = m.groups()
            return _dt.timedelta(hours=int(h or 0), minutes=int(mi or 0), seconds=float(s or 0))
    return None


@dataclass(frozen=True)
class TagTimes:
    create_time: _dt.datetime | None
    time_retained: _dt.timedelta | None


def tag_times(table: FileStoreTable, name: str) -> TagTimes:
    """``tagCreateTime`` and ``tagTimeRetained`` of a tag (None where absent)."""
    table.tag(name)  # TagNotFoundError names the tag
    obj = json.loads(table.fileio.read_text(table.paths.tag(name)))
    return TagTimes(_parse_create_time(obj.get("tagCreateTime")), _parse_retained(obj.get("tagTimeRetained")))


@dataclass(frozen=True, kw_only=True)
class ExpireTagsResult(OperationResult):
    expired_tags: tuple[str, ...] = fact((), summary=True)
    deleted_files: int = fact(0, summary=True, label="files deleted")  # the files only those tags held
    bytes_reclaimed: int = fact(0, summary=True, label="reclaimed")
    skipped: str | None = None


def expire_tags(
    table: FileStoreTable,
    *,
    older_than: _dt.datetime | None = None,
    dry_run: bool = False,
    now: _dt.datetime | None = None,
) -> ExpireTagsResult:
    started = time.monotonic()
    now = now or _dt.datetime.now()
    if older_than is not None and not isinstance(older_than, _dt.datetime):
        raise MaintenanceArgumentError(
            f"older_than = {older_than!r} for expire_tags on {table.identifier} must be a datetime (local time)"
        )
    if not isinstance(dry_run, bool):
        raise MaintenanceArgumentError(f"dry_run = {dry_run!r} for table {table.identifier} must be True or False")
    doomed = []
    for name in table.list_tags():
        try:
            times = tag_times(table, name)
        except (TagNotFoundError, FileNotFoundError):
            continue  # deleted meanwhile
        except (LakeError, ValueError, TypeError):
            continue  # an unreadable tag is never deleted by time
        if times.create_time is None:
            continue
        reached = times.time_retained is not None and now > times.create_time + times.time_retained
        if reached or (older_than is not None and times.create_time < older_than):
            doomed.append(name)
    cleaned = delete_tags(table, doomed, dry_run=dry_run, operation="expire_tags") if doomed else None
    return ExpireTagsResult(
        operation="expire_tags",
        table=table.identifier,
        dry_run=dry_run,
        duration_s=time.monotonic() - started,
        expired_tags=tuple(doomed),
        deleted_files=cleaned.deleted_files if cleaned else 0,
        bytes_reclaimed=cleaned.bytes_reclaimed if cleaned else 0,
        skipped=None if doomed else "no tag has reached its time retained",
    )
