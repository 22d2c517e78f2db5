"""Paimon consumer files (``consumer/consumer-<id>``, Java ``ConsumerManager``) and reader leases.

A consumer file holds ``{"nextSnapshot" : N}``: the consumer still needs snapshot ``N`` and every
later one, so snapshot expiry stops before ``N`` (Java ``ExpireSnapshotsImpl`` takes the minimum
over all consumer files). ``consumer.expiration-time`` removes consumer files not updated for that
long, so an abandoned consumer does not pin the table forever. Before removing such a file, the
expiry records it in ``consumer/.expired-<id>`` (its ``nextSnapshot`` and when and why it went), so
a stream consumer that comes back later is told that it lost its position instead of silently
starting over (:mod:`lake_core.maintenance.consumer_resume`). Java lists consumers by the
``consumer-`` prefix, so it never reads that record; Java's own consumer expiry writes none.

A *lease* is a consumer file written by a batch reader for the snapshot it is about to read. Its
id is ``lease-<holder>-<expiry millis>-<random>``: the expiry time rides in the name so that Java
(which only knows ``nextSnapshot``) reads the file unchanged and honours it, while lake_core also
ignores and removes leases whose holder crashed once their TTL has passed.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import math
import re
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lake_core.errors import (
    CorruptFileError,
    LeaseError,
    MaintenanceAbortedError,
    MaintenanceArgumentError,
    SnapshotNotFoundError,
)
from lake_core.names import validate_consumer_id
from lake_core.options.table_options import CONSUMER_EXPIRATION_TIME

if TYPE_CHECKING:
    from lake_core.snapshot.snapshot import Snapshot
    from lake_core.table import FileStoreTable

_PREFIX = "consumer-"
_LEASE = re.compile(r"^lease-(?P<holder>.+)-(?P<expires>\d{13})-(?P<rand>[0-9a-f]{8})$")


@dataclass(frozen=True)
class Consumer:
    consumer_id: str
    next_snapshot: int
    modified_s: float | None = None  # file modification time (consumer.expiration-time)
    lease_expires_ms: int | None = None  # leases only

    def is_dead_lease(self, now_ms: int) -> bool:
        return self.lease_expires_ms is not None and self.lease_expires_ms <= now_ms


@dataclass(frozen=True)
class ExpiredConsumer:
    """What ``consumer/.expired-<id>`` records of a consumer file removed by ``consumer.expiration-time``."""

    consumer_id: str
    next_snapshot: int
    expired_ms: int  # when the expiry removed it
    modified_ms: int | None  # when its consumer was last updated
    expiration_time: str  # the option's value then


def _consumer_json(next_snapshot: int) -> bytes:
    # Jackson's pretty printer, as Java writes it
    return ('{\n  "nextSnapshot" : %d\n}' % next_snapshot).encode("utf-8")


class ConsumerManager:
    """Reads and writes the consumer files of one table."""

    def __init__(self, table: FileStoreTable):
        self.table = table
        self.fileio = table.fileio
        self.paths = table.paths

    @staticmethod
    def _validate_id(consumer_id: str) -> None:
        validate_consumer_id(consumer_id)

    def consumers(self, *, strict: bool = False) -> list[Consumer]:
        """Every consumer file. ``strict``: an unreadable file raises instead of being skipped
        (maintenance must not under-estimate what is pinned)."""
        out = []
        for full, _size, mtime in self.fileio.list_files_recursive(self.paths.consumer_dir):
            name = full.rstrip("/").rsplit("/", 1)[-1]
            if not name.startswith(_PREFIX) or name.startswith("."):
                continue
            cid = name[len(_PREFIX) :]
            try:
                obj = json.loads(self.fileio.read_text(self.paths.consumer(cid)))
                nxt = int(obj["nextSnapshot"])
            except FileNotFoundError:
                continue  # removed while listing
            except (ValueError, KeyError, TypeError) as e:
                if strict:
                    raise MaintenanceAbortedError(
                        f"consumer file {full} of table {self.table.identifier} is unreadable ({e}); "
                        "fix or delete it before expiring snapshots"
                    ) from None
                continue
            m = _LEASE.match(cid)
            out.append(Consumer(cid, nxt, mtime, int(m.group("expires")) if m else None))
        return out

    def min_next_snapshot(self, *, now_ms: int | None = None, strict: bool = True) -> int | None:
        """The smallest ``nextSnapshot`` over live consumers (dead leases do not count)."""
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        ids = [c.next_snapshot for c in self.consumers(strict=strict) if not c.is_dead_lease(now_ms)]
        return min(ids) if ids else None

    def get(self, consumer_id: str) -> int | None:
        self._validate_id(consumer_id)
        try:
            return int(json.loads(self.fileio.read_text(self.paths.consumer(consumer_id)))["nextSnapshot"])
        except FileNotFoundError:
            return None

    def reset(self, consumer_id: str, next_snapshot: int) -> None:
        """Create or move a consumer (Java ``ConsumerManager.resetConsumer``)."""
        self._validate_id(consumer_id)
        if not isinstance(next_snapshot, int) or next_snapshot < 1:
            raise MaintenanceArgumentError(
                f"nextSnapshot {next_snapshot!r} of consumer {consumer_id!r} on {self.table.identifier} must be "
                "a positive snapshot id"
            )
        self.fileio.write_bytes(self.paths.consumer(consumer_id), _consumer_json(next_snapshot))

    def delete(self, consumer_id: str) -> bool:
        """Remove a consumer on purpose, with the record of its expiry: a stream consumer of this
        id starts anew. False when there was no consumer file."""
        self._validate_id(consumer_id)
        existed = self.fileio.delete(self.paths.consumer(consumer_id))
        if not _LEASE.match(consumer_id):  # leases never leave a record
            self.fileio.delete(self.paths.expired_consumer(consumer_id))
        return existed

    def expired(self, consumer_id: str) -> ExpiredConsumer | None:
        """The record an expiry left of ``consumer-<id>``, or None. It is stale (and ignored by
        readers) while a consumer file of that id exists again."""
        self._validate_id(consumer_id)
        path = self.paths.expired_consumer(consumer_id)
        try:
            obj = json.loads(self.fileio.read_text(path))
            return ExpiredConsumer(
                consumer_id,
                int(obj["nextSnapshot"]),
                int(obj["expiredAt"]),
                None if obj.get("lastModified") is None else int(obj["lastModified"]),
                str(obj.get("expirationTime")),
            )
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError) as e:
            raise CorruptFileError(
                path,
                f"the expiry record {path} of consumer {consumer_id!r} on "
                f"{self.table.identifier} is unreadable ({e}); delete the consumer "
                f"(table.maintenance.consumers.delete({consumer_id!r})) to start it "
                "anew",
            ) from None

    def expire(self, *, now_ms: int | None = None) -> list[str]:
        """Remove consumers idle longer than ``consumer.expiration-time`` (Java
        ``ConsumerManager.expire``) and leases past their TTL; returns the ids removed."""
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        idle_ms = self.table.options.consumer_expiration_time_ms
        raw = self.table.options.text(CONSUMER_EXPIRATION_TIME)
        removed = []
        for c in self.consumers():
            idle = idle_ms is not None and c.modified_s is not None and c.modified_s * 1000 < now_ms - idle_ms
            if not (idle or c.is_dead_lease(now_ms)):
                continue
            if c.lease_expires_ms is None:  # a stream position (a lease is none): record what goes
                self._record_expiry(c, now_ms, raw)
            if self.fileio.delete(self.paths.consumer(c.consumer_id)):
                removed.append(c.consumer_id)
        return removed

    def _record_expiry(self, c: Consumer, now_ms: int, expiration_time: str | None) -> None:
        """Written before the consumer file goes: a crash in between leaves both, and the
        consumer file wins, so no consumer ever loses its position without a record."""
        modified = None if c.modified_s is None else int(c.modified_s * 1000)
        body = {
            "nextSnapshot": c.next_snapshot,
            "expiredAt": now_ms,
            "lastModified": modified,
            "expirationTime": expiration_time,
        }
        self.fileio.write_bytes(self.paths.expired_consumer(c.consumer_id), json.dumps(body).encode("utf-8"))


#: The longest lease: its expiry is written as 13 digits of epoch millis in the consumer id.
MAX_LEASE_TTL = _dt.timedelta(days=3650)


def _ttl_ms(ttl) -> int:
    if isinstance(ttl, _dt.timedelta):
        seconds = ttl.total_seconds()
    elif isinstance(ttl, (int, float)) and not isinstance(ttl, bool):
        seconds = float(ttl)
    else:
        raise MaintenanceArgumentError(f"lease ttl must be a timedelta or a number of seconds, got {ttl!r}")
    shown = f"{seconds:g} s" if math.isfinite(seconds) else str(seconds)
    if not math.isfinite(seconds) or seconds <= 0 or seconds > MAX_LEASE_TTL.total_seconds():
        raise MaintenanceArgumentError(
            f"lease ttl must be a positive duration of at most {MAX_LEASE_TTL.days} days (it bounds how long a "
            f"crashed holder pins a snapshot), got {shown}"
        )
    return max(1, int(seconds * 1000))


@dataclass(frozen=True)
class Lease:
    """A lease held outside a ``with`` block; ``consumer_id`` releases it."""

    consumer_id: str
    snapshot_id: int
    expires_ms: int


def acquire_lease(
    table: FileStoreTable, snapshot_id: int | None = None, *, holder: str, ttl=_dt.timedelta(hours=1)
) -> tuple[Lease, Snapshot]:
    """Pin ``snapshot_id`` (default: the latest) until :func:`release_lease` or the TTL passes.

    Protocol: write the consumer file first, *then* re-check that the snapshot still exists. An
    expiry either saw the consumer file (and keeps the snapshot) or deleted the snapshot file
    before the re-check (and the lease fails here, before anything was read).
    """
    validate_consumer_id(holder)
    ttl_ms = _ttl_ms(ttl)
    if snapshot_id is None:
        latest = table.snapshot_manager.latest_id()
        if latest is None:
            raise LeaseError(f"cannot lease a snapshot of {table.identifier}: it has no snapshots yet")
        snapshot_id = latest
    if not isinstance(snapshot_id, int) or isinstance(snapshot_id, bool) or snapshot_id < 1:
        raise MaintenanceArgumentError(f"snapshot id {snapshot_id!r} of a lease on {table.identifier} is invalid")
    expires = int(time.time() * 1000) + ttl_ms
    cid = f"lease-{holder}-{expires:013d}-{uuid.uuid4().hex[:8]}"
    manager = ConsumerManager(table)
    manager.reset(cid, snapshot_id)
    try:
        table.snapshot_manager.forget(snapshot_id)  # re-check the store, not our cache
        snap = table.snapshot_manager.get(snapshot_id)
    except SnapshotNotFoundError as e:
        manager.delete(cid)
        raise LeaseError(f"cannot lease snapshot {snapshot_id} of {table.identifier}: {e}") from None
    except BaseException:
        manager.delete(cid)
        raise
    return Lease(cid, snapshot_id, expires), snap


def release_lease(table: FileStoreTable, consumer_id: str) -> bool:
    """Remove a lease's consumer file; False when it was already gone (released or expired)."""
    if not _LEASE.match(consumer_id):
        raise MaintenanceArgumentError(
            f"{consumer_id!r} is not a lease of {table.identifier} "
            "(lease ids look like 'lease-<holder>-<expiry millis>-<random>')"
        )
    return ConsumerManager(table).delete(consumer_id)


@contextlib.contextmanager
def lease(
    table: FileStoreTable, snapshot_id: int | None = None, *, holder: str, ttl=_dt.timedelta(hours=1)
) -> Iterator[Snapshot]:
    """Pin ``snapshot_id`` (default: the latest) while the block runs; yields the snapshot
    (:func:`acquire_lease` on entry, :func:`release_lease` on exit)."""
    held, snap = acquire_lease(table, snapshot_id, holder=holder, ttl=ttl)
    try:
        yield snap
    finally:
        ConsumerManager(table).delete(held.consumer_id)
