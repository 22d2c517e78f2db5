"""Changelog expiry: Paimon's ``ExpireChangelogImpl`` / ``ChangelogDeletion`` for the decoupled
changelog lifecycle.

When ``changelog.num-retained.min/max`` or ``changelog.time-retained`` retain more than the
``snapshot.*`` options, snapshot expiry leaves each expired snapshot's changelog behind as
``changelog/changelog-N`` (see :mod:`lake_core.snapshot.changelog_manager`). This operation deletes those
that the changelog options no longer retain. With ``latest`` the latest snapshot and
``[earliest, latestChangelog]`` the long-lived changelogs:

- ``min = max(latest - retain_max + 1, earliest)``;
- ``end = min(latest - retain_min + 1, min nextSnapshot of the consumers, earliest + max_deletes,
  latestChangelog)`` (so the newest long-lived changelog always stays, as in Java);
- walking ``id`` from ``min`` to ``end``, the first changelog committed at or after ``older_than``
  ends the range; changelogs ``[earliest, end)`` expire and ``end`` is the new ``changelog/EARLIEST``.

Files of each expired changelog (Java ``ChangelogDeletion``): the files its changelog list ADDs; the
data files its delta list (if it still exists) DELETEs, unless a tag or the earliest snapshot holds
them; its changelog, delta and base lists and their manifests unless a tag, the earliest snapshot
or changelog ``end`` uses them.

As for snapshots, the plan is frozen and re-validated before acting, and the ``changelog-N`` files
go (and the hint moves) before any file they reference; a crash in between leaves orphans that
``remove_orphan_files`` takes.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lake_core.errors import MaintenanceAbortedError, MaintenanceArgumentError, SnapshotNotFoundError
from lake_core.maintenance.consumers import ConsumerManager
from lake_core.maintenance.expire_snapshots import (
    ExpireConfig,
    changelog_config,
    delete_planned,
    resolve_config,
    retain_min_reason,
)
from lake_core.maintenance.expiry_lock import HOLDERS, expiry_lock
from lake_core.maintenance.references import (
    PlannedFile,
    added_files,
    deleted_in_delta,
    existing_list,
    manifest_skipping_set,
    now_ms,
    tagged_snapshots,
    unheld_data_files,
    unused_lists,
)
from lake_core.result import OperationResult, fact
from lake_core.snapshot.snapshot import Snapshot

if TYPE_CHECKING:
    from lake_core.table import FileStoreTable

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ExpireChangelogsPlan:
    table: str
    begin: int | None
    end: int | None  # new earliest long-lived changelog; [begin, end) expire
    expired: tuple[int, ...]
    files: tuple[PlannedFile, ...]
    tag_ids: tuple[int, ...]
    reason: str | None = None
    consumer_floor: int | None = None
    changelogs: tuple[Snapshot, ...] = field(default=(), repr=False)

    def expired_range(self) -> tuple[int, int]:
        """``(begin, end)`` of a plan that expires changelogs: both are set whenever ``expired`` is."""
        if not self.expired or self.begin is None or self.end is None:
            raise ValueError(f"the changelog expiry plan of {self.table} expires nothing")
        return self.begin, self.end


@dataclass(frozen=True, kw_only=True)
class ExpireChangelogsResult(OperationResult):
    expired_changelogs: tuple[int, ...] = fact((), summary=True)
    # after the run (planned, in a dry run)
    earliest_changelog: int | None = fact(None, summary=True, counts=False, label="earliest changelog now")
    deleted_changelog_files: int = fact(0, summary=True, label="changelog files")
    deleted_data_files: int = fact(0, summary=True, label="data files")
    deleted_metadata_files: int = fact(0, summary=True, label="metadata files")
    bytes_reclaimed: int = fact(0, summary=True, label="reclaimed")
    files: tuple[str, ...] = fact((), label="files deleted")
    skipped: str | None = None


def resolve_changelog_config(
    table: FileStoreTable, *, retain_min=None, retain_max=None, older_than=None, max_deletes=None
) -> ExpireConfig:
    now = now_ms()
    return changelog_config(
        table,
        resolve_config(table, now=now),
        retain_min=retain_min,
        retain_max=retain_max,
        older_than=older_than,
        max_deletes=max_deletes,
        now=now,
    )


@dataclass(frozen=True)
class _Range:
    begin: int | None
    end: int | None  # changelogs [begin, end) expire
    reason: str | None
    consumer_floor: int | None = None
    view: tuple = ()  # (earliest snapshot, first and last long-lived changelog) it was computed on


def compute_range(table: FileStoreTable, cfg: ExpireConfig) -> _Range:
    """Java ``ExpireChangelogImpl.expire``'s range."""
    sm, long_lived = table.snapshot_manager, table.changelog_manager.long_lived
    latest, earliest_snapshot = sm.latest_id(), sm.earliest_id()
    first, last = long_lived.earliest_id(), long_lived.latest_id()
    if latest is None or earliest_snapshot is None:
        return _Range(None, None, "the table has no snapshots")
    if first is None or last is None:
        return _Range(None, None, "the table has no long-lived changelogs (changelog/changelog-N)")
    lo = max(latest - cfg.retain_max + 1, first)
    end, reason = (
        latest - cfg.retain_min + 1,
        retain_min_reason(cfg.retain_min, first, latest, "changelog"),
    )
    floor = ConsumerManager(table).min_next_snapshot(strict=True)
    for bound, why in (
        (floor, f"a consumer or lease still needs snapshot {floor}"),
        (first + cfg.max_deletes, f"max_deletes = {cfg.max_deletes}"),
        (last, f"the newest long-lived changelog ({last}) is always kept"),
        # not in Java: a changelog whose snapshot is back (a restored expiry) stays
        (earliest_snapshot, f"snapshot {earliest_snapshot} still exists"),
    ):
        if bound is not None and bound < end:
            end, reason = bound, why
    for cid in range(lo, end + 1):
        try:
            c = long_lived.get(cid)
        except SnapshotNotFoundError:
            continue
        if cfg.older_than_ms <= c.time_millis:
            if cid < end:
                end, reason = cid, f"changelog {cid} is younger than the cut-off"
            break
    view = (earliest_snapshot, first, last)
    if end <= first:
        return _Range(first, first, f"nothing to expire: {reason}", floor, view)
    return _Range(first, end, None, floor, view)


def plan_expire_changelogs(table: FileStoreTable, cfg: ExpireConfig) -> ExpireChangelogsPlan:
    rng = compute_range(table, cfg)
    begin, end, reason = rng.begin, rng.end, rng.reason
    name = table.identifier
    if begin is None or end is None or end <= begin:
        return ExpireChangelogsPlan(name, begin, end, (), (), (), reason)
    long_lived = table.changelog_manager.long_lived
    earliest_snapshot = rng.view[0]
    changelogs: list[Snapshot] = []
    try:
        for cid in range(begin, end):
            try:
                changelogs.append(long_lived.get(cid))
            except SnapshotNotFoundError:
                continue
        end_changelog = table.changelog_manager.changelog(end)  # snapshot-end again after a restore
        earliest = table.snapshot_manager.get(earliest_snapshot)
        tags = tagged_snapshots(table)
        holders = tags + [earliest]
        skip = manifest_skipping_set(table, holders, changelogs=[end_changelog])
        tagged = {t.id for t in tags}
        files: list[PlannedFile] = []
        for c in changelogs:
            # a tag is a copy of snapshot c, changelog list included: readers of the tag (and
            # remove_orphan_files, which reads every list a tag names) still need it and its files
            own_list = None if c.id in tagged else c.changelog_manifest_list
            if own_list:
                files += added_files(table, own_list, "changelog")
            delta = existing_list(table, c.delta_manifest_list)
            if delta:
                files += unheld_data_files(table, deleted_in_delta(table, c), holders)
            files += unused_lists(
                table,
                [
                    (own_list, c.changelog_manifest_list_size),
                    (delta, c.delta_manifest_list_size),
                    (existing_list(table, c.base_manifest_list), c.base_manifest_list_size),
                ],
                skip,
            )
    except SnapshotNotFoundError as e:
        # A concurrent snapshot expiry, its restore or another changelog expiry took a changelog
        # or snapshot this plan reads: plan again next time.
        return ExpireChangelogsPlan(
            name, None, None, (), (), (), f"the table changed while planning ({e}); nothing was deleted, run again"
        )
    except (FileNotFoundError, MaintenanceAbortedError) as e:
        if (table.snapshot_manager.earliest_id(), long_lived.earliest_id(), long_lived.latest_id()) != rng.view:
            return ExpireChangelogsPlan(
                name, None, None, (), (), (), "the table changed while planning (a concurrent expiry); run again"
            )
        if isinstance(e, MaintenanceAbortedError):
            raise
        raise MaintenanceAbortedError(
            f"expire_changelogs on {name}: {getattr(e, 'filename', None) or e} could not be read; nothing was deleted"
        ) from None
    return ExpireChangelogsPlan(
        name,
        begin,
        end,
        tuple(c.id for c in changelogs),
        tuple(files),
        tuple(t.id for t in tags),
        None,
        rng.consumer_floor,
        tuple(changelogs),
    )


def _new_tags(table: FileStoreTable, plan: ExpireChangelogsPlan) -> bool:
    begin, end = plan.expired_range()
    return any(begin <= t.id <= end and t.id not in plan.tag_ids for t in tagged_snapshots(table))


def expire_changelogs(
    table: FileStoreTable, *, retain_min=None, retain_max=None, older_than=None, max_deletes=None, dry_run: bool = False
) -> ExpireChangelogsResult:
    started = time.monotonic()
    if not isinstance(dry_run, bool):
        raise MaintenanceArgumentError(f"dry_run = {dry_run!r} for table {table.identifier} must be True or False")
    cfg = resolve_changelog_config(
        table, retain_min=retain_min, retain_max=retain_max, older_than=older_than, max_deletes=max_deletes
    )
    if dry_run:
        return _expire(table, cfg, dry_run, started)
    with expiry_lock(table) as held:
        if not held:
            return ExpireChangelogsResult(
                operation="expire_changelogs",
                table=table.identifier,
                duration_s=time.monotonic() - started,
                skipped=f"{HOLDERS} of this table holds snapshot/.expire-lock; "
                "this expiry was skipped (the next one does the work)",
            )
        return _expire(table, cfg, dry_run, started)


def _expire(table: FileStoreTable, cfg: ExpireConfig, dry_run: bool, started: float) -> ExpireChangelogsResult:
    plan = plan_expire_changelogs(table, cfg)

    def result(plan: ExpireChangelogsPlan, counts: dict | None = None, skipped=None) -> ExpireChangelogsResult:
        meta = sum(1 for f in plan.files if f.kind not in ("data", "changelog"))
        counts = counts or {
            "changelog": sum(f.kind == "changelog" for f in plan.files),
            "data": sum(f.kind == "data" for f in plan.files),
            "metadata": meta,
            "bytes": sum(f.size for f in plan.files),
        }
        return ExpireChangelogsResult(
            operation="expire_changelogs",
            table=table.identifier,
            dry_run=dry_run,
            duration_s=time.monotonic() - started,
            expired_changelogs=plan.expired,
            earliest_changelog=plan.end if plan.expired else plan.begin,
            deleted_changelog_files=counts["changelog"],
            deleted_data_files=counts["data"],
            deleted_metadata_files=counts["metadata"],
            bytes_reclaimed=counts["bytes"],
            files=tuple(f.path for f in plan.files),
            skipped=skipped or plan.reason,
        )

    if dry_run or not plan.expired:
        return result(plan)
    begin, end = plan.expired_range()
    changed = ExpireChangelogsPlan(plan.table, begin, end, (), (), ())
    # phase 2: the range must still hold and no tag may have appeared in it
    rng = compute_range(table, cfg)
    if rng.begin != begin or rng.end is None or rng.end < end or _new_tags(table, plan):
        return result(
            changed,
            skipped="the table changed under the plan (a tag, consumer or another expiry); "
            "nothing was deleted, run again",
        )
    long_lived = table.changelog_manager.long_lived
    mine = set()
    for cid in plan.expired:  # ascending: the remaining changelogs stay contiguous
        if table.fileio.delete(long_lived.path(cid)):
            mine.add(cid)
        long_lived.forget(cid)
    long_lived.commit_earliest_hint(end)
    # A reader pins changelog N with a consumer file, then checks changelog-N still exists; so a
    # consumer that appeared while the changelog files went must get them back (as for snapshots).
    # Only the ones this run deleted: another expiry that deleted the rest is deleting their files.
    floor = ConsumerManager(table).min_next_snapshot(strict=True)
    if _new_tags(table, plan) or (floor is not None and floor < end and floor != plan.consumer_floor):
        for c in plan.changelogs:
            if c.id in mine:
                long_lived.commit(c)
        long_lived.commit_earliest_hint(begin)
        return result(
            changed,
            skipped="a consumer or tag on an expiring changelog appeared during expiry; "
            "the changelogs were restored and nothing was deleted",
        )
    if mine != set(plan.expired):
        # A concurrent expiry took some: it, or a restore of its own, decides about their files;
        # whatever neither deletes is an orphan for remove_orphan_files.
        return result(
            changed, skipped="a concurrent expiry removed some of these changelogs; nothing was deleted, run again"
        )
    counts = delete_planned(table, plan.files)
    log.info("expired changelogs %d..%d of %s", plan.expired[0], plan.expired[-1], table.identifier)
    return result(plan, counts)
