"""Issue 23, item 12: a commit refuses files that are no longer on storage.

Files written with the builder API and committed much later (a long Spark job, a paused writer)
can be removed meanwhile by ``remove_orphan_files`` (its one-day age floor is the caller's rule, as
in Paimon). The commit used to succeed, and every later read of the whole table failed with
``CorruptFileError``. Now it raises ``CommitFilesMissingError`` naming the files, their partition
and bucket and the table, and commits nothing. Writers here are real separate processes; one
committer commits what they prepared.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import pickle
import time
from dataclasses import replace

import pyarrow as pa
import pytest

from lake_core import Catalog
from lake_core.compaction.bucket_compact import compact_bucket
from lake_core.errors import CommitFailedError, CommitFilesMissingError

from .helpers import as_dict, kv, new_table, prepared

SCHEMA = pa.schema(
    [pa.field("dt", pa.string(), nullable=False), pa.field("k", pa.int64(), nullable=False), ("v", pa.string())]
)


def _rows(dt_value: str, keys, value: str) -> pa.Table:
    return pa.table({"dt": [dt_value] * len(keys), "k": list(keys), "v": [value] * len(keys)}, schema=SCHEMA)


def _content(table) -> dict:
    return {(r["dt"], r["k"]): r["v"] for r in table.to_arrow().to_pylist()}


def _writer(uri, storage_options, writer_id, out_path):
    """A separate process: write one partition with the builder API, hand the messages over."""
    t = Catalog(uri, storage_options).get_table("db.t")
    w = t.new_batch_write_builder().new_write()
    w.write_arrow(_rows(f"d{writer_id}", range(writer_id * 100, writer_id * 100 + 50), f"w{writer_id}"))
    with open(out_path, "wb") as f:
        pickle.dump(w.prepare_commit(), f)


def _run_writers(uri, storage_options, tmp_path, writer_ids) -> dict[int, list]:
    ctx = mp.get_context("spawn")
    procs = {
        i: ctx.Process(target=_writer, args=(uri, storage_options, i, str(tmp_path / f"{i}.pkl"))) for i in writer_ids
    }
    for p in procs.values():
        p.start()
    for p in procs.values():
        p.join(300)
        assert p.exitcode == 0
    out = {}
    for i in writer_ids:
        with open(tmp_path / f"{i}.pkl", "rb") as f:
            out[i] = pickle.load(f)
    return out


def _paths(table, messages) -> list[str]:
    return sorted(f.path_in(table.bucket_dir(m.partition, m.bucket)) for m in messages for f in m.new_files)


@pytest.fixture(params=["local", pytest.param("s3", marks=pytest.mark.s3)])
def aged(request):
    """(warehouse URI, storage options, backdate(path, seconds)): local disk or the S3 test server,
    and a way to make a file look older (``os.utime``; moto's LastModified)."""
    if request.param == "local":

        def backdate(path, seconds):
            then = time.time() - seconds
            os.utime(path[len("file://") :], (then, then))

        return request.getfixturevalue("warehouse"), {}, backdate
    s3 = request.getfixturevalue("s3_warehouse")

    def backdate(path, seconds):
        bucket, _, key = path[len("s3://") :].partition("/")
        s3.server.backdate(bucket, key, seconds)

    return s3.uri, s3.storage_options, backdate


@pytest.mark.slow
def test_files_removed_as_orphans_before_a_late_commit_refuse_it(aged, tmp_path):
    uri, opts, backdate = aged
    cat = Catalog(uri, opts)
    cat.create_database("db")
    t = cat.create_table(
        "db.t", schema=SCHEMA, primary_keys=["dt", "k"], partition_keys=["dt"], options={"bucket": "2"}
    )
    t.write_arrow(_rows("d0", [1, 2], "committed"))
    late = _run_writers(uri, opts, tmp_path, [0])[0]  # a writer that commits two days later
    for p in _paths(t, late):
        backdate(p, 2 * 86400)
    removed = t.maintenance.remove_orphan_files()  # the default floor: one day
    assert sorted(removed.files) == _paths(t, late)
    fresh = _run_writers(uri, opts, tmp_path, [1, 2])
    before = _content(t)
    everything = late + fresh[1] + fresh[2]
    with pytest.raises(
        CommitFilesMissingError,
        match=r"commit to db\.t refused: \d+ of the \d+ files it adds are "
        r"not on storage.*partition dt=d0, bucket \d: missing"
        r".*remove_orphan_files.*Nothing was committed",
    ) as err:
        t.new_batch_write_builder().new_commit().commit(everything)
    assert isinstance(err.value, CommitFailedError)
    assert sorted(err.value.files) == _paths(t, late)
    t = Catalog(uri, opts).get_table("db.t")
    assert t.latest_snapshot().id == 1 and _content(t) == before
    # the messages whose files are there commit as usual
    t.new_batch_write_builder().new_commit().commit(fresh[1] + fresh[2])
    want = {**before, **{(f"d{i}", k): f"w{i}" for i in (1, 2) for k in range(i * 100, i * 100 + 50)}}
    assert _content(Catalog(uri, opts).get_table("db.t")) == want


def test_a_missing_data_file_and_a_truncated_changelog_file_are_both_named(warehouse):
    t = new_table(warehouse, options={"changelog-producer": "input"})
    t.write_arrow(kv([1], ["a"]))
    wb, messages = prepared(t, [2, 3], ["b", "c"])
    (m,) = messages
    where = t.bucket_dir(m.partition, m.bucket)
    data, changelog = m.new_files[0].path_in(where), m.changelog_files[0].path_in(where)
    t.fileio.delete(data)
    body = t.fileio.read_bytes(changelog)
    t.fileio.write_bytes(changelog, body[:-10])
    with pytest.raises(CommitFilesMissingError, match=r"2 of the 2 files") as err:
        wb.new_commit().commit(messages)
    text = str(err.value)
    assert f"{data} (partition (unpartitioned), bucket 0: missing)" in text
    assert (
        f"{changelog} (partition (unpartitioned), bucket 0: {len(body) - 10} bytes on storage, {len(body)} in "
        "its commit message)" in text
    )
    assert t.latest_snapshot().id == 1 and as_dict(t) == {1: "a"}


def test_a_compaction_whose_output_was_removed_commits_nothing(warehouse):
    t = new_table(warehouse)
    for i in range(3):
        t.write_arrow(kv([i, 10 + i], [f"v{i}", "x"]))
    latest = t.latest_snapshot()
    live = {}
    for e in t.manifest_store.live_entries(latest):
        live.setdefault((e.partition, e.bucket, e.total_buckets), []).append(e.file)
    (p, b, n), files = next(iter(live.items()))
    message = replace(compact_bucket(t.store, p, b, n, files), base_snapshot_id=latest.id)
    out = message.compact_after[0].path_in(t.bucket_dir(p, b))
    t.fileio.delete(out)
    before = as_dict(t)
    with pytest.raises(CommitFilesMissingError, match="bucket 0: missing"):
        t.new_batch_write_builder().new_commit().commit([message])
    assert t.latest_snapshot().id == latest.id and as_dict(t) == before
