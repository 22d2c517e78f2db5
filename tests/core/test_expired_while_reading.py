"""A reader without a lease whose snapshot is expired part-way through gets one clear error,
``SnapshotExpiredError`` (a ``CorruptFileError``) saying so, whichever file it lost first: a data
file, a deletion-vector index file or a manifest. A file deleted by hand from a live snapshot is
still reported as damage, not as expiry."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from lake_core import Catalog
from lake_core.errors import CorruptFileError, SnapshotExpiredError

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])


def _rows(keys, v):
    return pa.table({"k": list(keys), "v": [v] * len(keys)}, schema=SCHEMA)


def _table(storage, options):
    uri, opts = storage
    catalog = Catalog(uri, storage_options=opts)
    catalog.create_database("db")
    t = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["k"], options={"bucket": "1", **options})
    t.write_arrow(_rows(range(100), "a"))
    t.maintenance.compact(full=True)
    t.write_arrow(_rows(range(0, 100, 3), "b"))  # with vectors: inline compaction marks the old rows
    return catalog, t


def _replace_and_expire(t):
    t.write_arrow(_rows(range(100), "c"))
    t.maintenance.compact(full=True)
    t.maintenance.expire_snapshots(retain_min=1, retain_max=1)


@pytest.mark.parametrize("options", [{"deletion-vectors.enabled": "true"}, {}], ids=["dv", "merge-on-read"])
def test_a_read_whose_snapshot_was_expired_says_so(storage, options):
    catalog, t = _table(storage, options)
    snap = t.latest_snapshot()
    rb = t.new_read_builder()
    splits = rb.new_scan(snapshot=snap).plan().splits()
    if options:
        assert any(s.dv_index for s in splits)  # the read will need an index file
    _replace_and_expire(t)
    with pytest.raises(SnapshotExpiredError) as err:  # the files are gone between plan and read
        rb.new_read().to_arrow(splits)
    assert f"snapshot {snap.id} of db.t was expired (or rolled back) while it was read" in str(err.value)
    assert "lease" in str(err.value) and err.value.path
    # planning a snapshot object whose manifests went meanwhile says the same
    fresh = catalog.get_table("db.t")
    with pytest.raises(SnapshotExpiredError):
        fresh.new_read_builder().new_scan(snapshot=snap).plan().splits()
    assert sorted(r["v"] for r in fresh.to_arrow().to_pylist()) == ["c"] * 100  # the table is fine


def test_a_file_deleted_by_hand_is_damage_not_expiry(warehouse, warehouse_path):
    catalog, t = _table((warehouse, {}), {"deletion-vectors.enabled": "true"})
    t.create_tag("keep")
    split = next(s for s in t.new_read_builder().new_scan().plan().splits() if s.dv_index)
    index = next(iter(warehouse_path.rglob(split.dv_index[0].file_name)))
    os.remove(index)
    for read in (lambda: t.to_arrow(), lambda: t.to_arrow(tag="keep")):
        with pytest.raises(CorruptFileError) as err:
            read()
        assert not isinstance(err.value, SnapshotExpiredError)
        assert split.dv_index[0].file_name in str(err.value) and "does not exist" in str(err.value)
