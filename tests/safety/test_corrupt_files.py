"""Corrupted files are reported by name, never read as truth (issue 8, item 11).

A garbled or truncated snapshot, schema, tag, manifest list, manifest or index manifest gives a
``CorruptFileError`` (a ``FormatError``) whose ``path`` and message name the file. A data file whose
size or row count differs from its manifest entry gives a ``DataFileMismatchError`` with the
expected and actual figures, instead of its rows. Local disk and the S3 test server.
"""

from __future__ import annotations

import dataclasses

import pyarrow as pa
import pytest

from lake_core import errors

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])


def _table(store):
    """A dynamic-bucket primary-key table (so snapshots carry an index manifest) with two commits."""
    cat = store.catalog()
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["k"])
    t.write_arrow(pa.table({"k": list(range(100)), "v": [f"a{i}" for i in range(100)]}, schema=SCHEMA))
    t.write_arrow(pa.table({"k": list(range(50, 150)), "v": [f"b{i}" for i in range(50, 150)]}, schema=SCHEMA))
    t.create_tag("t1", snapshot_id=1)
    return cat, t


def _model() -> dict:
    return {**{i: f"a{i}" for i in range(50)}, **{i: f"b{i}" for i in range(50, 150)}}


def _metadata_file(t, kind: str) -> str:
    snap = t.latest_snapshot()
    if kind == "snapshot":
        return t.paths.snapshot(snap.id)
    if kind == "schema":
        return t.paths.schema(0)
    if kind == "tag":
        return t.paths.tag("t1")
    if kind == "manifest list":
        return t.paths.manifest(snap.delta_manifest_list)
    if kind == "manifest":
        return t.paths.manifest(t.manifest_store.read_manifest_list(snap.delta_manifest_list)[0].file_name)
    assert kind == "index manifest" and snap.index_manifest
    return t.paths.manifest(snap.index_manifest)


GARBLE = {
    "garbage": lambda data: b"\xff\xfe\x00not a paimon file\x80" * 3,
    "truncated": lambda data: data[: len(data) // 2],
    "empty": lambda data: b"",
}


def _use(cat, kind):
    """What a user does next: open the table and read it (or, for an index manifest, write to it)."""
    t = cat.get_table("db.t")
    if kind == "tag":
        return t.to_arrow(tag="t1")
    if kind == "index manifest":
        return t.write_arrow(pa.table({"k": [1000], "v": ["new"]}, schema=SCHEMA))
    return t.to_arrow()


@pytest.mark.parametrize("kind", ["snapshot", "schema", "tag", "manifest list", "manifest", "index manifest"])
def test_corrupt_metadata_file_is_named(store, kind):
    cat, t = _table(store)
    path = _metadata_file(t, kind)
    original = t.fileio.read_bytes(path)
    for garble in sorted(GARBLE) if store.kind == "local" else ["truncated"]:  # S3 round trips are slow
        store.put(path, GARBLE[garble](original))
        fresh = store.catalog()  # no caches
        with pytest.raises(errors.CorruptFileError) as info:
            _use(fresh, kind)
        err = info.value
        assert isinstance(err, errors.FormatError) and err.path == path and path in str(err), (garble, str(err))
        # every later attempt names the file again, and nothing was committed meanwhile
        with pytest.raises(errors.CorruptFileError, match="corrupt"):
            _use(store.catalog(), kind)
        if kind in ("index manifest", "tag"):  # reading the latest snapshot needs neither
            assert {r["k"]: r["v"] for r in fresh.get_table("db.t").to_arrow().to_pylist()} == _model()
        store.put(path, original)
    assert [s.id for s in store.catalog().get_table("db.t").snapshots()] == [1, 2]
    assert {r["k"]: r["v"] for r in store.catalog().get_table("db.t").to_arrow().to_pylist()} == _model()


def _live_data_files(t):
    return [
        (e, t.paths.data_file("", e.bucket, e.file.file_name))  # unpartitioned tables
        for e in t.manifest_store.live_entries(t.latest_snapshot())
    ]


def test_truncated_data_file_is_reported_with_expected_and_actual_size(store):
    cat, t = _table(store)
    entry, path = _live_data_files(t)[0]
    data = t.fileio.read_bytes(path)
    store.put(path, data[:-100])
    with pytest.raises(errors.DataFileMismatchError) as info:
        store.catalog().get_table("db.t").to_arrow()
    msg = str(info.value)
    assert info.value.path == path and path in msg
    assert f"{len(data) - 100} bytes" in msg and f"says {entry.file.file_size}" in msg


def test_data_file_replaced_by_another_valid_file_is_not_read_as_truth(store):
    """Swap one live data file for another valid one of the same table: its rows must not be served."""
    cat, t = _table(store)
    files = _live_data_files(t)
    (_e1, p1), (_e2, p2) = files[0], files[-1]
    assert p1 != p2
    store.put(p1, t.fileio.read_bytes(p2))
    with pytest.raises(errors.DataFileMismatchError) as info:
        store.catalog().get_table("db.t").to_arrow()
    assert info.value.path == p1


def test_row_count_differing_from_the_manifest_entry_is_reported(store):
    from lake_core.format.integrity import read_checked_data_file

    _cat, t = _table(store)
    entry, path = _live_data_files(t)[0]
    cols = t.arrow_schema()
    good = read_checked_data_file(t.fileio, path, entry.file, "parquet", cols.names, cols)
    assert good.num_rows == entry.file.row_count
    lying = dataclasses.replace(entry.file, row_count=entry.file.row_count + 7)
    with pytest.raises(errors.DataFileMismatchError) as info:
        read_checked_data_file(t.fileio, path, lying, "parquet", cols.names, cols)
    msg = str(info.value)
    assert path in msg and f"holds {entry.file.row_count} rows" in msg and f"says {entry.file.row_count + 7}" in msg


def test_missing_data_file_is_named(store):
    cat, t = _table(store)
    _entry, path = _live_data_files(t)[0]
    t.fileio.delete(path)
    with pytest.raises(errors.CorruptFileError, match="does not exist") as info:
        store.catalog().get_table("db.t").to_arrow()
    assert info.value.path == path


def test_compaction_checks_data_files_too(local_store):
    """Compaction reads its inputs through the same check: a damaged input stops it, by name."""
    from lake_core.compaction.bucket_compact import read_kv_files

    cat, t = _table(local_store)
    entry, path = _live_data_files(t)[0]
    local_store.put(path, t.fileio.read_bytes(path)[:-10])
    files = [e.file for e, _p in _live_data_files(t) if e.bucket == entry.bucket]
    with pytest.raises(errors.DataFileMismatchError) as info:
        read_kv_files(cat.get_table("db.t").store, "", entry.bucket, files)
    assert info.value.path == path
