"""Issue 23, item 10: a commit in flight while ``rollback_to`` runs never publishes a snapshot
whose parent is gone.

The writer reads snapshot 6 as the latest and is held just before it creates ``snapshot-7`` (a
FileIO wrapper blocks that create); meanwhile ``rollback_to(3)`` (a snapshot id or a tag) removes
snapshots 4-6 and their files. The writer used to create snapshot 7 and report success, after which
every read and write of the table failed with a raw ``FileNotFoundError``. Now it withdraws
snapshot 7: a builder commit raises ``RollbackConflictError``, ``write_arrow`` writes again on top of
the rolled-back table, a compaction finds its inputs gone.
"""

from __future__ import annotations

import datetime as dt
import threading

import pytest
from reliability.faultio import FaultyFileIO, Pause, hooks

from lake_core import Catalog
from lake_core.errors import (
    CommitConflictError,
    CommitOutcomeUnknownError,
    MaintenanceAbortedError,
    RollbackConflictError,
    StalePlanError,
)
from lake_core.io.fileio import FileIO

from .helpers import as_dict, kv, new_table

TARGETS = [{"snapshot_id": 3}, {"tag": "three"}]
IDS = ["snapshot-id", "tag"]


def _history(uri: str):
    """Snapshots 1-6, one key each; tag ``three`` on snapshot 3. Returns (table, rows at 3)."""
    t = new_table(uri, options={"write-only": "true"})
    for i in range(6):
        t.write_arrow(kv([i], [f"v{i}"]))
    t.create_tag("three", 3)
    return t, {r["k"]: r["v"] for r in t.to_arrow(snapshot_id=3).to_pylist()}


def _held(uri: str, *pauses):
    return Catalog(uri, fileio=FaultyFileIO(FileIO(uri), before=hooks(*pauses))).get_table("db.t")


def _in_thread(job):
    """Run ``job`` in a thread; returns a function that joins it and gives its result or error."""
    out = {}

    def run():
        try:
            out["result"] = job()
        except BaseException as e:  # noqa: BLE001 - handed to the test
            out["error"] = e

    th = threading.Thread(target=run)
    th.start()

    def join():
        th.join(60)
        assert not th.is_alive()
        if "error" in out:
            raise out["error"]
        return out["result"]

    return join


def _assert_rolled_back(uri: str, want: dict) -> None:
    t = Catalog(uri).get_table("db.t")
    assert t.snapshot_manager.list_ids() == [1, 2, 3]
    assert t.latest_snapshot().id == 3 and as_dict(t) == want


@pytest.mark.parametrize("target", TARGETS, ids=IDS)
def test_builder_commit_held_across_a_rollback_withdraws_its_snapshot(warehouse, target):
    t, want = _history(warehouse)
    pause = Pause("create", "/snapshot/snapshot-7")
    writer = _held(warehouse, pause)
    wb = writer.new_batch_write_builder()
    w = wb.new_write()
    w.write_arrow(kv([100], ["late"]))
    messages = w.prepare_commit()
    join = _in_thread(lambda: wb.new_commit().commit(messages))
    pause.wait_reached()  # the writer read snapshot 6 and is about to create snapshot 7
    t.maintenance.rollback_to(**target)
    pause.release()
    with pytest.raises(
        RollbackConflictError,
        match=r"commit to db\.t: snapshot 6, on which this commit was built, "
        r"was removed .* snapshot 7 .*nothing was committed",
    ) as err:
        join()
    assert isinstance(err.value, StalePlanError)  # write_arrow writes again after it
    _assert_rolled_back(warehouse, want)
    # The withdrawn attempt left no metadata behind; its data file is the caller's to drop, as after
    # any refused builder commit.
    t = Catalog(warehouse).get_table("db.t")
    left = t.maintenance.remove_orphan_files(older_than=dt.timedelta(0), force=True, dry_run=True).files
    assert [p.rsplit("/", 1)[-1] for p in left] == [f.file_name for m in messages for f in m.new_files]
    t.write_arrow(kv([7], ["next"]))  # the table goes on from snapshot 3
    assert t.latest_snapshot().id == 4 and as_dict(t) == {**want, 7: "next"}


@pytest.mark.parametrize("target", TARGETS, ids=IDS)
def test_write_arrow_held_across_a_rollback_writes_again_on_the_rolled_back_table(warehouse, target):
    t, want = _history(warehouse)
    pause = Pause("create", "/snapshot/snapshot-7")
    writer = _held(warehouse, pause)
    join = _in_thread(lambda: writer.write_arrow(kv([100], ["late"])))
    pause.wait_reached()
    t.maintenance.rollback_to(**target)
    pause.release()
    snap = join()
    assert snap.id == 4
    t = Catalog(warehouse).get_table("db.t")
    assert t.snapshot_manager.list_ids() == [1, 2, 3, 4] and as_dict(t) == {**want, 100: "late"}


@pytest.mark.parametrize("target", TARGETS, ids=IDS)
def test_compaction_held_across_a_rollback_lands_nothing(warehouse, target):
    t, want = _history(warehouse)
    pause = Pause("create", "/snapshot/snapshot-7")
    compactor = _held(warehouse, pause)
    join = _in_thread(lambda: compactor.maintenance.compact(full=True, parallelism=1))
    pause.wait_reached()
    t.maintenance.rollback_to(**target)
    pause.release()
    try:
        join()  # its inputs are gone from the rolled-back table: skipped as stale
    except CommitConflictError:
        pass
    _assert_rolled_back(warehouse, want)


@pytest.mark.parametrize("target", TARGETS, ids=IDS)
def test_manifest_compaction_held_across_a_rollback_lands_on_the_rolled_back_table(warehouse, target):
    t, want = _history(warehouse)
    pause = Pause("create", "/snapshot/snapshot-7")
    compactor = _held(warehouse, pause)
    join = _in_thread(lambda: compactor.maintenance.compact_manifest())
    pause.wait_reached()
    t.maintenance.rollback_to(**target)
    pause.release()
    assert join().snapshot_id == 4
    t = Catalog(warehouse).get_table("db.t")
    assert t.latest_snapshot().id == 4 and as_dict(t) == want


def test_a_commit_built_on_a_withdrawn_snapshot_keeps_every_file(warehouse):
    """The rollback removes snapshots 6..4 after the writer created snapshot 7, so it sees 7 and aborts
    without deleting any file. Before the writer confirms 7's parent, another commit lands snapshot 8
    on top of 7. The writer then finds snapshot 6 gone and withdraws 7; as snapshot 8 holds its rows,
    it reports an open outcome (no conflict, which would make its caller delete the files) and the
    table reads every row."""
    t, _want = _history(warehouse)
    everything = as_dict(t)
    created = Pause("create", "/snapshot/snapshot-7")
    confirming = Pause("read", "/snapshot/snapshot-6", armed=False)  # the writer re-reads its parent

    def arm_after_create(kind, path):
        if kind == "create" and path.endswith("/snapshot/snapshot-7"):
            confirming.arm()

    writer = _held(warehouse, created, arm_after_create, confirming)
    # the rollback is held as it is about to delete snapshot 6 (it listed 4-6 already)
    deleting = Pause("delete", "/snapshot/snapshot-6")
    rollback = _held(warehouse, deleting)
    join_writer = _in_thread(lambda: writer.write_arrow(kv([100], ["late"])))
    created.wait_reached()
    join_rollback = _in_thread(lambda: rollback.maintenance.rollback_to(snapshot_id=3))
    deleting.wait_reached()
    created.release()
    confirming.wait_reached()  # snapshot 7 exists; the writer is about to check snapshot 6
    deleting.release()
    with pytest.raises(MaintenanceAbortedError, match=r"snapshot\(s\) \[7\] were committed during the rollback"):
        join_rollback()
    other = Catalog(warehouse).get_table("db.t")
    other.fileio.delete(other.paths.latest_hint)  # a lost hint (best effort): the listing shows snapshot 7
    assert other.write_arrow(kv([200], ["on top"])).id == 8
    confirming.release()
    with pytest.raises(CommitOutcomeUnknownError, match=r"snapshot 8 .* none was removed"):
        join_writer()
    t = Catalog(warehouse).get_table("db.t")
    assert t.latest_snapshot().id == 8
    assert as_dict(t) == {**everything, 100: "late", 200: "on top"}
