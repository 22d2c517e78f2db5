"""remove_orphan_files racing expire_snapshots: a snapshot that expiry deletes and then writes back
for a lease taken meanwhile keeps every file, so the leased read returns every row.

The interleaving is real: a FileIO wrapper pauses the expiry at the storage operation where it
writes ``snapshot-1`` back, orphan removal runs in another thread meanwhile, and the expiry goes on
once orphan removal has finished or is waiting for ``snapshot/.expire-lock``.
"""

from __future__ import annotations

import datetime as dt
import os
import threading
import time

import pytest
from reliability.faultio import FaultyFileIO

from lake_core import Catalog
from lake_core.io.fileio import FileIO
from lake_core.maintenance import orphans as orphans_mod

from .helpers import Workload, make_table, state

WAIT_S = 60


def _is(path: str, name: str) -> bool:
    return path.rstrip("/").rsplit("/", 1)[-1] == name


class _Interleaving:
    """``expire`` paused where it writes ``restored`` back; ``pin`` (a lease, a consumer) taken just
    before it deletes ``deleted``, so it does write them back; orphan removal run in the pause."""

    def __init__(self, uri: str, so, orphan_kwargs: dict, *, expire, pin, deleted: str, restored: str):
        self.uri, self.so, self.orphan_kwargs = uri, so, orphan_kwargs
        self.expire, self.pin, self.deleted, self.restored = expire, pin, deleted, restored
        self.paused, self.resume, self.at_lock = threading.Event(), threading.Event(), threading.Event()
        self.pinned: list = []
        self.out: dict = {}

    def _catalog(self, before=None) -> Catalog:
        if before is None:
            return Catalog(self.uri, self.so)
        return Catalog(self.uri, self.so, fileio=FaultyFileIO(FileIO(self.uri, self.so), before=before))

    def _expiry_hook(self, kind: str, path: str) -> None:
        if kind == "delete" and _is(path, self.deleted) and not self.pinned:
            self.pinned.append(self.pin(self._catalog().get_table("db.t")))
        elif kind == "create" and _is(path, self.restored) and not self.paused.is_set():
            self.paused.set()  # the files are deleted; their restore waits here
            assert self.resume.wait(WAIT_S), "the test never resumed the expiry"

    def _orphan_hook(self, kind: str, path: str) -> None:
        if kind == "create" and _is(path, ".expire-lock"):
            self.at_lock.set()

    def _run(self, name: str, fn) -> threading.Thread:
        def target():
            try:
                self.out[name] = fn()
            except BaseException as e:  # noqa: BLE001 - reported by the test
                self.out[name] = e

        th = threading.Thread(target=target, name=name)
        th.start()
        return th

    def run(self):
        expiring = self._catalog(self._expiry_hook).get_table("db.t")
        expirer = self._run("expiry", lambda: self.expire(expiring.maintenance))
        assert self.paused.wait(WAIT_S), f"expiry never reached the restore: {self.out}"
        cleaner_table = self._catalog(self._orphan_hook).get_table("db.t")
        cleaner = self._run("orphans", lambda: cleaner_table.maintenance.remove_orphan_files(**self.orphan_kwargs))
        deadline = time.monotonic() + WAIT_S
        while cleaner.is_alive() and not self.at_lock.is_set() and time.monotonic() < deadline:
            time.sleep(0.02)
        self.resume.set()
        for th in (expirer, cleaner):
            th.join(WAIT_S)
            assert not th.is_alive(), f"{th.name} hangs"
        for name in ("expiry", "orphans"):
            assert not isinstance(self.out[name], BaseException), self.out[name]
        assert "restored" in (self.out["expiry"].skipped or ""), self.out["expiry"]
        return self.out


def _snapshot_race(uri: str, so, orphan_kwargs: dict) -> _Interleaving:
    """Expiry of snapshots 1..3; a lease on snapshot 1 taken just before it goes."""
    return _Interleaving(
        uri,
        so,
        orphan_kwargs,
        expire=lambda m: m.expire_snapshots(retain_min=1, older_than=dt.timedelta(0), max_deletes=3),
        pin=lambda t: t.maintenance.acquire_lease(snapshot_id=1, holder="report"),
        deleted="snapshot-1",
        restored="snapshot-1",
    )


def _history(t) -> Workload:
    w = Workload(t, 11).run(8)
    assert t.snapshot_manager.earliest_id() == 1 and t.latest_snapshot().id >= 6
    return w


def _age_everything(t, seconds: float) -> None:
    root = t.fileio._p(t.paths.root)
    stamp = time.time() - seconds
    for d, _dirs, names in os.walk(root):
        for n in names:
            os.utime(os.path.join(d, n), (stamp, stamp))


def _litter(t) -> str:
    path = t.paths.manifest("manifest-litter-0")
    t.fileio.write_bytes(path, b"left by a crashed writer")
    return path


def _check(t, w, out, litter: str) -> None:
    assert t.snapshot_manager.earliest_id() == 1
    # the leased read returns every row, and so does every other snapshot
    assert state(t, snapshot_id=1) == w.models[1]
    for s in t.snapshots():
        assert state(t, snapshot_id=s.id) == w.models[s.id], s.id
    # orphan removal did run: the real litter is gone
    assert out["orphans"].deleted_files >= 1 and litter in out["orphans"].files
    assert not t.fileio.exists(litter)


def test_orphan_removal_keeps_the_files_of_snapshots_expiry_restores_for_a_lease(warehouse):
    t = make_table(warehouse)
    w = _history(t)
    litter = _litter(t)
    _age_everything(t, 3 * 86400)  # expiring snapshots are old: the one-day floor does not protect them
    out = _snapshot_race(warehouse, None, {}).run()  # orphan removal with its defaults
    _check(Catalog(warehouse).get_table("db.t"), w, out, litter)


@pytest.mark.s3
def test_orphan_removal_keeps_restored_snapshots_on_s3(s3_warehouse):
    t = make_table(s3_warehouse.uri, storage_options=s3_warehouse.storage_options)
    w = _history(t)
    litter = _litter(t)
    time.sleep(1.1)  # object times cannot be set on S3: a one-second floor makes every file old
    out = _snapshot_race(
        s3_warehouse.uri, s3_warehouse.storage_options, {"older_than": dt.timedelta(seconds=1), "force": True}
    ).run()
    _check(Catalog(s3_warehouse.uri, s3_warehouse.storage_options).get_table("db.t"), w, out, litter)


def test_orphan_removal_keeps_the_files_of_changelogs_expiry_restores_for_a_consumer(warehouse):
    # The same race through the decoupled lifecycle: expire_changelogs deletes changelog-1..3, a
    # stream consumer pins changelog 1 meanwhile, the changelogs are written back.
    from lake_core.maintenance.consumers import ConsumerManager

    from .race_workers import read_changelog

    t = make_table(
        warehouse,
        **{"changelog-producer": "input", "changelog.num-retained.min": "30", "changelog.num-retained.max": "40"},
    )
    Workload(t, 12).run(8)
    t.maintenance.expire_snapshots(retain_min=1, older_than=dt.timedelta(0))
    cm = t.changelog_manager
    assert cm.long_lived.list_ids()[:3] == [1, 2, 3]
    litter = _litter(t)
    _age_everything(t, 3 * 86400)
    out = _Interleaving(
        warehouse,
        None,
        {},
        expire=lambda m: m.expire_changelogs(retain_min=1, older_than=dt.timedelta(0), max_deletes=3),
        pin=lambda t: ConsumerManager(t).reset("stream", 1),
        deleted="changelog-1",
        restored="changelog-1",
    ).run()
    t = Catalog(warehouse).get_table("db.t")
    cm = t.changelog_manager
    assert cm.earliest_id() == 1
    for n in range(1, cm.latest_id() + 1):  # the consumer's changelogs read completely
        snap = cm.changelog(n)
        assert read_changelog(t, snap) == (snap.changelog_record_count or 0), n
    assert litter in out["orphans"].files and not t.fileio.exists(litter)


# -- the lock never blocks orphan removal for good -------------------------------------------------
def _leave_lock(t, *, host: str, pid: int, expires_in_s: float) -> bytes:
    import json

    body = json.dumps({"owner": "crashed", "expires": time.time() + expires_in_s, "host": host, "pid": pid}).encode(
        "utf-8"
    )
    t.fileio.write_bytes(t.paths.expire_lock, body)
    return body


def _dead_pid() -> int:
    import subprocess
    import sys

    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def _aged_table_with_litter(warehouse):
    t = make_table(warehouse)
    w = Workload(t, 3).run(4)
    litter = _litter(t)
    _age_everything(t, 3 * 86400)
    return t, w, litter


@pytest.mark.parametrize("how", ["process gone on this host", "TTL passed on another host"])
def test_orphan_removal_takes_over_a_crashed_expirers_lock(warehouse, how):
    import socket

    t, w, litter = _aged_table_with_litter(warehouse)
    if how == "process gone on this host":
        _leave_lock(t, host=socket.gethostname(), pid=_dead_pid(), expires_in_s=600)
    else:
        _leave_lock(t, host="another-host", pid=1, expires_in_s=-1)
    started = time.monotonic()
    r = t.maintenance.remove_orphan_files()
    assert time.monotonic() - started < 30  # taken over at once, not after the wait
    assert r.files == (litter,) and not t.fileio.exists(litter)
    assert not t.fileio.exists(t.paths.expire_lock)  # released after use
    for s in t.snapshots():
        assert state(t, snapshot_id=s.id) == w.models[s.id]


def test_orphan_removal_skips_when_a_live_holder_outlasts_the_wait(warehouse, monkeypatch):
    t, w, litter = _aged_table_with_litter(warehouse)
    body = _leave_lock(t, host="another-host", pid=1, expires_in_s=600)  # alive as far as anyone can tell
    monkeypatch.setattr(orphans_mod, "LOCK_WAIT_S", 0.3)
    r = t.maintenance.remove_orphan_files()
    assert r.deleted_files == 0 and "snapshot/.expire-lock" in r.skipped and "run again" in r.skipped
    assert t.fileio.exists(litter) and t.fileio.read_bytes(t.paths.expire_lock) == body
    # the dry run takes no lock: it reports the litter while the lock is held
    assert t.maintenance.remove_orphan_files(dry_run=True).files == (litter,)
