"""Snapshot expiry: Paimon's ``ExpireSnapshotsImpl`` range and ``SnapshotDeletion`` file rules, made safe.

Which snapshots expire (Java ``computeSnapshotExpireRange``), with ``latest``/``earliest`` ids:

- ``min = max(latest - retain_max + 1, earliest)``;
- ``end = min(latest - retain_min + 1, min nextSnapshot of the consumers, earliest + max_deletes)``;
- walking ``id`` from ``min`` up, the first snapshot committed at or after ``older_than`` ends the range;
- snapshots ``[earliest, end)`` expire; ``end`` is the new earliest.

Which files go (the same as Java's): data files a delta of a snapshot in ``(begin, end]`` deletes and
does not re-add (plus their extra files) unless a tag still holds them; changelog files added by
snapshots in ``[begin, end)``; manifest lists, manifests, index manifests, index files and statistics
of ``[begin, end)`` that neither ``end`` nor a tag uses.

What we add (Java deletes files first and snapshot files last, so a crash or a racing reader can
see a snapshot whose files are gone): a frozen plan, re-validated against the latest snapshot,
tags and consumers just before acting; a journal of the files to delete; then the snapshot files
go and ``EARLIEST`` moves *before* any file is deleted; tags and consumers are read once more (a
lease or tag that appeared meanwhile restores the snapshots and aborts); last, the files go. A
re-run finishes a journal a crash left behind.
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from lake_core.errors import MaintenanceAbortedError, MaintenanceArgumentError, SnapshotNotFoundError
from lake_core.maintenance.consumers import ConsumerManager
from lake_core.maintenance.expiry_lock import HOLDERS, expiry_lock
from lake_core.maintenance.references import (
    PlannedFile,
    added_files,
    data_file_paths,
    deleted_in_delta,
    index_path,
    manifest_skipping_set,
    now_ms,
    tagged_snapshots,
    try_index_entries,
    unheld_data_files,
    unused_lists,
)
from lake_core.manifest.metadata import FileSource
from lake_core.result import OperationResult, fact, shown
from lake_core.snapshot.snapshot import Snapshot

if TYPE_CHECKING:
    from lake_core.table import FileStoreTable

log = logging.getLogger(__name__)

_JOURNAL_PREFIX = "expire-journal-"
_INT_MAX = 2147483647


@dataclass(frozen=True)
class ExpireConfig:
    retain_min: int
    retain_max: int
    older_than_ms: int
    max_deletes: int
    # Java ExpireConfig.isChangelogDecoupled: the changelog.* values retain more than these, so
    # expired snapshots leave their changelog behind in changelog/changelog-N.
    changelog_decoupled: bool = False
    # changelog-producer != none (Java SnapshotDeletion.produceChangelog)
    produce_changelog: bool = False


def _positive_int(table: FileStoreTable, name: str, value, option: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise MaintenanceArgumentError(
            f"{name} = {value!r} for table {table.identifier} must be an integer (like option '{option}')"
        )
    if value < 1:
        raise MaintenanceArgumentError(
            f"{name} = {value} for table {table.identifier} must be at least 1 (like option '{option}')"
        )
    return value


def cutoff_ms(table: FileStoreTable, name: str, value, now: int) -> int:
    """``older_than`` as epoch millis: a datetime (naive = local time, as Paimon's procedures) or a
    timedelta meaning "older than this age". Never in the future."""
    if isinstance(value, _dt.timedelta):
        if value < _dt.timedelta(0):
            raise MaintenanceArgumentError(f"{name} = {shown(value)} for table {table.identifier} must not be negative")
        return now - int(value.total_seconds() * 1000)
    if isinstance(value, _dt.datetime):
        ms = int(value.timestamp() * 1000)
        if ms > now:
            raise MaintenanceArgumentError(
                f"{name} = {value.isoformat()} for table {table.identifier} is in the future; nothing was changed"
            )
        return ms
    raise MaintenanceArgumentError(f"{name} = {value!r} for table {table.identifier} must be a datetime or a timedelta")


def resolve_config(
    table: FileStoreTable,
    *,
    retain_min=None,
    retain_max=None,
    older_than=None,
    max_deletes=None,
    now: int | None = None,
) -> ExpireConfig:
    """Arguments, falling back to the table's options, validated like the options."""
    now = now_ms() if now is None else now
    opts = table.options
    rmin = _positive_int(
        table,
        "retain_min",
        retain_min if retain_min is not None else opts.snapshot_num_retained_min,
        "snapshot.num-retained.min",
    )
    rmax = _positive_int(
        table,
        "retain_max",
        retain_max if retain_max is not None else opts.snapshot_num_retained_max,
        "snapshot.num-retained.max",
    )
    limit = _positive_int(
        table,
        "max_deletes",
        max_deletes if max_deletes is not None else opts.snapshot_expire_limit,
        "snapshot.expire.limit",
    )
    if rmin > rmax:
        raise MaintenanceArgumentError(
            f"retain_min ({rmin}) must not exceed retain_max ({rmax}) for table {table.identifier} "
            "('snapshot.num-retained.min' / 'snapshot.num-retained.max'); nothing was changed"
        )
    if older_than is None:
        older = now - opts.snapshot_time_retained_ms
    else:
        older = cutoff_ms(table, "older_than", older_than, now)
    cfg = ExpireConfig(rmin, rmax, older, limit)
    cl = changelog_config(table, cfg, now=now)
    decoupled = cl.retain_max > rmax or cl.retain_min > rmin or cl.older_than_ms < older
    return replace(cfg, changelog_decoupled=decoupled, produce_changelog=opts.changelog_producer != "none")


def changelog_config(
    table: FileStoreTable,
    snapshot_cfg: ExpireConfig,
    *,
    retain_min=None,
    retain_max=None,
    older_than=None,
    max_deletes=None,
    now: int,
) -> ExpireConfig:
    """The changelog retention: arguments, else ``changelog.num-retained.min/max`` and
    ``changelog.time-retained``, else the snapshot values (Java ``ExpireConfig.Builder``);
    ``snapshot.expire.limit`` bounds both."""
    opts = table.options

    def pick(arg, name: str, key: str, configured: int | None, fallback: int) -> int:
        value = arg if arg is not None else configured
        return fallback if value is None else _positive_int(table, name, value, key)

    rmin = pick(
        retain_min, "retain_min", "changelog.num-retained.min", opts.changelog_num_retained_min, snapshot_cfg.retain_min
    )
    rmax = pick(
        retain_max, "retain_max", "changelog.num-retained.max", opts.changelog_num_retained_max, snapshot_cfg.retain_max
    )
    limit = pick(
        max_deletes, "max_deletes", "snapshot.expire.limit", opts.snapshot_expire_limit, snapshot_cfg.max_deletes
    )
    if rmin > rmax:
        raise MaintenanceArgumentError(
            f"retain_min ({rmin}) must not exceed retain_max ({rmax}) for the changelogs of table "
            f"{table.identifier} ('changelog.num-retained.min' / 'changelog.num-retained.max'); nothing was changed"
        )
    if older_than is not None:
        older = cutoff_ms(table, "older_than", older_than, now)
    elif opts.changelog_time_retained_ms is not None:
        older = now - opts.changelog_time_retained_ms
    else:
        older = snapshot_cfg.older_than_ms
    return ExpireConfig(rmin, rmax, older, limit)


@dataclass(frozen=True)
class ExpireRange:
    earliest: int | None
    end: int | None  # first retained snapshot; [earliest, end) expire
    consumer_floor: int | None
    reason: str | None = None

    @property
    def empty(self) -> bool:
        return self.earliest is None or self.end is None or self.end <= self.earliest


def retain_min_reason(retain_min: int, earliest: int, latest: int, what: str) -> str:
    """Why ``retain_min`` stops an expiry, with ids that exist: it keeps ``latest - retain_min + 1``
    onwards, or (more than the table holds) every one of them, never "from -3"."""
    first_kept = latest - retain_min + 1
    if first_kept <= earliest:
        count = latest - earliest + 1
        return f"retain_min = {retain_min} keeps all {count} {what}{'s' if count != 1 else ''} ({earliest}..{latest})"
    return f"retain_min = {retain_min} keeps {what}s {first_kept}..{latest}"


def compute_range(table: FileStoreTable, cfg: ExpireConfig) -> ExpireRange:
    sm = table.snapshot_manager
    latest = sm.latest_id()
    if latest is None:
        return ExpireRange(None, None, None, "the table has no snapshots")
    earliest = sm.earliest_id()
    if earliest is None:
        return ExpireRange(None, None, None, "the table has no snapshots")
    lo = max(latest - cfg.retain_max + 1, earliest)
    end = latest - cfg.retain_min + 1
    floor = ConsumerManager(table).min_next_snapshot(strict=True)
    reason = retain_min_reason(cfg.retain_min, earliest, latest, "snapshot")
    if floor is not None and floor < end:
        end, reason = floor, f"a consumer or lease still needs snapshot {floor}"
    if earliest + cfg.max_deletes < end:
        end, reason = earliest + cfg.max_deletes, f"max_deletes = {cfg.max_deletes}"
    for sid in range(lo, end):
        try:
            snap = sm.get(sid)
        except SnapshotNotFoundError:
            continue  # expired by another process meanwhile
        if cfg.older_than_ms <= snap.time_millis:
            end, reason = sid, f"snapshot {sid} is younger than the cut-off"
            break
    return ExpireRange(earliest, end, floor, None if end > earliest else f"nothing to expire: {reason}")


@dataclass(frozen=True)
class ExpireSnapshotsPlan:
    """What an expiry will delete, from metadata only. ``describe()`` is the dry-run text."""

    table: str
    begin: int | None
    end: int | None
    expired: tuple[int, ...]
    files: tuple[PlannedFile, ...]
    tag_ids: tuple[int, ...]
    consumer_floor: int | None
    reason: str | None = None
    snapshots: tuple[Snapshot, ...] = field(default=(), repr=False)
    keeps_changelogs: bool = False  # expired snapshots become changelog/changelog-N first

    @property
    def bytes(self) -> int:
        return sum(f.size for f in self.files)

    def count(self, kind: str) -> int:
        return sum(1 for f in self.files if f.kind == kind)

    def expired_range(self) -> tuple[int, int]:
        """``(begin, end)`` of a plan that expires snapshots: both are set whenever ``expired`` is."""
        if not self.expired or self.begin is None or self.end is None:
            raise ValueError(f"the expiry plan of {self.table} expires nothing")
        return self.begin, self.end

    def describe(self) -> str:
        if not self.expired:
            return f"expire_snapshots on {self.table}: {self.reason or 'nothing to expire'}"
        lines = [
            f"expire_snapshots on {self.table}: snapshots {self.expired[0]}..{self.expired[-1]} "
            f"({len(self.expired)}), new earliest {self.end}, {len(self.files)} files, {self.bytes} bytes"
        ]
        lines += [f"  {f.kind:<14} {f.size:>12}  {f.path}" for f in self.files]
        return "\n".join(lines)


def plan_expire(table: FileStoreTable, cfg: ExpireConfig) -> ExpireSnapshotsPlan:
    """The plan; if a file it needs vanished because a concurrent expiry or a tag deletion moved
    the table on, an empty plan saying so (the next run plans afresh). Any other unreadable
    reference aborts."""
    tag_names: list[str] = []
    earliest = table.snapshot_manager.earliest_id()
    try:
        return _plan(table, cfg, tag_names)
    except (FileNotFoundError, MaintenanceAbortedError) as e:
        if _table_moved(table, earliest, tag_names):
            return ExpireSnapshotsPlan(
                table.identifier,
                None,
                None,
                (),
                (),
                (),
                None,
                "the table changed while planning (a concurrent expiry or tag deletion); "
                "nothing was deleted, run again",
            )
        if isinstance(e, MaintenanceAbortedError):
            raise
        raise MaintenanceAbortedError(
            f"expire_snapshots on {table.identifier}: {e.filename or e} could not be read; nothing was deleted"
        ) from None


def _table_moved(table: FileStoreTable, earliest: int | None, tag_names: list[str]) -> bool:
    """True if another expiry moved the earliest snapshot or a tag read while planning is gone."""
    return table.snapshot_manager.earliest_id() != earliest or any(
        not table.fileio.exists(table.paths.tag(n)) for n in tag_names
    )


def _plan(table: FileStoreTable, cfg: ExpireConfig, tag_names: list[str]) -> ExpireSnapshotsPlan:
    rng = compute_range(table, cfg)
    name = table.identifier
    if rng.earliest is None or rng.end is None or rng.empty:
        return ExpireSnapshotsPlan(name, rng.earliest, rng.end, (), (), (), rng.consumer_floor, rng.reason)
    sm = table.snapshot_manager
    snaps = []
    for sid in range(rng.earliest, rng.end + 1):
        try:
            snaps.append(sm.get(sid))
        except SnapshotNotFoundError:
            continue
    if not snaps or snaps[-1].id != rng.end:
        return ExpireSnapshotsPlan(
            name,
            rng.earliest,
            rng.end,
            (),
            (),
            (),
            rng.consumer_floor,
            f"snapshot {rng.end} disappeared while planning (another expiry?)",
        )
    begin, end_snap = snaps[0].id, snaps[-1]
    expiring = [s for s in snaps if s.id != end_snap.id]
    tags = tagged_snapshots(table, tag_names)
    files: list[PlannedFile] = []

    # Decoupled without a producer, the input (the delta) is the changelog: files a writer added
    # and the lists naming them stay for changelog/changelog-N (Java SnapshotDeletion).
    keep_input = cfg.changelog_decoupled and not cfg.produce_changelog

    # 1. data files deleted by the deltas of (begin, end], unless a tag still holds them
    candidates: dict[str, tuple] = {}
    for s in snaps[1:]:
        candidates.update(deleted_in_delta(table, s))
    if keep_input:
        candidates = {p: v for p, v in candidates.items() if v[0].file.file_source not in (None, FileSource.APPEND)}
    files += unheld_data_files(table, candidates, tags + [end_snap])  # end: defence in depth

    # 2. changelog files of [begin, end), unless they outlive the snapshot (decoupled)
    if not cfg.changelog_decoupled:
        for s in expiring:
            files += added_files(table, s.changelog_manifest_list, "changelog")

    # 3. metadata of [begin, end) that neither end nor a tag uses
    skip = manifest_skipping_set(table, [end_snap] + tags)
    for s in expiring:
        lists: list[tuple[str | None, int | None]] = (
            []
            if keep_input
            else [
                (s.base_manifest_list, s.base_manifest_list_size),
                (s.delta_manifest_list, s.delta_manifest_list_size),
            ]
        )
        if not cfg.changelog_decoupled:
            lists.append((s.changelog_manifest_list, s.changelog_manifest_list_size))
        files += unused_lists(table, lists, skip)
        if s.index_manifest and s.index_manifest not in skip:
            entries = try_index_entries(table, s)
            for e in entries or ():
                if e.file_name not in skip:
                    skip.add(e.file_name)
                    files.append(PlannedFile(index_path(table, e), e.file_size, "index"))
            skip.add(s.index_manifest)
            files.append(PlannedFile(table.paths.manifest(s.index_manifest), 0, "index-manifest"))
        if s.statistics and s.statistics not in skip:
            skip.add(s.statistics)
            files.append(PlannedFile(table.paths.statistics(s.statistics), 0, "statistics"))

    return ExpireSnapshotsPlan(
        name,
        begin,
        end_snap.id,
        tuple(s.id for s in expiring),
        tuple(files),
        tuple(t.id for t in tags),
        rng.consumer_floor,
        None,
        tuple(snaps),
        cfg.changelog_decoupled,
    )


@dataclass(frozen=True, kw_only=True)
class ExpireSnapshotsResult(OperationResult):
    expired_snapshots: tuple[int, ...] = fact((), summary=True)
    # after the run (planned, in a dry run)
    earliest_snapshot: int | None = fact(None, summary=True, counts=False, label="earliest snapshot now")
    deleted_data_files: int = fact(0, summary=True, label="data files")
    deleted_changelog_files: int = fact(0, summary=True, label="changelog files")
    deleted_metadata_files: int = fact(0, summary=True, label="metadata files")
    bytes_reclaimed: int = fact(0, summary=True, label="reclaimed")
    files: tuple[str, ...] = fact((), label="files deleted")
    skipped: str | None = None


def _journal_payload(plan: ExpireSnapshotsPlan) -> bytes:
    return json.dumps(
        {"expired": list(plan.expired), "end": plan.end, "files": [[f.path, f.size, f.kind] for f in plan.files]}
    ).encode("utf-8")


def delete_planned(table: FileStoreTable, files) -> dict[str, int]:
    """Delete planned files (already-gone ones are not counted); counts by kind and bytes."""
    counts = {"data": 0, "changelog": 0, "metadata": 0, "bytes": 0}
    for f in files:
        if table.fileio.delete(f.path):
            counts[f.kind if f.kind in ("data", "changelog") else "metadata"] += 1
            counts["bytes"] += f.size
    return counts


def _guard(table: FileStoreTable, files) -> list[PlannedFile]:
    """Drop any file the current earliest snapshot or a tag still references (a journal replay
    must never trust a plan made against an older table)."""
    sm = table.snapshot_manager
    earliest = sm.earliest_id()
    keep_snaps = tagged_snapshots(table) + ([sm.get(earliest)] if earliest is not None else [])
    names = manifest_skipping_set(table, keep_snaps)
    keys: set[str] = set()
    for s in keep_snaps:
        for e in table.manifest_store.live_entries(s):
            keys.update(p for p, _ in data_file_paths(table, e))
    return [f for f in files if f.path not in keys and f.path.rsplit("/", 1)[-1] not in names]


def _finish_journals(table: FileStoreTable) -> int:
    """Complete expiries a crash interrupted; returns the number of files deleted."""
    done = 0
    for name in table.fileio.list_names(table.paths.snapshot_dir):
        if not name.startswith("." + _JOURNAL_PREFIX):
            continue
        path = table.paths.expire_journal(name[1:])
        try:
            obj = json.loads(table.fileio.read_text(path))
        except FileNotFoundError:
            continue
        except ValueError:
            table.fileio.delete(path)  # torn write: the expiry never started deleting
            continue
        sm = table.snapshot_manager
        if all(not table.fileio.exists(table.paths.snapshot(i)) for i in obj["expired"]):
            files = [PlannedFile(p, s, k) for p, s, k in obj["files"]]
            done += sum(v for k, v in delete_planned(table, _guard(table, files)).items() if k != "bytes")
        for i in obj["expired"]:
            sm.forget(i)
        table.fileio.delete(path)
    return done


def _revalidate(table: FileStoreTable, cfg: ExpireConfig, plan: ExpireSnapshotsPlan) -> bool:
    begin, end = plan.expired_range()
    rng = compute_range(table, cfg)
    if rng.end is None or rng.empty or rng.end < end:
        return False
    tag_ids = {t.id for t in tagged_snapshots(table)}
    return not any(begin <= t <= end and t not in plan.tag_ids for t in tag_ids)


def _restore(table: FileStoreTable, plan: ExpireSnapshotsPlan, mine: set[int]) -> None:
    """Write back the snapshot files this run deleted (``mine``)."""
    for s in plan.snapshots:
        if s.id in mine:
            table.fileio.try_create(table.paths.snapshot(s.id), s.to_json().encode("utf-8"))
    table.snapshot_manager.commit_earliest_hint(min(mine, default=plan.expired_range()[1]))
    if plan.keeps_changelogs:  # the snapshots own their changelog again: changelog expiry must not see it
        long_lived = table.changelog_manager.long_lived
        for sid in sorted(mine, reverse=True):
            table.fileio.delete(long_lived.path(sid))
            long_lived.forget(sid)


def expire_snapshots(
    table: FileStoreTable,
    *,
    retain_min=None,
    retain_max=None,
    older_than=None,
    max_deletes=None,
    dry_run: bool = False,
    finish_journals: bool = True,
) -> ExpireSnapshotsResult:
    """``finish_journals``: first complete expiries a crash interrupted (lists the snapshot
    directory, so the expiry after each commit leaves it to maintenance runs)."""
    started = time.monotonic()
    cfg = resolve_config(
        table, retain_min=retain_min, retain_max=retain_max, older_than=older_than, max_deletes=max_deletes
    )
    if not isinstance(dry_run, bool):
        raise MaintenanceArgumentError(f"dry_run = {dry_run!r} for table {table.identifier} must be True or False")
    if dry_run:
        return _expire(table, cfg, dry_run, finish_journals, started)
    if not finish_journals:
        # the expiry after a commit: most find nothing to expire, which needs no lock (only the
        # best-effort EARLIEST hint may be written)
        plan = plan_expire(table, cfg)
        if not plan.expired:
            return _expire(table, cfg, dry_run, finish_journals, started, plan)
    with expiry_lock(table) as held:
        if not held:
            return ExpireSnapshotsResult(
                operation="expire_snapshots",
                table=table.identifier,
                dry_run=False,
                duration_s=time.monotonic() - started,
                skipped=f"{HOLDERS} of this table holds snapshot/.expire-lock; "
                "this expiry was skipped (the next one does the work)",
            )
        return _expire(table, cfg, dry_run, finish_journals, started)


def _expire(
    table: FileStoreTable,
    cfg: ExpireConfig,
    dry_run: bool,
    finish_journals: bool,
    started: float,
    plan: ExpireSnapshotsPlan | None = None,
) -> ExpireSnapshotsResult:
    if not dry_run and finish_journals:
        _finish_journals(table)
    plan = plan if plan is not None else plan_expire(table, cfg)

    def result(**kw) -> ExpireSnapshotsResult:
        return ExpireSnapshotsResult(
            operation="expire_snapshots",
            table=table.identifier,
            dry_run=dry_run,
            duration_s=time.monotonic() - started,
            **kw,
        )

    if dry_run or not plan.expired:
        if not dry_run and plan.begin is not None and not table.fileio.exists(table.paths.earliest_hint):
            table.snapshot_manager.commit_earliest_hint(plan.begin)  # as Java: write the hint when missing
        return result(
            expired_snapshots=plan.expired,
            earliest_snapshot=plan.end if plan.expired else plan.begin,
            deleted_data_files=plan.count("data"),
            deleted_changelog_files=plan.count("changelog"),
            deleted_metadata_files=len(plan.files) - plan.count("data") - plan.count("changelog"),
            bytes_reclaimed=plan.bytes,
            files=tuple(f.path for f in plan.files),
            skipped=plan.reason,
        )

    for _ in range(3):  # phase 2: re-validate against the latest snapshot, tags and consumers
        if _revalidate(table, cfg, plan):
            break
        plan = plan_expire(table, cfg)
        if not plan.expired:
            return result(skipped=plan.reason)
    else:
        return result(skipped="the table kept changing under the plan; nothing was deleted, run again")

    fio, sm = table.fileio, table.snapshot_manager
    begin, end = plan.expired_range()
    journal = table.paths.expire_journal(f"{_JOURNAL_PREFIX}{end}-{time.time_ns()}")
    fio.write_bytes(journal, _journal_payload(plan))
    if plan.keeps_changelogs:  # Java order: changelog-N exists before snapshot-N goes
        for s in plan.snapshots:
            if s.id in plan.expired:
                table.changelog_manager.long_lived.commit(s)
    mine = set()
    for sid in plan.expired:  # ascending: the remaining snapshots stay contiguous
        if fio.delete(table.paths.snapshot(sid)):
            mine.add(sid)
        sm.forget(sid)
    sm.commit_earliest_hint(end)

    # A lease or tag taken while the snapshot files were going: give them back and stop. Only the
    # ones this run deleted: a concurrent expiry that deleted the others is deleting their files.
    floor = ConsumerManager(table).min_next_snapshot(strict=True)
    new_tag = any(begin <= t.id < end and t.id not in plan.tag_ids for t in tagged_snapshots(table))
    if new_tag or (floor is not None and floor < end and floor != plan.consumer_floor):
        _restore(table, plan, mine)
        fio.delete(journal)
        return result(
            skipped="a lease, consumer or tag on an expiring snapshot appeared during expiry; "
            "the snapshots were restored and nothing was deleted"
        )
    if mine != set(plan.expired):
        # A concurrent expiry took some: it (or its own restore) decides about their files; what
        # neither deletes is an orphan for remove_orphan_files.
        fio.delete(journal)
        return result(skipped="a concurrent expiry removed some of these snapshots; nothing was deleted, run again")

    counts = delete_planned(table, plan.files)
    fio.delete(journal)
    log.info("expired snapshots %d..%d of %s", plan.expired[0], plan.expired[-1], table.identifier)
    return result(
        expired_snapshots=plan.expired,
        earliest_snapshot=end,
        deleted_data_files=counts["data"],
        deleted_changelog_files=counts["changelog"],
        deleted_metadata_files=counts["metadata"],
        bytes_reclaimed=counts["bytes"],
        files=tuple(f.path for f in plan.files),
    )
