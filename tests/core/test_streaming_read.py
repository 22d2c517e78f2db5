"""Merge-on-read streams: a bucket's overlapping files are merged ``read.batch-size`` rows per file
at a time, so a reader yields its first rows before it opens the bucket's later files and holds
memory bounded by the batch size, not the bucket; the rows are those of the dictionary model for
every merge engine whatever the batch size (chunk boundaries fall everywhere)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from compaction.test_compaction_model import ENGINES, _arrow, _canon, step_strategy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from merge.model import Model, Spec
from reliability.faultio import FaultyFileIO

from lake_core import Catalog
from lake_core.errors import InvalidOptionError
from lake_core.io.fileio import FileIO

CASES = {
    **ENGINES,
    # a user sequence field orders each key's rows, not the arrival order. No retractions: one
    # that wins by sequence value is dropped by a full compaction, after which a later row with a
    # smaller value shows (Paimon's behaviour too), which a one-shot model cannot follow.
    "deduplicate (sequence.field)": (ENGINES["deduplicate"][0], {"sequence.field": "v"}, [0, 2]),
    # merge-on-write: each file is read raw, its deletion vector applied chunk by chunk
    "deduplicate (deletion vectors)": (ENGINES["deduplicate"][0], {"deletion-vectors.enabled": "true"}, [0, 2, 3]),
}


def _batches(reader: pa.RecordBatchReader) -> list[pa.RecordBatch]:
    return [b for b in reader if b.num_rows]


def _max_files_per_bucket(t) -> int:
    per: dict = {}
    for e in t.manifest_store.live_entries(t.latest_snapshot()):
        per[(e.partition, e.bucket)] = per.get((e.partition, e.bucket), 0) + 1
    return max(per.values(), default=1)


def _run(tmp_path_factory, case: str, steps, inline: bool, chunk: int) -> None:
    schema, opts, _kinds = CASES[case]
    cat = Catalog(f"file://{tmp_path_factory.mktemp('wh')}")
    cat.create_database("db")
    options = {
        "bucket": "2",
        "rowkind.field": "op",
        "num-sorted-run.compaction-trigger": "3",
        "write-only": str(not inline).lower(),
        "read.batch-size": str(chunk),
        **opts,
    }
    t = cat.create_table(
        "db.t",
        schema=schema.append(pa.field("op", pa.string())),
        primary_keys=["p", "k"],
        partition_keys=["p"],
        options=options,
    )
    spec = Spec(schema, ("p", "k"), {k: v for k, v in opts.items() if k != "deletion-vectors.enabled"})
    commits: list[list[dict]] = []
    visible = 0
    for action, rows in steps:
        if action == "write":
            t.write_arrow(_arrow(schema, rows))
            commits.append(rows)
        else:
            t.maintenance.compact(full=action == "compact_full")
            visible = len(commits)
        if not (t.level0_hidden and not inline):  # first-row, deletion vectors: level 0 shows once compacted
            visible = len(commits)
        want = _canon(Model(spec).run(commits[:visible]), schema.names) if visible else []
        assert _canon(t.to_arrow().drop_columns(["op"]).to_pylist(), schema.names) == want, (action, commits)
        batches = _batches(t.to_arrow_batch_reader())
        got = pa.Table.from_batches(batches, schema=t.to_arrow().schema) if batches else None
        assert _canon(got.drop_columns(["op"]).to_pylist() if got else [], schema.names) == want
        # each merge round takes at most a batch per file (plus one carried key), never the bucket
        bound = _max_files_per_bucket(t) * (chunk + 1)
        assert all(b.num_rows <= bound for b in batches), ([b.num_rows for b in batches], bound)
        # projection and filter apply to the merged rows, chunk by chunk
        pb = t.predicate_builder()
        part = t.to_arrow(columns=["k", "v"], filter=pb.greater_than("k", 5))
        assert sorted(part.to_pylist(), key=str) == sorted(
            ({"k": k, "v": v} for (_p, k, v, *_rest) in want if k > 5), key=str
        )
        streamed = t.to_arrow_batch_reader(columns=["k", "v"], filter=pb.greater_than("k", 5)).read_all()
        assert streamed.schema == part.schema and streamed.to_pylist() == part.to_pylist()


SETTINGS = dict(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)


@pytest.mark.parametrize("case", list(CASES))
def test_streamed_read_equals_the_model_for_any_batch_size(tmp_path_factory, case):
    @settings(**SETTINGS)
    @given(steps=step_strategy(case.split(" ")[0], CASES[case][2]), inline=st.booleans(), chunk=st.integers(1, 7))
    def check(steps, inline, chunk):
        _run(tmp_path_factory, case, steps, inline, chunk)

    check()


def _two_sections(cat: Catalog, options: dict | None = None):
    """One bucket of two sections: files 1-2 hold keys 0..199, files 3-4 keys 1000..1199."""
    schema = pa.schema([("k", pa.int64()), ("v", pa.int64())])
    t = cat.create_table(
        "db.t", schema=schema, primary_keys=["k"], options={"bucket": "1", "write-only": "true", **(options or {})}
    )
    for lo in (0, 1000):
        keys = np.arange(lo, lo + 200)
        t.write_arrow(pa.table({"k": keys, "v": np.zeros(200, np.int64)}, schema=schema))
        t.write_arrow(pa.table({"k": keys[::2], "v": np.ones(100, np.int64)}, schema=schema))
    return t


def test_reader_yields_before_it_opens_the_later_files(warehouse):
    opened: list[str] = []
    fio = FaultyFileIO(FileIO(warehouse), before=lambda kind, path: opened.append(path))
    cat = Catalog(warehouse, fileio=fio)
    cat.create_database("db")
    t = _two_sections(cat)
    files = {e.file.file_name: e.file for e in t.manifest_store.live_entries(t.latest_snapshot())}
    opened.clear()
    reader = t.to_arrow_batch_reader()
    first = reader.read_next_batch()
    data_opened = {p.rsplit("/", 1)[-1] for p in opened} & set(files)
    # only the first section's two files: the second section is not touched yet
    assert {files[n].min_key for n in data_opened} == {min(f.min_key for f in files.values())}
    assert len(data_opened) == 2
    assert first.column("k").to_pylist()[:3] == [0, 1, 2] and first.column("v").to_pylist()[:3] == [1, 0, 1]
    rest = pa.Table.from_batches([first, *reader])
    assert {p.rsplit("/", 1)[-1] for p in opened} >= set(files)
    assert rest["k"].to_pylist() == list(range(200)) + list(range(1000, 1200))
    assert rest["v"].to_pylist() == [1, 0] * 200


@pytest.mark.s3
@pytest.mark.parametrize("fmt", ["parquet", "orc", "avro"])
def test_streamed_merge_on_s3(s3_warehouse, fmt):
    # object storage: files are read through file objects, a buffer at a time, not local paths
    cat = Catalog(s3_warehouse.uri, s3_warehouse.storage_options)
    cat.create_database("db")
    t = _two_sections(cat, {"read.batch-size": "7", "file.format": fmt})
    batches = _batches(t.to_arrow_batch_reader())
    assert max(b.num_rows for b in batches) <= 2 * 8
    got = pa.Table.from_batches(batches)
    assert got["k"].to_pylist() == list(range(200)) + list(range(1000, 1200))
    assert got["v"].to_pylist() == [1, 0] * 200
    assert t.to_arrow().to_pylist() == got.to_pylist()


def _peak_while_reading(cat: Catalog, name: str, n: int, fmt: str, **options: str) -> tuple[int, pa.Table]:
    """Peak Arrow memory while streaming a merged bucket of two overlapping ``fmt`` files (``n``
    rows and ``n / 2`` updates) in batches of 1000 rows, each batch dropped once counted; and the
    rows."""
    schema = pa.schema([("k", pa.int64()), ("v", pa.int64()), ("s", pa.string())])
    t = cat.create_table(
        name,
        schema=schema,
        primary_keys=["k"],
        options={"bucket": "1", "write-only": "true", "read.batch-size": "1000", "file.format": fmt, **options},
    )
    keys = np.arange(n)
    t.write_arrow(pa.table({"k": keys, "v": keys, "s": pa.array([f"row-{i:09d}" for i in keys])}, schema=schema))
    t.write_arrow(
        pa.table({"k": keys[::2], "v": -keys[::2], "s": pa.array([f"new-{i:09d}" for i in keys[::2]])}, schema=schema)
    )
    reader = t.to_arrow_batch_reader()
    base = pa.total_allocated_bytes()
    peak, rows, v_sum = 0, 0, 0
    for batch in reader:
        peak = max(peak, pa.total_allocated_bytes() - base)
        rows += batch.num_rows
        v_sum += int(np.sum(batch.column("v").to_numpy()))
        del batch
    assert rows == n and v_sum == int(np.sum(keys[1::2]) - np.sum(keys[::2]))
    return peak, t.to_arrow()


# ORC files are decoded a stripe at a time, and a stripe closes at orc.stripe.size (64 MB) of
# compressed data: these rows compress about 50x, so 4096-byte stripes hold a few thousand rows
@pytest.mark.parametrize("fmt, options", [("parquet", {}), ("avro", {}), ("orc", {"orc.stripe.size": "4096"})])
def test_memory_is_bounded_by_the_batch_size_not_the_bucket(warehouse, fmt, options):
    cat = Catalog(warehouse)
    cat.create_database("db")
    peak_1, whole_1 = _peak_while_reading(cat, "db.small", 20_000, fmt, **options)  # 20 batches
    peak_10, whole_10 = _peak_while_reading(cat, "db.large", 200_000, fmt, **options)  # 200 batches: 10x the rows
    assert whole_10.nbytes > 9 * whole_1.nbytes
    # A materialising reader holds at least the merged bucket, so its peak grows with it. Streaming
    # holds a batch per file plus what the file reader buffers of each file: a Parquet row group's
    # column chunks a buffer at a time (compressed, several times smaller than the decoded rows), a
    # few Avro blocks.
    assert peak_10 < whole_10.nbytes / 2, (peak_10, whole_10.nbytes)
    assert peak_10 - peak_1 < (whole_10.nbytes - whole_1.nbytes) / 4, (peak_1, peak_10)


def test_reader_dropped_half_way_stops_its_threads(warehouse):
    import gc
    import threading
    import time

    cat = Catalog(warehouse)
    cat.create_database("db")
    schema = pa.schema([("k", pa.int64()), ("v", pa.int64())])
    t = cat.create_table(
        "db.t",
        schema=schema,
        primary_keys=["k"],
        options={"bucket": "4", "write-only": "true", "read.batch-size": "10"},
    )
    for v in range(3):
        t.write_arrow(pa.table({"k": np.arange(2000), "v": np.full(2000, v)}, schema=schema))
    reader = t.to_arrow_batch_reader()
    first = reader.read_next_batch()
    assert first.num_rows <= 3 * 11 and set(first.column("v").to_pylist()) == {2}
    assert any(th.name == "lake-core-read-ahead" for th in threading.enumerate())  # splits read ahead
    del reader
    gc.collect()
    deadline = time.monotonic() + 30  # no timing asserted: only that the threads end at all
    while any(th.name == "lake-core-read-ahead" for th in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(th.name == "lake-core-read-ahead" for th in threading.enumerate())


@pytest.mark.parametrize("value", ["0", "-5", "many", "1.5"])
def test_read_batch_size_is_validated(warehouse, value):
    cat = Catalog(warehouse)
    cat.create_database("db")
    with pytest.raises(InvalidOptionError, match="read.batch-size"):
        cat.create_table(
            "db.t",
            schema=pa.schema([("k", pa.int64())]),
            primary_keys=["k"],
            options={"bucket": "1", "read.batch-size": value},
        )
    assert not cat.table_exists("db.t")


@pytest.mark.parametrize("fmt", ["orc", "avro"])
def test_orc_and_avro_buckets_stream_and_compact_as_the_model(warehouse, fmt):
    """A bucket of ORC / Avro files 50x ``read.batch-size``, read and compacted in chunks of 1000
    rows per file: the merged read (whole and streamed) and a full compaction give the dictionary
    model's rows (memory: test_memory_is_bounded_by_the_batch_size_not_the_bucket)."""
    schema = pa.schema([("k", pa.int64()), ("v", pa.int64()), ("s", pa.string())])
    cat = Catalog(warehouse)
    cat.create_database("db")
    t = cat.create_table(
        "db.t",
        schema=schema,
        primary_keys=["k"],
        options={"bucket": "1", "write-only": "true", "read.batch-size": "1000", "file.format": fmt},
    )
    rng = np.random.default_rng(11)
    model: dict[int, tuple[int, str]] = {}
    for commit, keys in enumerate([np.arange(20_000), *(rng.choice(30_000, 10_000, replace=False) for _ in range(3))]):
        v = rng.integers(0, 1000, len(keys))
        s = [f"customer-{x:04d}-{commit}" for x in rng.integers(0, 5000, len(keys))]
        t.write_arrow(pa.table({"k": keys.astype(np.int64), "v": v, "s": s}, schema=schema))
        model.update(zip(keys.tolist(), zip(v.tolist(), s)))
    want = [{"k": k, "v": v, "s": s} for k, (v, s) in sorted(model.items())]
    assert len(t.manifest_store.live_entries(t.latest_snapshot())) == 4

    def rows(table: pa.Table) -> list[dict]:
        return sorted(table.to_pylist(), key=lambda r: r["k"])

    assert rows(t.to_arrow()) == want
    batches = _batches(t.to_arrow_batch_reader())
    assert max(b.num_rows for b in batches) <= 4 * 1001  # a chunk per file (plus a carried key)
    assert rows(pa.Table.from_batches(batches)) == want

    t.maintenance.compact(full=True)
    files = t.manifest_store.live_entries(t.latest_snapshot())
    assert len(files) == 1 and files[0].file.file_name.endswith("." + fmt)
    assert rows(t.to_arrow()) == want
    assert rows(t.to_arrow_batch_reader().read_all()) == want
