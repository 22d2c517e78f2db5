"""One expiry at a time per table: ``snapshot/.expire-lock``, created exclusively.

Two expiries racing each other could otherwise each delete part of a range and one of them, seeing
a lease appear, write back snapshots whose files the other is deleting. Snapshot and changelog
expiry take this lock for their destructive phase; a run that finds it held skips (the holder does
the work) and says so. Tag deletion and rollback take it too, and orphan removal while it reads
which snapshots are retained (while an expiry holds the lock, a snapshot it deleted may still be
written back for a lease). A crashed holder's lock is taken over: at once when the holder ran on
this host and its process is gone (or it is this process and no run of it holds the lock: a
release that failed), else once its expiry has passed. A holder renews that expiry every quarter of
the TTL while it runs, so a long expiry on another host keeps its lock: only a holder that stopped
(crashed, or stalled for most of a TTL) loses it. A takeover first creates
``.expire-lock.takeover-<owner>`` exclusively, so of several processes finding the same dead lock
exactly one replaces it (a plain delete-and-create would let a late one delete the winner's lock).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lake_core.table import FileStoreTable

LOCK_TTL_S = 600.0
RENEW_EVERY = 0.25  # of the TTL: how often a holder pushes its lock's expiry forward
log = logging.getLogger(__name__)
# Who may hold the lock, for the messages of those that find it held.
HOLDERS = "another expiry, tag deletion, rollback or orphan removal"
_HELD: set[str] = set()  # owner tokens of the locks this process holds right now
_HELD_GUARD = threading.Lock()


def _lock_path(table: FileStoreTable) -> str:
    return table.paths.expire_lock


def _holder_is_gone(lock: dict) -> bool:
    """The lock's process ran on this host and no longer exists (a crash, a kill -9), or it is this
    process and no run of it holds the lock any more (its release failed, e.g. storage went away)."""
    if lock.get("host") != socket.gethostname() or not isinstance(lock.get("pid"), int):
        return False
    if lock["pid"] == os.getpid():
        with _HELD_GUARD:
            return lock.get("owner") not in _HELD
    try:
        os.kill(lock["pid"], 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False  # exists, owned by someone else
    return False


def _read_lock(fio, path: str) -> dict | None:
    """The lock's body; None if it is gone; {} if it is unreadable (a torn write of a crashed holder)."""
    try:
        body = json.loads(fio.read_text(path))
        return body if isinstance(body, dict) else {}
    except FileNotFoundError:
        return None
    except ValueError:
        return {}


def _marker(path: str, dead: dict) -> str:
    return f"{path}.takeover-{dead.get('owner', 'torn')}"


def _take_over(fio, path: str, dead: dict, body: bytes, ttl_s: float) -> bool:
    """Replace the dead lock ``dead`` with ours; True if we now hold the lock. Only the holder of
    the takeover marker of ``dead`` may delete ``dead``: nobody else can replace a lock that
    exists, so between our read and our delete it is still ``dead``."""
    marker = _marker(path, dead)
    stamp = json.dumps({"expires": time.time() + ttl_s}).encode("utf-8")
    if not fio.try_create(marker, stamp):
        stuck = _read_lock(fio, marker)  # a taker that crashed mid-takeover leaves its marker
        if stuck is None or stuck.get("expires", 0) >= time.time():
            return False
        fio.delete(marker)
        if not fio.try_create(marker, stamp):
            return False
    current = _read_lock(fio, path)
    if current == dead:
        fio.delete(path)
    if (current == dead or current is None) and fio.try_create(path, body):
        return True  # the marker goes when we release, so no late taker of ``dead`` deletes ours
    fio.delete(marker)  # someone else holds the lock now
    return False


def _body(token: str, ttl_s: float) -> bytes:
    return json.dumps(
        {"owner": token, "expires": time.time() + ttl_s, "host": socket.gethostname(), "pid": os.getpid()}
    ).encode("utf-8")


class _Renewal:
    """Pushes the lock's expiry forward every ``RENEW_EVERY`` of the TTL, in a thread, until
    stopped. A lock that is no longer ours (taken over after a stall) is left alone; a failed
    renewal is tried again at the next beat, three of them before the lock could expire."""

    def __init__(self, fio, path: str, token: str, ttl_s: float) -> None:
        self._fio, self._path, self._token, self._ttl_s = fio, path, token, ttl_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="expiry-lock-renewal", daemon=True)
        self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(self._ttl_s * RENEW_EVERY):
            try:
                lock = _read_lock(self._fio, self._path)
                if not lock or lock.get("owner") != self._token:
                    return
                self._fio.write_bytes(self._path, _body(self._token, self._ttl_s))  # replaced whole
            except Exception as e:  # noqa: BLE001 - storage trouble: the next beat tries again
                log.warning("could not renew %s: %s", self._path, e)

    def stop(self) -> None:
        """Stop and wait: no renewal may write the lock again once it is released."""
        self._stop.set()
        self._thread.join()


@contextmanager
def expiry_lock(table: FileStoreTable, ttl_s: float = LOCK_TTL_S) -> Iterator[bool]:
    """Yields True while this process holds the lock (renewing it), False if another run holds it."""
    fio, path = table.fileio, _lock_path(table)
    token = uuid.uuid4().hex
    body = _body(token, ttl_s)
    with _HELD_GUARD:
        _HELD.add(token)  # before the lock exists: no thread of this process may take it as left over
    try:
        held = fio.try_create(path, body)
        replaced = None
        if not held:
            lock = _read_lock(fio, path)
            if lock is None:
                held = fio.try_create(path, body)  # released meanwhile
            elif lock.get("expires", 0) < time.time() or _holder_is_gone(lock):
                held = _take_over(fio, path, lock, body, ttl_s)
                replaced = lock
        renewal = _Renewal(fio, path, token, ttl_s) if held else None
        try:
            yield held
        finally:
            if renewal is not None:
                renewal.stop()
            if held:
                lock = _read_lock(fio, path)
                if lock and lock.get("owner") == token:
                    fio.delete(path)
                if replaced is not None:  # kept until now so no late taker of the dead lock deletes ours
                    fio.delete(_marker(path, replaced))
    finally:
        with _HELD_GUARD:
            _HELD.discard(token)  # a lock left behind now (a failed release) is this process's to take over


@contextmanager
def expiry_lock_waiting(table: FileStoreTable, *, wait_s: float, ttl_s: float = LOCK_TTL_S) -> Iterator[bool]:
    """:func:`expiry_lock`, asked for again until it is held or ``wait_s`` has passed (then yields
    False). Each attempt applies the takeover rules, so a crashed holder's lock is taken over as
    soon as they allow: a wait longer than ``ttl_s`` outlasts any crashed holder."""
    deadline = time.monotonic() + wait_s
    pause = 0.05
    while True:
        with expiry_lock(table, ttl_s) as held:
            if held or time.monotonic() >= deadline:
                yield held
                return
        time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
        pause = min(pause * 2, 2.0)  # a short expiry is waited for briefly, a long one polled gently
