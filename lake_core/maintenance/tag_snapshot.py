"""Named restore points on a schedule: tag the latest snapshot with the run time formatted by a
pattern (``daily-%Y-%m-%d``), keep the newest ``num_retained`` tags of that pattern.

This is what a maintenance service does where Paimon's ``tag.automatic-creation`` (a writer's
after-commit hook, :mod:`.tags`) is not wanted: the tag is made by the maintenance run, once per
period whatever the write rate. Tags whose names do not parse with the pattern (a user's ``v1``,
Paimon's automatic tags) are never deleted here.
"""

from __future__ import annotations

import datetime as _dt
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lake_core.errors import LakeError, MaintenanceArgumentError
from lake_core.maintenance.tags import _auto_tags as tags_of_format
from lake_core.names import validate_tag_name
from lake_core.result import OperationResult, fact

if TYPE_CHECKING:
    from lake_core.table import FileStoreTable


@dataclass(frozen=True, kw_only=True)
class TagSnapshotResult(OperationResult):
    tag: str | None = None  # the tag of this period (created now, or found)
    snapshot_id: int | None = fact(None, label="on snapshot")  # the snapshot it points at
    created: bool = fact(False, summary=True, label="tag created")
    # tags of the pattern beyond num_retained, oldest first
    deleted_tags: tuple[str, ...] = fact((), summary=True, label="tags deleted")
    skipped: str | None = None


def check_name_format(name_format: object, *, what: str = "name_format") -> str:
    """A strftime pattern whose names parse back (so retention can order them): raises
    :class:`MaintenanceArgumentError` naming ``what`` and the value otherwise."""
    if not isinstance(name_format, str) or "%" not in name_format:
        raise MaintenanceArgumentError(f"{what} = {name_format!r} must be a strftime pattern such as 'daily-%Y-%m-%d'")
    sample = _dt.datetime(2024, 1, 2, 3, 4, 5)
    try:
        name = validate_tag_name(sample.strftime(name_format))
        back = _dt.datetime.strptime(name, name_format)
    except (ValueError, LakeError) as e:
        raise MaintenanceArgumentError(
            f"{what} = {name_format!r} does not make a tag name that parses back: {e}"
        ) from None
    if back.strftime(name_format) != name:
        raise MaintenanceArgumentError(f"{what} = {name_format!r} does not make a tag name that parses back")
    return name_format


def tag_snapshot(
    table: FileStoreTable,
    *,
    name_format: str,
    num_retained: int | None = None,
    time_retained: _dt.timedelta | None = None,
    now: _dt.datetime | None = None,
    dry_run: bool = False,
) -> TagSnapshotResult:
    started = time.monotonic()
    check_name_format(name_format, what=f"name_format for table {table.identifier}")
    if num_retained is not None and (not isinstance(num_retained, int) or num_retained < 1):
        raise MaintenanceArgumentError(f"num_retained = {num_retained!r} for table {table.identifier} must be >= 1")
    if not isinstance(dry_run, bool):
        raise MaintenanceArgumentError(f"dry_run = {dry_run!r} for table {table.identifier} must be True or False")
    now = now or _dt.datetime.now(_dt.UTC)
    name = now.strftime(name_format)

    def result(**kw) -> TagSnapshotResult:
        return TagSnapshotResult(
            operation="tag_snapshot",
            table=table.identifier,
            dry_run=dry_run,
            duration_s=time.monotonic() - started,
            tag=name,
            **kw,
        )

    latest = table.latest_snapshot()
    if latest is None:
        return result(skipped="the table has no snapshots")
    existing = {n for _, n in tags_of_format(table, name_format)}
    created, skipped, snapshot_id = False, None, latest.id
    if name in existing:
        snapshot_id = table.tag(name).id
        skipped = f"tag '{name}' already exists (snapshot {snapshot_id})"
    elif not dry_run:
        table.create_tag(name, time_retained=time_retained)  # raises if a concurrent run made it first
        created = True
    names = [n for _, n in tags_of_format(table, name_format)]
    if dry_run and name not in names:
        names = sorted(names + [name], key=lambda n: _dt.datetime.strptime(n, name_format))
    doomed = tuple(names[: max(0, len(names) - num_retained)]) if num_retained else ()
    if not dry_run:
        for old in doomed:
            table.delete_tag(old)
    if skipped is not None and doomed:
        skipped = None  # retention still did work
    return result(snapshot_id=snapshot_id, created=created, deleted_tags=doomed, skipped=skipped)
