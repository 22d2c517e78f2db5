"""Finding, reading and exclusively creating snapshots (Java ``SnapshotManager``).

``LATEST``/``EARLIEST`` are hints, never truth (as in Java ``SnapshotManager``): the hinted id is trusted only
when ``snapshot-(hint+1)`` does not exist; otherwise the directory is listed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from lake_core.errors import SnapshotNotFoundError
from lake_core.format.integrity import read_metadata
from lake_core.io.fileio import FileIO
from lake_core.paths import TablePaths
from lake_core.snapshot.snapshot import CommitKind, Snapshot

_SNAPSHOT_NAME = re.compile(r"^snapshot-(\d+)$")


class SnapshotManager:
    # What the files are called; :class:`lake_core.snapshot.changelog_manager.LongLivedChangelogs` reuses
    # the hint and listing rules for ``changelog/changelog-N`` by overriding these.
    _name = _SNAPSHOT_NAME
    _what = "snapshot"

    def __init__(self, fileio: FileIO, paths: TablePaths):
        self.fileio = fileio
        self.paths = paths
        self._cache: dict[int, Snapshot] = {}

    @property
    def _dir(self) -> str:
        return self.paths.snapshot_dir

    def _path(self, snapshot_id: int) -> str:
        return self.paths.snapshot(snapshot_id)

    @property
    def _latest_hint(self) -> str:
        return self.paths.latest_hint

    @property
    def _earliest_hint(self) -> str:
        return self.paths.earliest_hint

    def _read_hint(self, path: str) -> int | None:
        try:
            return int(self.fileio.read_text(path).strip())
        except (FileNotFoundError, ValueError):
            return None

    def list_ids(self) -> list[int]:
        ids = []
        for name in self.fileio.list_names(self._dir):
            m = self._name.match(name)
            if m:
                ids.append(int(m.group(1)))
        return sorted(ids)

    def exists(self, snapshot_id: int) -> bool:
        return snapshot_id in self._cache or self.fileio.exists(self._path(snapshot_id))

    def latest_id(self) -> int | None:
        hint = self._read_hint(self._latest_hint)
        if hint is not None and self.exists(hint) and not self.exists(hint + 1):
            return hint
        ids = self.list_ids()
        return ids[-1] if ids else None

    def earliest_id(self) -> int | None:
        hint = self._read_hint(self._earliest_hint)
        if hint is not None and self.exists(hint) and not self.exists(hint - 1):
            return hint
        ids = self.list_ids()
        return ids[0] if ids else None

    def get(self, snapshot_id: int) -> Snapshot:
        snap = self._cache.get(snapshot_id)
        if snap is not None:
            return snap
        path = self._path(snapshot_id)
        try:
            snap = read_metadata(self.fileio, path, f"{self._what} file", Snapshot.from_json)
        except FileNotFoundError:
            earliest, latest = self.earliest_id(), self.latest_id()
            raise SnapshotNotFoundError(
                f"{self._what} {snapshot_id} does not exist in table {self.paths.root} "
                f"(available: {earliest}..{latest})"
                if latest
                else f"{self._what} {snapshot_id} does not exist: table {self.paths.root} has no {self._what}s"
            ) from None
        self._cache[snapshot_id] = snap  # snapshot files are immutable once created
        return snap

    def get_unless_expired(self, snapshot_id: int) -> Snapshot | None:
        """Snapshot ``snapshot_id``, or None when it has expired. Only an absent file with no older
        snapshot left counts as expired (expiry removes the oldest first); an absent file above an
        existing one (a rollback, a hand deletion) raises ``SnapshotNotFoundError``, and a file that
        cannot be read (a transient storage error, a corrupt file) raises that error: a caller
        checking for conflicts must not take either for "nothing left to compare with"."""
        try:
            return self.get(snapshot_id)
        except SnapshotNotFoundError:
            ids = self.list_ids()
            if ids and ids[0] > snapshot_id:
                return None
            raise

    def read_fresh(self, snapshot_id: int) -> Snapshot | None:
        """``snapshot-N`` as storage holds it now (never the cache), or None if it does not exist."""
        try:
            return read_metadata(self.fileio, self._path(snapshot_id), f"{self._what} file", Snapshot.from_json)
        except FileNotFoundError:
            return None

    def latest(self) -> Snapshot | None:
        sid = self.latest_id()
        return self.get(sid) if sid is not None else None

    def snapshots(self) -> Iterator[Snapshot]:
        for sid in self.list_ids():
            try:
                yield self.get(sid)
            except SnapshotNotFoundError:
                continue  # expired while we were listing

    def find_commit(
        self,
        *,
        commit_user: str,
        identifier: int | None = None,
        kind: CommitKind | None = None,
        newer_than: int = 0,
        up_to: int | None = None,
    ) -> Snapshot | None:
        """The newest snapshot in (``newer_than``, ``up_to``] (default: up to the latest)
        committed by ``commit_user`` (with ``identifier`` and ``kind`` when given), or None.

        Newest first, one snapshot file at a time, so a retry right after its commit stops at
        once. Identifiers increase per commit user (Paimon's convention, as Java's
        ``FileStoreCommitImpl.filterCommitted``), so with ``identifier`` the walk stops at the
        user's first snapshot with a smaller one; otherwise at the oldest snapshot still kept."""
        sid = (self.latest_id() or 0) if up_to is None else up_to
        while sid > newer_than:
            try:
                snap = self.get(sid)
            except SnapshotNotFoundError:
                break  # expired: every older snapshot is gone too
            if snap.commit_user == commit_user:
                if identifier is None:
                    return snap
                if snap.commit_identifier == identifier and (kind is None or snap.commit_kind == kind):
                    return snap
                if snap.commit_identifier < identifier:
                    break  # the user's earlier commits all have smaller identifiers
            sid -= 1
        return None

    def at_or_before_time(self, timestamp_millis: int) -> Snapshot:
        """The newest snapshot committed at or before ``timestamp_millis`` (time travel)."""
        best = None
        for snap in self.snapshots():
            if snap.time_millis <= timestamp_millis:
                best = snap
            else:
                break
        if best is None:
            raise SnapshotNotFoundError(
                f"no snapshot of table {self.paths.root} was committed at or before {timestamp_millis} ms"
            )
        return best

    def try_create(self, snapshot: Snapshot, *, hint: bool = True) -> bool:
        """Exclusively create ``snapshot-N``; False if another committer got there first.
        ``hint=False``: leave ``LATEST`` to the caller (a commit moves it once the new snapshot's
        parent is confirmed, see :mod:`lake_core.snapshot.publish`)."""
        ok = self.fileio.try_create(self._path(snapshot.id), snapshot.to_json().encode("utf-8"))
        if ok:
            self._cache[snapshot.id] = snapshot
            if hint:
                self.commit_latest_hint(snapshot.id)
        return ok

    def commit_latest_hint(self, snapshot_id: int) -> None:
        for _ in range(3):  # best effort, like Java's commitLatestHint
            try:
                self.fileio.overwrite_hint(self._latest_hint, str(snapshot_id))
                return
            except OSError:
                continue

    def commit_earliest_hint(self, snapshot_id: int) -> None:
        self.fileio.overwrite_hint(self._earliest_hint, str(snapshot_id))

    def forget(self, snapshot_id: int) -> None:
        self._cache.pop(snapshot_id, None)

    def forget_all(self) -> None:
        """Drop every cached snapshot: after a rollback, ids may name other snapshots than before."""
        self._cache.clear()
