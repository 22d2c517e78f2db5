"""Incremental reads: the changes of snapshots (start, end] (Paimon's ``incremental-between``).

Java ``IncrementalStartingScanner`` (1.0) / ``IncrementalDeltaStartingScanner`` (later): for every
snapshot after ``start`` up to ``end``, scan mode

- ``delta``: the data files an APPEND snapshot added (COMPACT and OVERWRITE snapshots are skipped);
- ``changelog``: the changelog files of every snapshot but OVERWRITE (``changelogManifestList``):
  ``input`` lists them on APPEND snapshots, ``lookup`` and ``full-compaction`` on the COMPACT
  snapshots of the compactions that produced them;
- ``auto``: ``changelog`` when ``changelog-producer`` is not ``none``, else ``delta``;
- ``diff`` (Java ``IncrementalDiffStartingScanner``, and Java 1.0's read between two tags): the
  merged states of the two snapshots compared per key (:mod:`lake_core.read.diff`); needs only
  those two snapshots (or tags), not the ones between.

Each snapshot's files become streaming splits (Java ``DataSplit.isStreaming``): read as they are,
retractions kept, every row with its kind in ``_ROW_KIND``, in commit order. Java 1.0 instead
merged the files of the whole range per key (a batch split), which loses changes when a key
changes in several snapshots; Java 1.1 reads them unmerged, as here.

Changes are read in the table's current schema, whatever schema each snapshot was written under:
this is not time travel (Java's ``incremental-between`` does not travel either). Files map to the
current columns by field id, so a renamed column's old changes come under its new name (never a
new column that took its old name), a column added later is NULL in older changes, a dropped one is
absent, and the projection and filter name current columns.

Start and end are snapshot ids or tag names (a tag is its snapshot). As Java's
``checkScanSnapshotIdValidity``, the range must lie in what is retained: ``start`` at least the
earliest readable id minus one, ``end`` at most the latest snapshot; otherwise the read is refused
(never clamped). The earliest readable id of a changelog read counts long-lived changelogs
(``changelog/changelog-N``, :class:`ChangelogManager`); of a delta read only snapshots, unless the
table has no changelog producer (then its changelog *is* the delta and outlives the snapshot).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from lake_core.errors import FormatError, InvalidOptionError, SnapshotNotFoundError, UnsupportedOptionError
from lake_core.manifest.metadata import FileKind, ManifestEntry
from lake_core.paths import partition_dir
from lake_core.read.predicate import Predicate
from lake_core.read.scan import TableScan
from lake_core.read.split import Split
from lake_core.read.split_read import ROW_KIND  # noqa: F401  (the column of each change's kind)
from lake_core.snapshot.changelog_manager import ChangelogNotFoundError
from lake_core.snapshot.snapshot import CommitKind, Snapshot

if TYPE_CHECKING:
    from lake_core.store import FileStore

#: Paimon's option keys (Java ``CoreOptions.INCREMENTAL_BETWEEN``, ``INCREMENTAL_BETWEEN_SCAN_MODE``).
INCREMENTAL_BETWEEN = "incremental-between"
INCREMENTAL_BETWEEN_SCAN_MODE = "incremental-between-scan-mode"
SCAN_MODES = ("auto", "delta", "changelog", "diff")


@dataclass(frozen=True)
class IncrementalRange:
    """Snapshots ``start`` (exclusive) to ``end`` (inclusive) read in ``mode`` (delta/changelog)."""

    start: int
    end: int
    mode: str


def scan_mode_of(store: FileStore, scan_mode: str | None) -> str:
    """``delta``, ``changelog`` or ``diff`` for a requested ``incremental-between-scan-mode``."""
    mode = "auto" if scan_mode is None else str(scan_mode).strip().lower()
    if mode not in SCAN_MODES:
        raise InvalidOptionError(
            f"option '{INCREMENTAL_BETWEEN_SCAN_MODE}' = {scan_mode!r} for a read of "
            f"{store.identifier} must be one of {list(SCAN_MODES)}"
        )
    if mode == "auto":
        return "delta" if store.options.changelog_producer == "none" else "changelog"
    if mode == "diff" and not store.schema.primary_keys:
        raise UnsupportedOptionError(
            f"option '{INCREMENTAL_BETWEEN_SCAN_MODE}' = 'diff' needs a primary-key table; "
            f"{store.identifier} is an append table (read its delta instead)"
        )
    return mode


def parse_between(store: FileStore, between: Any) -> tuple[str, str]:
    """``"s,e"`` or a pair → the two ends as text (snapshot ids or tag names)."""
    if isinstance(between, str):
        parts = [p.strip() for p in between.split(",")]
    elif isinstance(between, (tuple, list)):
        parts = [str(p).strip() for p in between]
    else:
        parts = []
    if len(parts) != 2 or not all(parts):
        raise InvalidOptionError(
            f"option '{INCREMENTAL_BETWEEN}' = {between!r} for a read of {store.identifier} "
            "must be 'start,end' (two snapshot ids or two tag names), or a (start, end) pair"
        )
    return parts[0], parts[1]


def _ids(store: FileStore, start: str, end: str) -> tuple[int, int]:
    """Two snapshot ids, or two tags resolved to their snapshots (Java tries the ids first)."""
    try:
        return int(start), int(end)
    except ValueError:
        pass
    return store.tag(start).id, store.tag(end).id


def _reads_long_lived(store: FileStore, mode: str) -> bool:
    # A delta read can use changelog-N only when the delta is the changelog (producer none): expiry
    # then keeps the delta list, otherwise it deleted it with the snapshot.
    return mode == "changelog" or store.options.changelog_producer == "none"


def resolve_range(store: FileStore, between: Any, scan_mode: str | None) -> IncrementalRange | None:
    """The checked range of ``between`` read in ``scan_mode``; None when the table has no snapshot
    yet (Java's ``NoSnapshot``: nothing to read)."""
    mode = scan_mode_of(store, scan_mode)
    start_text, end_text = parse_between(store, between)
    start, end = _ids(store, start_text, end_text)
    if start > end:
        raise InvalidOptionError(
            f"option '{INCREMENTAL_BETWEEN}' = '{start_text},{end_text}' for a read of "
            f"{store.identifier}: the start snapshot {start} is after the end snapshot {end}"
        )
    latest = store.snapshot_manager.latest_id()
    long_lived = _reads_long_lived(store, mode)
    earliest = store.changelog_manager.earliest_id() if long_lived else store.snapshot_manager.earliest_id()
    if latest is None or earliest is None:  # no snapshot (then no changelog either)
        return None
    if start < earliest - 1 or end > latest:
        what = "changelogs" if long_lived else "snapshots"
        error = ChangelogNotFoundError if long_lived else SnapshotNotFoundError
        raise error(
            f"incremental read of {store.identifier} between snapshots {start} (exclusive) and {end}: "
            f"the readable {what} are {earliest}..{latest}, so the start must be at least {earliest - 1} "
            f"and the end at most {latest} (the {what} before were expired)"
        )
    return IncrementalRange(start=start, end=end, mode=mode)


def change_manifest_list(snapshot: Snapshot, mode: str) -> str | None:
    """The manifest list of ``snapshot``'s changes in ``mode`` (None: nothing to read there)."""
    if mode == "delta":
        return snapshot.delta_manifest_list if snapshot.commit_kind == CommitKind.APPEND else None
    if snapshot.commit_kind == CommitKind.OVERWRITE:
        return None
    return snapshot.changelog_manifest_list


def follow_up_mode(store: FileStore) -> str:
    """What a stream scan reads of each new snapshot (Java ``DeltaFollowUpScanner`` for producer
    ``none``, else the snapshot's changelog)."""
    return scan_mode_of(store, "auto")


def snapshot_changes(store: FileStore, snapshot_id: int, mode: str) -> Snapshot:
    """Snapshot ``snapshot_id`` as far as its changes in ``mode`` need (snapshot or long-lived
    changelog)."""
    if _reads_long_lived(store, mode):
        return store.changelog_manager.changelog(snapshot_id)
    return store.snapshot_manager.get(snapshot_id)


class ChangeScan(TableScan):
    """Splits of the changes of snapshots, one per (snapshot, partition, bucket), in commit order.
    Partitions and key ranges are pruned by the predicate (the rows themselves are filtered at read)."""

    def __init__(self, store: FileStore, snapshot_ids: range, mode: str, predicate: Predicate | None = None):
        super().__init__(store, None, predicate)
        self.snapshot_ids = snapshot_ids
        self.mode = mode

    def has_changes(self, snapshot: Snapshot) -> bool:
        """Whether ``snapshot`` has files to read in this mode (before any pruning)."""
        return bool(change_manifest_list(snapshot, self.mode))

    def snapshot_splits(self, snapshot: Snapshot) -> list[Split]:
        name = change_manifest_list(snapshot, self.mode)
        if not name:
            return []
        manifests = self.store.manifest_store
        metas = [m for m in manifests.read_manifest_list(name) if self._manifest_may_match(m)]
        groups: dict[tuple[bytes, int], list[ManifestEntry]] = defaultdict(list)
        part_ok: dict[bytes, bool] = {}
        for e in manifests.read_entries(metas):
            if e.kind != FileKind.ADD:
                raise FormatError(
                    f"snapshot {snapshot.id} of {self.store.identifier} lists a deleted file "
                    f"({e.file.file_name}) among its {self.mode} files; refusing to read its changes"
                )
            ok = part_ok.get(e.partition)
            if ok is None:
                ok = part_ok[e.partition] = self._partition_matches(manifests.partition_values(e.partition))
            if ok and self._keep_file(e.file):
                groups[(e.partition, e.bucket)].append(e)
        default_name = self.store.options.partition_default_name
        out = []
        in_order = sorted(groups.items(), key=lambda kv: (repr(manifests.partition_values(kv[0][0])), kv[0][1]))
        for (partition, bucket), entries in in_order:
            values = manifests.partition_values(partition)
            # the manifest's order, as Java's streaming split keeps it: a compaction's changelog
            # files (lookup, full-compaction) are rolled in key order and a key's -U/+U may span two
            # of them, so ordering by sequence number could put a +U before its -U
            files = [e.file for e in entries]
            out.append(
                Split(
                    snapshot_id=snapshot.id,
                    partition=partition,
                    partition_values=values,
                    bucket=bucket,
                    total_buckets=entries[0].total_buckets,
                    bucket_path=self.store.paths.bucket_dir(
                        partition_dir(self.partition_names, values, default_name), bucket
                    ),
                    files=tuple(files),
                    streaming=True,
                    row_kind=True,
                    schema_id=self.store.schema.id,
                )
            )
        return out

    def splits(self) -> list[Split]:
        out: list[Split] = []
        for sid in self.snapshot_ids:
            out.extend(self.snapshot_splits(snapshot_changes(self.store, sid, self.mode)))
        return out


class DiffScan(TableScan):
    """Diff splits (Java ``IncrementalDiffStartingScanner``): per (partition, bucket) whose live
    files differ, those of the start snapshot as ``before_files`` and of the end snapshot as
    ``files``. Only partitions and key ranges are pruned: pruning by values could drop one side of
    a key and turn an update into an insert or a delete."""

    def __init__(
        self, store: FileStore, start: Snapshot | None, end: Snapshot | None, predicate: Predicate | None = None
    ):
        super().__init__(store, end, predicate)
        self.start = start
        keys = set(store.schema.partition_keys) | set(store.schema.trimmed_primary_keys)
        self.prune = predicate.restrict_to(keys) if predicate is not None else None

    def splits(self) -> list[Split]:
        if self.snapshot is None:
            return []
        before = {(s.partition, s.bucket): s for s in TableScan(self.store, self.start, self.prune).splits()}
        after = {(s.partition, s.bucket): s for s in TableScan(self.store, self.snapshot, self.prune).splits()}
        out = []
        for key in sorted(
            before.keys() | after.keys(), key=lambda k: (repr(self.store.manifest_store.partition_values(k[0])), k[1])
        ):
            b, a = before.get(key), after.get(key)
            if b is not None and a is not None and b.files == a.files and b.dv_index == a.dv_index:
                continue  # nothing changed in this bucket
            base = a if a is not None else replace(before[key], files=(), dv_index=None)
            out.append(
                replace(
                    base,
                    snapshot_id=self.snapshot.id,
                    row_kind=True,
                    before_files=b.files if b is not None else (),
                    before_dv_index=b.dv_index if b is not None else None,
                )
            )
        return out


def _diff_ends(store: FileStore, between: Any) -> tuple[Snapshot | None, Snapshot | None]:
    """The two snapshots a diff compares: ids (0: before the first snapshot) or tags, whose
    snapshot need not be retained (the tag keeps its files)."""
    start_text, end_text = parse_between(store, between)
    start: Snapshot | None
    end: Snapshot | None
    try:
        start_id, end_id = int(start_text), int(end_text)
    except ValueError:
        start, end = store.tag(start_text), store.tag(end_text)
    else:
        if store.snapshot_manager.latest_id() is None:
            return None, None
        start = None if start_id == 0 else store.snapshot_manager.get(start_id)
        end = None if end_id == 0 else store.snapshot_manager.get(end_id)
    if (start.id if start else 0) > (end.id if end else 0):
        raise InvalidOptionError(
            f"option '{INCREMENTAL_BETWEEN}' = '{start_text},{end_text}' for a read of "
            f"{store.identifier}: the start snapshot is after the end snapshot"
        )
    return start, end


def incremental_scan(
    store: FileStore, between: Any, scan_mode: str | None, predicate: Predicate | None = None
) -> TableScan:
    if scan_mode_of(store, scan_mode) == "diff":
        start, end = _diff_ends(store, between)
        return DiffScan(store, start, end, predicate)
    rng = resolve_range(store, between, scan_mode)
    if rng is None:
        return ChangeScan(store, range(0), scan_mode_of(store, scan_mode), predicate)
    return ChangeScan(store, range(rng.start + 1, rng.end + 1), rng.mode, predicate)


def incremental_options(store: FileStore, options: Mapping[str, Any]) -> tuple[Any, str | None] | None:
    """(between, scan mode) from Paimon read options; None when ``incremental-between`` is absent.
    Other Paimon options that would change what a read returns (``incremental-between-timestamp``,
    ``incremental-to-auto-tag``, ``scan.*``) are refused rather than ignored."""
    unsupported = sorted(
        k
        for k in options
        if isinstance(k, str)
        and (
            (k.startswith("incremental-") and k not in (INCREMENTAL_BETWEEN, INCREMENTAL_BETWEEN_SCAN_MODE))
            or k.startswith("scan.")
        )
    )
    if unsupported:
        raise UnsupportedOptionError(
            f"read option(s) {unsupported} for {store.identifier} are not supported by "
            f"lake_core yet (supported: '{INCREMENTAL_BETWEEN}', "
            f"'{INCREMENTAL_BETWEEN_SCAN_MODE}'; time travel: snapshot_id/tag)"
        )
    between = options.get(INCREMENTAL_BETWEEN)
    mode = options.get(INCREMENTAL_BETWEEN_SCAN_MODE)
    if between in (None, ""):
        if mode not in (None, ""):
            raise InvalidOptionError(
                f"option '{INCREMENTAL_BETWEEN_SCAN_MODE}' = {mode!r} for a read of "
                f"{store.identifier} needs '{INCREMENTAL_BETWEEN}'"
            )
        return None
    return between, (None if mode in (None, "") else str(mode))
