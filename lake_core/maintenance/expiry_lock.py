"""One expiry at a time per table: ``snapshot/.expire-lock``, created exclusively.

Two expiries racing each other could otherwise each delete part of a range and one of them, seeing
a lease appear, write back snapshots whose files the other is deleting. Snapshot and changelog
expiry take this lock for their destructive phase; a run that finds it held skips (the holder does
the work) and says so. A lock older than its TTL (a crashed holder) is taken over.
"""
from __future__ import annotations

import json
import time
import uuid
from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator

if TYPE_CHECKING:
    from lake_core.table import FileStoreTable

LOCK_TTL_S = 600.0


def _lock_path(table: "FileStoreTable") -> str:
    return table.paths.expire_lock


@contextmanager
def expiry_lock(table: "FileStoreTable", ttl_s: float = LOCK_TTL_S) -> Iterator[bool]:
    """Yields True while this process holds the lock, False if another expiry holds it."""
    fio, path = table.fileio, _lock_path(table)
    token = uuid.uuid4().hex
    body = json.dumps({"owner": token, "expires": time.time() + ttl_s}).encode("utf-8")
    held = fio.try_create(path, body)
    if not held:
        try:
            stale = json.loads(fio.read_text(path)).get("expires", 0) < time.time()
        except FileNotFoundError:
            stale = True  # released meanwhile
        except ValueError:
            stale = True  # torn write of a crashed holder
        if stale:
            fio.delete(path)
            held = fio.try_create(path, body)
    try:
        yield held
    finally:
        if held:
            try:
                if json.loads(fio.read_text(path)).get("owner") == token:
                    fio.delete(path)
            except (FileNotFoundError, ValueError):
                pass
