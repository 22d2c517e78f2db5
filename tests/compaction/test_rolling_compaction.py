"""A bucket many times larger than the compaction's memory bound (merge chunk, row group) compacts
to the same rows as a dict model, streamed into several files rolled at ``target-file-size``, and
every file's metadata (row count, size, key range, key and value statistics, sequence range) is
what its own contents say."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pytest

from fixtures.java_paimon import assert_same_rows
from lake_core import Catalog
from lake_core.compaction import rewrite
from lake_core.format import data_file_writer
from lake_core.format.binary_row.reader import deserialize_row
from lake_core.format.data_file import read_data_file
from lake_core.format.stats import table_stats
from lake_core.kv.system_fields import KIND, SEQ

SCHEMA = pa.schema(
    [
        pa.field("k", pa.int64(), nullable=False),
        ("v", pa.int64()),
        ("s", pa.string()),
        ("f", pa.float64()),
        ("op", pa.string()),
    ]
)
CHUNK = 32  # rows per input file per merge round
TARGET = 16 * 1024  # target-file-size
ROWS = 4000  # keys in the bucket: ~60 chunks, and ~10x the target in encoded bytes


def _commits() -> list[pa.Table]:
    """An initial load, overlapping updates, and deletes of existing keys (``rowkind.field``)."""
    rng = np.random.default_rng(11)
    out = []
    for i, n in enumerate((ROWS, 1500, 1500, 800)):
        keys = rng.permutation(ROWS)[:n].astype(np.int64) if i else np.arange(ROWS, dtype=np.int64)
        ops = np.where(rng.random(n) < 0.15, "-D", "+I") if i == 3 else np.full(n, "+I")
        v = rng.integers(0, 10**6, n)
        out.append(
            pa.table(
                {
                    "k": keys,
                    "v": pa.array(np.where(v % 13 == 0, None, v), pa.int64(), from_pandas=True),
                    "s": [None if x % 17 == 0 else f"value-{x:07d}-{'x' * int(x % 23)}" for x in v],
                    "f": pa.array(rng.normal(size=n)),
                    "op": pa.array(ops, pa.string()),
                },
                schema=SCHEMA,
            )
        )
    return out


def _model(commits: list[pa.Table]) -> dict[int, dict]:
    rows: dict[int, dict] = {}
    for t in commits:
        for r in t.to_pylist():
            if r["op"] == "-D":
                rows.pop(r["k"], None)
            else:
                rows[r["k"]] = {c: r[c] for c in ("k", "v", "s", "f")}
    return rows


def make_table(warehouse: str, storage_options=None):
    cat = Catalog(warehouse, storage_options)
    cat.create_database("db", ignore_if_exists=True)
    t = cat.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["k"],
        options={
            "bucket": "1",
            "write-only": "true",
            "rowkind.field": "op",
            "target-file-size": f"{TARGET // 1024} kb",
        },
    )
    commits = _commits()
    for c in commits:
        t.write_arrow(c)
    return t, _model(commits)


def compact_bounded(t, monkeypatch) -> dict:
    """Full compaction with merge rounds of CHUNK rows per file; returns the largest merge round
    and the largest chunk handed to the file encoder (rows, Arrow bytes)."""
    seen = {"merge_rows": 0, "encode_bytes": 0}
    read_file = rewrite.iter_kv_file

    def read_small_chunks(store, bucket_dir, f, chunk_rows=None, **kwargs):  # whatever chunk the caller asks
        return read_file(store, bucket_dir, f, CHUNK, **kwargs)

    monkeypatch.setattr(rewrite, "iter_kv_file", read_small_chunks)
    merge_chunk = rewrite._merge_chunk

    def spy_merge(engine, rows, *args, **kwargs):
        seen["merge_rows"] = max(seen["merge_rows"], rows.num_rows)
        return merge_chunk(engine, rows, *args, **kwargs)

    encode = data_file_writer.DataFileStreamWriter.write

    def spy_encode(self, rows):
        seen["encode_bytes"] = max(seen["encode_bytes"], rows.nbytes)
        return encode(self, rows)

    monkeypatch.setattr(rewrite, "_merge_chunk", spy_merge)
    monkeypatch.setattr(data_file_writer.DataFileStreamWriter, "write", spy_encode)
    n_runs = len(t.manifest_store.live_entries(t.latest_snapshot()))
    r = t.maintenance.compact(full=True)
    assert r.rows_in == sum(len(c) for c in _commits())
    seen["runs"] = n_runs
    seen["rows_in"] = r.rows_in
    return seen


def file_contents(t, f) -> pa.Table:
    path = os.path.join(t.fileio.local_path(t.paths.bucket_dir("", 0)), f.file_name)
    assert os.path.getsize(path) == f.file_size
    return read_data_file(path, "parquet")


def check_file_metadata(t, files) -> None:
    """Each file's DataFileMeta equals what its contents give (as a whole-file writer computes it)."""
    key_types = [pa.int64()]
    value_names = ["k", "v", "s", "f", "op"]
    value_types = [SCHEMA.field(n).type for n in value_names]
    prev_max = None
    for f in files:
        data = file_contents(t, f)
        keys = data["_KEY_k"].to_pylist()
        assert f.row_count == data.num_rows
        assert keys == sorted(keys) and len(set(keys)) == len(keys)
        assert deserialize_row(f.min_key, key_types) == [keys[0]]
        assert deserialize_row(f.max_key, key_types) == [keys[-1]]
        assert prev_max is None or keys[0] > prev_max  # the level's files do not overlap
        prev_max = keys[-1]
        seq = data[SEQ].to_numpy()
        assert (f.min_sequence_number, f.max_sequence_number) == (int(seq.min()), int(seq.max()))
        assert f.delete_row_count == int(np.isin(data[KIND].to_numpy(), [1, 3]).sum())
        want = table_stats(data, value_names, {n: t.options.field_stats_mode(n) for n in value_names})
        assert deserialize_row(f.value_stats.min_values, value_types) == [s.min for s in want]
        assert deserialize_row(f.value_stats.max_values, value_types) == [s.max for s in want]
        assert list(f.value_stats.null_counts) == [s.null_count for s in want]
        key_stats = table_stats(data, ["_KEY_k"], "full")[0]
        assert deserialize_row(f.key_stats.min_values, key_types) == [key_stats.min]
        assert deserialize_row(f.key_stats.max_values, key_types) == [key_stats.max]


def test_bucket_ten_times_the_memory_bound_compacts_into_rolled_files(warehouse, monkeypatch):
    t, model = make_table(warehouse)
    seen = compact_bounded(t, monkeypatch)
    t = Catalog(warehouse).get_table("db.t")
    got = {r["k"]: {c: r[c] for c in ("k", "v", "s", "f")} for r in t.to_arrow().to_pylist()}
    assert got == model

    # memory: a merge round holds at most one chunk per run, the encoder one row group (about
    # half the target; the file layout adds the _KEY_ columns)
    assert seen["rows_in"] >= 10 * seen["runs"] * CHUNK
    assert seen["merge_rows"] <= seen["runs"] * CHUNK
    assert seen["encode_bytes"] <= TARGET

    files = sorted(
        (e.file for e in t.manifest_store.live_entries(t.latest_snapshot())),
        key=lambda f: deserialize_row(f.min_key, [pa.int64()]),
    )
    assert len(files) >= 5 and {f.level for f in files} == {t.options.num_levels - 1}
    # rolled by encoded size: every file but the last reached the target, none ran far past it
    assert all(TARGET <= f.file_size < 2 * TARGET for f in files[:-1])
    check_file_metadata(t, files)


@pytest.mark.s3
def test_rolled_compaction_on_object_store(s3_warehouse, monkeypatch):
    t, model = make_table(s3_warehouse.uri, s3_warehouse.storage_options)
    compact_bounded(t, monkeypatch)
    t = Catalog(s3_warehouse.uri, s3_warehouse.storage_options).get_table("db.t")
    got = {r["k"]: {c: r[c] for c in ("k", "v", "s", "f")} for r in t.to_arrow().to_pylist()}
    assert got == model
    files = [e.file for e in t.manifest_store.live_entries(t.latest_snapshot())]
    assert len(files) >= 5
    sizes = {f.file_name: t.fileio.file_size(f"{t.paths.bucket_dir('', 0)}/{f.file_name}") for f in files}
    assert sizes == {f.file_name: f.file_size for f in files}


def _model_table(model: dict[int, dict]) -> pa.Table:
    return pa.Table.from_pylist([model[k] for k in sorted(model)], schema=SCHEMA.remove(SCHEMA.get_field_index("op")))


@pytest.mark.java
def test_java_reads_rolled_compaction_output(java_paimon, warehouse, monkeypatch):
    """Java Paimon 1.0 reads the rolled files whole and filtered (its scan prunes files by our
    key range and value statistics) and lists them with our row counts and sequence ranges."""
    t, model = make_table(warehouse)
    compact_bounded(t, monkeypatch)
    t = Catalog(warehouse).get_table("db.t")
    cols = ["k", "v", "s", "f"]
    assert_same_rows(java_paimon.read(t, projection=cols), _model_table(model))
    pb = t.predicate_builder()
    for pred, keep in (
        (pb.between("k", 1000, 1400), lambda r: 1000 <= r["k"] <= 1400),
        (pb.greater_than("v", 900_000), lambda r: r["v"] is not None and r["v"] > 900_000),
        (pb.less_than("s", "value-01"), lambda r: r["s"] is not None and r["s"] < "value-01"),
    ):
        want = {k: r for k, r in model.items() if keep(r)}
        assert want and len(want) < len(model)
        assert_same_rows(java_paimon.read(t, filter=pred, projection=cols), _model_table(want))
    ours = {f.file_name: f for f in (e.file for e in t.manifest_store.live_entries(t.latest_snapshot()))}
    theirs = java_paimon.files(t)
    assert len(theirs) == len(ours) >= 5
    for jf in theirs:
        f = ours[jf.file_name]
        assert (jf.level, jf.row_count, jf.file_size, jf.min_sequence_number, jf.max_sequence_number) == (
            t.options.num_levels - 1,
            f.row_count,
            f.file_size,
            f.min_sequence_number,
            f.max_sequence_number,
        )
