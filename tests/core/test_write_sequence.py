"""A deduplicating write numbers every row it keeps with the write's number: each level-0 file holds
one row per key and one sequence number, above every older file's numbers, and merges still pick
what a dictionary model of "last write wins" (or the highest ``sequence.field``) says."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from lake_core import Catalog

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.int64()), ("ts", pa.int64())])


def _table(tmp_path, **options):
    cat = Catalog(f"file://{tmp_path}")
    cat.create_database("db")
    opts = {"bucket": "2", "num-sorted-run.compaction-trigger": "50", **options}
    return cat.create_table("db.t", schema=SCHEMA, primary_keys=["k"], options=opts)


def _files(table) -> list[tuple[int, object, pa.Table]]:
    splits = table.new_read_builder().new_scan().plan().splits()
    return [(s.bucket, f, pq.read_table(s.file_path(f).removeprefix("file://"))) for s in splits for f in s.files]


def test_each_file_numbers_its_rows_with_one_number_above_older_files(tmp_path):
    t = _table(tmp_path)
    rng = np.random.default_rng(5)
    model: dict[int, int] = {}
    for _ in range(3):
        keys = rng.integers(0, 400, 1500)  # repeats inside one write: its last row wins
        values = rng.integers(0, 10**6, len(keys))
        t.write_arrow(pa.table({"k": keys, "v": values, "ts": values}, schema=SCHEMA))
        model.update(zip(keys.tolist(), values.tolist()))
        got = t.to_arrow()
        assert dict(zip(got["k"].to_pylist(), got["v"].to_pylist())) == model
    by_bucket: dict[int, list] = {}
    for bucket, meta, data in _files(t):
        seq, keys = data["_SEQUENCE_NUMBER"].to_numpy(), data["_KEY_k"].to_numpy()
        assert np.all(np.diff(keys) > 0) and np.all(seq == seq[0])  # one row per key, one number
        assert (seq[0], seq[0]) == (meta.min_sequence_number, meta.max_sequence_number)
        by_bucket.setdefault(bucket, []).append(meta)
    assert sorted(len(m) for m in by_bucket.values()) == [3, 3]
    for metas in by_bucket.values():  # numbers continue per bucket, each write above the last
        ranges = sorted((m.min_sequence_number, m.max_sequence_number) for m in metas)
        assert all(a[1] < b[0] for a, b in zip(ranges, ranges[1:]))


def test_renumbering_keeps_the_sequence_field_in_charge(tmp_path):
    t = _table(tmp_path, **{"sequence.field": "ts", "bucket": "1"})
    # key 1: the write's own pick keeps ts=5 (its later row has the lower ts=3)
    t.write_arrow(pa.table({"k": [2, 1, 1], "v": [20, 15, 13], "ts": [2, 5, 3]}, schema=SCHEMA))
    # a newer file with a lower ts loses to it; key 2's newer row with an equal ts wins (newer file)
    t.write_arrow(pa.table({"k": [1, 2], "v": [14, 21], "ts": [4, 2]}, schema=SCHEMA))
    rows = {r["k"]: (r["v"], r["ts"]) for r in t.to_arrow().to_pylist()}
    assert rows == {1: (15, 5), 2: (21, 2)}
