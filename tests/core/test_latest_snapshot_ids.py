"""Many tables' LATEST hints read a few ahead of need (the lake-wide sensor ticks on S3): the same
ids as one read after another, concurrently on object stores, never far ahead of the reader, and
sequential in the caller's thread on local disk."""

from __future__ import annotations

import threading

import pyarrow as pa
import pytest

from lake_core import Catalog, LatestSnapshotIds, errors

SCHEMA = pa.schema([("id", pa.int64())])


def _lake(uri: str, storage_options: dict, n: int) -> tuple[Catalog, list[str]]:
    cat = Catalog(uri, storage_options)
    cat.create_database("db")
    names = [f"db.t{i}" for i in range(n)]
    for i, name in enumerate(names):
        t = cat.create_table(name, SCHEMA, primary_keys=["id"], options={"bucket": "1"})
        for _ in range(i % 3):  # 0, 1 or 2 snapshots
            t.write_arrow(pa.table({"id": [i]}, schema=SCHEMA))
    return cat, names


def test_the_ids_are_those_read_one_by_one(storage):
    uri, options = storage
    cat, names = _lake(uri, options, 7)
    order = [*names[3:], *names[:3], "db.missing"]
    with cat.latest_snapshot_ids(order) as hints:
        got = {name: hints.get(name) for name in order}
    assert got == {name: cat.latest_snapshot_id(name) for name in order}
    assert got["db.missing"] is None and got["db.t2"] == 2 and got["db.t0"] is None


def test_local_reads_happen_when_asked_in_the_callers_thread(warehouse):
    cat, names = _lake(warehouse, {}, 3)
    threads = set()
    real = cat.latest_snapshot_id

    def spy(name):
        threads.add(threading.current_thread())
        return real(name)

    cat.latest_snapshot_id = spy  # type: ignore[method-assign]
    with cat.latest_snapshot_ids(names) as hints:
        assert [hints.get(n) for n in names] == [None, 1, 2]
    assert threads == {threading.current_thread()}


def test_reads_overlap_and_stay_close_ahead_of_the_reader():
    started: list[str] = []
    two_at_once = threading.Barrier(2, timeout=10)  # a read waits for another one running with it

    def read(name: str) -> int:
        started.append(name)
        two_at_once.wait()
        return int(name[1:])

    order = [f"t{i}" for i in range(40)]
    with LatestSnapshotIds(read, order, concurrency=2) as hints:
        assert hints.get("t0") == 0 and hints.get("t1") == 1
        assert len(started) <= 2 + 2 * 2  # the two asked for, and at most 2 x concurrency ahead
    assert len(started) < len(order)  # leaving dropped the reads not started


def test_a_failed_read_raises_for_its_table_only():
    def read(name: str) -> int:
        if name == "bad":
            raise OSError("unreachable")
        return 1

    with LatestSnapshotIds(read, ["a", "bad", "c"], concurrency=4) as hints:
        assert hints.get("a") == 1
        with pytest.raises(OSError, match="unreachable"):
            hints.get("bad")
        assert hints.get("c") == 1 and hints.get("unlisted") == 1 and hints.get("a") == 1


def test_concurrency_is_checked(warehouse):
    for bad in (0, -1, True, 2.5):
        with pytest.raises(errors.InvalidOptionError, match="concurrency"):
            Catalog(warehouse).latest_snapshot_ids([], concurrency=bad)  # type: ignore[arg-type]
