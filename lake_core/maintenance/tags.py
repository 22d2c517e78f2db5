"""Automatic tags (Paimon's ``TagAutoCreation`` with ``tag.automatic-creation = process-time``).

After a commit, once processing time has passed the end of a period (``tag.creation-period``:
``daily``, ``hourly`` or ``two-hours``), the latest snapshot is tagged with the name of the last
complete period (``2026-11-22`` daily, ``2026-11-23 09`` hourly), as Java does; then automatic tags
beyond ``tag.num-retained-max`` are deleted oldest first. Tags keep their files from expiry, so an
automatic tag is a restore point that survives ``expire_snapshots``.
"""

from __future__ import annotations

import datetime as _dt
from typing import TYPE_CHECKING

from lake_core.errors import InvalidOptionError, LakeError, TagNotFoundError
from lake_core.maintenance.tag_deletion import delete_tags

if TYPE_CHECKING:
    from lake_core.table import FileStoreTable

PERIODS = {
    "daily": (_dt.timedelta(days=1), "%Y-%m-%d"),
    "hourly": (_dt.timedelta(hours=1), "%Y-%m-%d %H"),
    "two-hours": (_dt.timedelta(hours=2), "%Y-%m-%d %H"),
}
MODES = ("none", "process-time")


def _period(table: FileStoreTable) -> tuple[_dt.timedelta, str]:
    name = table.options.tag_creation_period
    if name not in PERIODS:
        raise InvalidOptionError(
            f"option 'tag.creation-period' = {name!r} of {table.identifier} is invalid; choose " + ", ".join(PERIODS)
        )
    return PERIODS[name]


def _floor(now: _dt.datetime, step: _dt.timedelta) -> _dt.datetime:
    day = now.replace(hour=0, minute=0, second=0, microsecond=0)
    return day + step * ((now - day) // step)


def _auto_tags(table: FileStoreTable, fmt: str) -> list[tuple[_dt.datetime, str]]:
    out = []
    for name in table.list_tags():
        try:
            out.append((_dt.datetime.strptime(name, fmt), name))
        except ValueError:
            continue  # a user's tag: never touched by retention
    return sorted(out)


def auto_create_tag(table: FileStoreTable, now: _dt.datetime | None = None) -> str | None:
    """Create the tag of the last complete period if it is due; returns its name (or None)."""
    mode = table.options.tag_automatic_creation
    if mode == "none":
        return None
    step, fmt = _period(table)
    now = now or _dt.datetime.now()  # processing time is local time, as Java's LocalDateTime.now()
    this_tag = _floor(now, step) - step
    name = this_tag.strftime(fmt)
    existing = _auto_tags(table, fmt)
    created = None
    if not existing or existing[-1][0] < this_tag:
        try:
            table.create_tag(name)
            created = name
        except LakeError:
            pass  # another writer created it first, or the latest snapshot just expired
        existing = _auto_tags(table, fmt)
    keep = table.options.tag_num_retained_max
    if keep:
        doomed = [old for _when, old in existing[: max(0, len(existing) - keep)]]
        if doomed:
            try:
                delete_tags(table, doomed, operation="tag.num-retained-max")
            except TagNotFoundError:
                pass  # another writer's commit retired it first
    return created
