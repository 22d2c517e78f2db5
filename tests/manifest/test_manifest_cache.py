"""The process-wide manifest cache: a second table handle plans without reading a manifest again,
a manifest deleted or rewritten after it was cached is noticed, and the bound holds."""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
import pytest

from lake_core import (
    Catalog,
    clear_manifest_cache,
    configure_manifest_cache,
    errors,
    manifest_cache_stats,
)
from lake_core.io.fileio import FileIO
from lake_core.manifest.cache import DEFAULT_MAX_ENTRIES, ENV_VAR, _max_entries_from_env

SCHEMA = pa.schema([("p", pa.int32()), ("id", pa.int64()), ("v", pa.int64())])


class CountingFileIO(FileIO):
    """The real local FileIO, counting the files it reads whole, by kind of metadata file."""

    def __init__(self, uri: str):
        super().__init__(uri)
        self.reads: Counter = Counter()

    def read_bytes(self, path: str) -> bytes:
        name = path.rsplit("/", 1)[-1]
        kind = "list" if name.startswith("manifest-list-") else "manifest" if name.startswith("manifest-") else "other"
        self.reads[kind] += 1
        return super().read_bytes(path)


def _write(warehouse: str) -> None:
    cat = Catalog(warehouse)
    cat.create_database("db")
    t = cat.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["p", "id"],
        partition_keys=["p"],
        options={"bucket": "2", "write-only": "true"},
    )
    for p in range(3):
        t.write_arrow(pa.table({"p": [p] * 4, "id": [1, 2, 3, 4], "v": [p] * 4}, schema=SCHEMA))


def _open(warehouse: str) -> tuple[CountingFileIO, object]:
    fileio = CountingFileIO(warehouse)
    return fileio, Catalog(warehouse, fileio=fileio).get_table("db.t")


def _plan(t) -> list[tuple]:
    return [
        (u.partition_values, u.bucket, [f.file_name for f in u.files])
        for u in t.maintenance.plan_compaction(full=True).units
    ]


def test_a_second_table_open_reads_no_manifest_again(warehouse):
    _write(warehouse)
    clear_manifest_cache()  # as a fresh process
    first_io, first = _open(warehouse)
    planned = _plan(first)
    assert first_io.reads["manifest"] >= 3 and first_io.reads["list"] >= 1

    second_io, second = _open(warehouse)  # a new handle, as the next sensor tick or planning call opens
    assert _plan(second) == planned
    assert second_io.reads["manifest"] == second_io.reads["list"] == 0
    stats = manifest_cache_stats()
    assert stats.hits >= 4 and stats.files >= 4 and 0 < stats.entries <= stats.max_entries

    clear_manifest_cache()
    third_io, third = _open(warehouse)
    assert _plan(third) == planned and third_io.reads["manifest"] == first_io.reads["manifest"]


def test_a_commit_s_manifests_are_cached_as_written(warehouse):
    _write(warehouse)  # every manifest and list it wrote is in the cache: no clear here
    fileio, t = _open(warehouse)
    assert len(t.to_arrow()) == 12
    assert fileio.reads["manifest"] == fileio.reads["list"] == 0


def _a_manifest(t) -> str:
    snap = t.latest_snapshot()
    return t.paths.manifest(t.manifest_store.read_manifest_list(snap.delta_manifest_list)[0].file_name)


def test_a_cached_manifest_deleted_since_is_missing_again(warehouse):
    _write(warehouse)
    _io, t = _open(warehouse)
    assert len(t.to_arrow()) == 12  # every manifest of the snapshot is in the cache
    path = _a_manifest(t)
    FileIO(warehouse).delete(path)
    with pytest.raises(errors.CorruptFileError, match="does not exist") as cached:
        _open(warehouse)[1].to_arrow()
    clear_manifest_cache()
    with pytest.raises(errors.CorruptFileError) as uncached:  # what a process without the cache says
        _open(warehouse)[1].to_arrow()
    assert str(cached.value) == str(uncached.value) and cached.value.path == uncached.value.path
    assert cached.value.path.endswith(path.rsplit("/", 1)[-1])


def test_a_cached_manifest_rewritten_since_is_read_again(warehouse):
    _write(warehouse)
    _io, t = _open(warehouse)
    _plan(t)
    path = _a_manifest(t)
    data = FileIO(warehouse).read_bytes(path)
    FileIO(warehouse).write_bytes(path, data[: len(data) // 2])
    with pytest.raises(errors.CorruptFileError) as info:
        _plan(_open(warehouse)[1])
    assert info.value.path == path
    FileIO(warehouse).write_bytes(path, data)
    fileio, t = _open(warehouse)
    assert len(t.to_arrow()) == 12 and fileio.reads["manifest"] == 1  # the restored file, once


def test_two_warehouses_never_share_an_entry(tmp_path):
    one, two = (tmp_path / "one").as_uri(), (tmp_path / "two").as_uri()
    for uri in (one, two):
        _write(uri)
    clear_manifest_cache()
    assert len(_open(one)[1].to_arrow()) == 12
    io_two, t_two = _open(two)
    assert len(t_two.to_arrow()) == 12 and io_two.reads["manifest"] >= 3
    # two S3 endpoints with a bucket of the same name are two storages
    a = FileIO("s3://lake/wh", {"endpoint_url": "http://127.0.0.1:9000"})
    b = FileIO("s3://lake/wh", {"client_kwargs": {"endpoint_url": "http://127.0.0.1:9001"}})
    assert a.identity != b.identity and a.identity != FileIO("s3://lake/wh").identity


def test_the_bound_evicts_least_recently_used_and_zero_turns_it_off(warehouse):
    _write(warehouse)
    try:
        configure_manifest_cache(max_entries=0)
        clear_manifest_cache()
        _plan(_open(warehouse)[1])
        fileio, t = _open(warehouse)
        _plan(t)
        assert fileio.reads["manifest"] >= 3 and manifest_cache_stats().files == 0
        configure_manifest_cache(max_entries=5)  # fewer entries than the table's manifests hold
        _plan(_open(warehouse)[1])
        assert 0 < manifest_cache_stats().entries <= 5
    finally:
        configure_manifest_cache(max_entries=DEFAULT_MAX_ENTRIES)


def test_the_bound_is_a_checked_setting(monkeypatch):
    for bad in (-1, 1.5, True, "10"):
        with pytest.raises(errors.InvalidOptionError, match="max_entries"):
            configure_manifest_cache(max_entries=bad)  # type: ignore[arg-type]
    monkeypatch.setenv(ENV_VAR, "250_000")
    assert _max_entries_from_env() == 250_000
    monkeypatch.setenv(ENV_VAR, "lots")
    with pytest.raises(errors.InvalidOptionError, match=ENV_VAR):
        _max_entries_from_env()
    monkeypatch.delenv(ENV_VAR)
    assert _max_entries_from_env() == DEFAULT_MAX_ENTRIES
