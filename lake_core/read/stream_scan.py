"""The builder-level streaming scan a downstream consumer polls (Java ``StreamTableScan``,
``DataTableStreamScan`` with the default ``scan.mode`` = ``latest-full``).

The first :meth:`StreamScan.plan` is the full state of the latest snapshot, every row ``+I``;
each later plan is the changes of the next snapshot that has any (Java's follow-up scanners:
the delta of APPEND snapshots for ``changelog-producer`` = ``none``, else the snapshot's changelog;
COMPACT snapshots without changes and OVERWRITE snapshots are passed over, as Java without
``streaming-read-overwrite``), or an empty plan when no new
snapshot exists. :meth:`checkpoint` is the next snapshot id to read; :meth:`restore` resumes there.
A position whose changelog has expired is refused (``ChangelogNotFoundError``), never skipped.
Where a scan with a consumer id starts is decided before it is built
(``lake_core.maintenance.consumer_resume``: an expired consumer is an error, not a fresh start).
Rows come in the scanning table's current schema however old the snapshot a consumer resumes at,
as Java's stream restored from a consumer (only Java's ``scan.mode`` = ``from-snapshot`` travels to
the start snapshot's schema).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from lake_core.read.incremental import ChangeScan, follow_up_mode, snapshot_changes
from lake_core.read.predicate import Predicate
from lake_core.read.scan import Plan, TableScan
from lake_core.snapshot.changelog_manager import ChangelogNotFoundError

if TYPE_CHECKING:
    from lake_core.store import FileStore


class StreamScan:
    def __init__(
        self,
        store: FileStore,
        predicate: Predicate | None = None,
        *,
        on_checkpoint_complete: Callable[[int], None] | None = None,
    ):
        self.store = store
        self.predicate = predicate
        self.mode = follow_up_mode(store)
        self._next: int | None = None
        self._on_checkpoint_complete = on_checkpoint_complete

    def plan(self) -> Plan:
        """The next batch of rows to read (``new_read().to_arrow(plan.splits())``), each with
        ``_ROW_KIND``; empty when there is nothing new."""
        if self._next is None:
            latest = self.store.snapshot_manager.latest()
            if latest is None:
                return Plan([])  # no snapshot yet: the first one will be read in full
            splits = [replace(s, row_kind=True) for s in TableScan(self.store, latest, self.predicate).splits()]
            self._next = latest.id + 1
            return Plan(splits)
        changes = ChangeScan(self.store, range(0), self.mode, self.predicate)
        while True:
            latest_id = self.store.changelog_manager.latest_id()
            if latest_id is None or self._next > latest_id:
                return Plan([])
            earliest = self.store.changelog_manager.earliest_id()
            if earliest is not None and self._next < earliest:
                raise ChangelogNotFoundError(
                    f"stream scan of {self.store.identifier}: snapshot {self._next} (the next to read) has expired; "
                    f"the readable changelogs are {earliest}..{latest_id}. Retain snapshots or changelogs longer, or "
                    "read with a consumer id so that unread snapshots are kept"
                )
            snapshot = snapshot_changes(self.store, self._next, self.mode)
            if changes.has_changes(snapshot):
                self._next += 1
                return Plan(changes.snapshot_splits(snapshot))
            self._next += 1  # nothing to read in it (e.g. a COMPACT snapshot of a table without producer)

    def checkpoint(self) -> int | None:
        """The next snapshot id to read (None before the first plan)."""
        return self._next

    def restore(self, next_snapshot_id: int | None) -> None:
        """Resume at ``next_snapshot_id`` (a :meth:`checkpoint`); None starts over with a full plan."""
        self._next = None if next_snapshot_id is None else int(next_snapshot_id)

    def notify_checkpoint_complete(self, next_snapshot_id: int | None) -> None:
        """The consumer has durably processed everything before ``next_snapshot_id``: with a
        consumer id, its ``consumer-<id>`` file records it (Java ``notifyCheckpointComplete``), so
        expiry keeps the snapshots it has yet to read."""
        if next_snapshot_id is not None and self._on_checkpoint_complete is not None:
            self._on_checkpoint_complete(int(next_snapshot_id))
