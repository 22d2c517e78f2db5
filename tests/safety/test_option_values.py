"""Option values outside what Paimon gives meaning to are refused at create time (issue 8, item 10).

Every refusal is an ``InvalidOptionError`` naming the option and the value; the table is not
created. Boundary values that are valid still work, and a table with them reads back what was
written.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_core import errors

SCHEMA = pa.schema([("k", pa.int64()), ("s", pa.int64()), ("v", pa.string())])
ROWS = pa.table({"k": [1, 2, 1], "s": [5, 1, 3], "v": ["a", "b", "c"]}, schema=SCHEMA)

REFUSED = [
    ("num-levels", "1"),
    ("num-levels", "0"),
    ("num-levels", "-1"),
    ("num-levels", "x"),
    ("bucket", " 2 "),
    ("bucket", "2 "),
    ("bucket", "1_0"),
    ("bucket", "0"),
    ("bucket", "4294967296"),
    ("commit.max-retries", "-1"),
    ("commit.max-retries", "3.5"),
    ("sequence.field.sort-order", "sideways"),
    ("sequence.field.sort-order", ""),
    ("file.compression.zstd-level", "99"),
    ("file.compression.zstd-level", "23"),
    ("file.compression.zstd-level", "-200000"),
    ("file.compression.zstd-level", "high"),
    ("partition.default-name", ""),
    ("partition.default-name", "  "),
    ("num-sorted-run.compaction-trigger", "0"),
    ("num-sorted-run.stop-trigger", "0"),
    ("snapshot.num-retained.min", "0"),
    ("snapshot.num-retained.max", "0"),
    ("snapshot.expire.limit", "0"),
    ("manifest.merge-min-count", "0"),
    ("compaction.min.file-num", "0"),
    ("compaction.max-size-amplification-percent", "-5"),
    ("compaction.size-ratio", "-1"),
    ("full-compaction.delta-commits", "0"),
    ("dynamic-bucket.target-row-num", "0"),
    ("dynamic-bucket.max-buckets", "0"),
    ("dynamic-bucket.initial-buckets", "0"),
    ("cross-partition-upsert.bootstrap-parallelism", "0"),
    ("target-file-size", "0 b"),
    ("write-buffer-size", "lots"),
    ("page-size", "0"),
    ("commit.min-retry-wait", "soon"),
    ("record-level.expire-time", "1 fortnight"),
    ("write-only", "yes"),
    ("write-only", " true"),
    ("snapshot.clean-empty-directories", "1"),
    ("manifest.format", "json"),
    ("manifest.compression", "rar"),
    ("file.compression", "rar"),
    ("metadata.stats-mode", "most"),
    ("fields.v.stats-mode", "truncate(x)"),
]


@pytest.mark.parametrize("key,value", REFUSED)
def test_out_of_range_option_values_are_refused(local_store, key, value):
    cat = local_store.catalog()
    cat.create_database("db")
    before = local_store.tree()
    opts = {"bucket": "1", key: value} if key != "bucket" else {key: value}
    with pytest.raises(errors.InvalidOptionError) as info:
        cat.create_table("db.t", SCHEMA, primary_keys=["k"], options=opts)
    msg = str(info.value)
    assert key in msg and repr(value) in msg, msg
    assert not cat.table_exists("db.t") and local_store.tree() == before


def test_snapshot_retention_min_above_max_is_refused(local_store):
    cat = local_store.catalog()
    cat.create_database("db")
    with pytest.raises(errors.InvalidOptionError, match="snapshot.num-retained.min.*snapshot.num-retained.max"):
        cat.create_table(
            "db.t",
            SCHEMA,
            primary_keys=["k"],
            options={"snapshot.num-retained.min": "20", "snapshot.num-retained.max": "5"},
        )
    with pytest.raises(errors.InvalidOptionError, match="commit.min-retry-wait"):
        cat.create_table(
            "db.t",
            SCHEMA,
            primary_keys=["k"],
            options={"commit.min-retry-wait": "1 min", "commit.max-retry-wait": "1 s"},
        )
    assert not cat.table_exists("db.t")


@pytest.mark.parametrize(
    "opts",
    [
        {"num-levels": "2"},
        {"bucket": "+3"},
        {"commit.max-retries": "0"},
        {"sequence.field": "s", "sequence.field.sort-order": "DESCENDING"},
        {"sequence.field": "s", "sequence.field.sort-order": "ascending"},
        {"file.compression.zstd-level": "22"},
        {"file.compression.zstd-level": "-5"},
        {"partition.default-name": "none"},
        {"write-only": "TRUE"},
        {"data-file.prefix": ""},
        {"dynamic-bucket.max-buckets": "-1", "bucket": "-1"},
    ],
)
def test_valid_boundary_values_still_work(local_store, opts):
    cat = local_store.catalog()
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1", **opts})
    t.write_arrow(ROWS)
    got = {r["k"]: r["v"] for r in t.to_arrow().to_pylist()}
    if opts.get("sequence.field.sort-order") == "ascending":
        assert got == {1: "a", 2: "b"}  # the larger sequence value (5) wins
    else:  # last write wins, or with DESCENDING the smaller sequence value (3), also the last row
        assert got == {1: "c", 2: "b"}


@pytest.mark.parametrize(
    "opts,needle",
    [
        ({"fields.vv.stats-mode": "full"}, "'vv'"),
        ({"fields.zz.default-value": "1"}, "'zz'"),
        ({"merge-engine": "partial-update", "fields.s,zz.sequence-group": "v"}, "'zz'"),
        ({"record-level.time-field": "zz", "record-level.expire-time": "1 d"}, "'zz'"),
        ({"record-level.time-field": "v", "record-level.expire-time": "1 d"}, "INT, BIGINT or TIMESTAMP"),
        ({"compaction.small-file-ratio": "abc"}, "'abc'"),
        ({"compaction.small-file-ratio": "nan"}, "'nan'"),
    ],
)
def test_options_naming_columns_must_name_usable_columns(local_store, opts, needle):
    cat = local_store.catalog()
    cat.create_database("db")
    with pytest.raises(errors.InvalidOptionError) as info:
        cat.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1", **opts})
    assert needle in str(info.value) and next(iter(opts.keys() - {"merge-engine", "record-level.expire-time"})) in str(
        info.value
    )
    assert not cat.table_exists("db.t")


def test_sequence_group_over_several_fields_is_still_accepted(local_store):
    cat = local_store.catalog()
    cat.create_database("db")
    schema = pa.schema([("k", pa.int64()), ("g1", pa.int64()), ("g2", pa.int64()), ("v", pa.string())])
    t = cat.create_table(
        "db.t",
        schema,
        primary_keys=["k"],
        options={"bucket": "1", "merge-engine": "partial-update", "fields.g1,g2.sequence-group": "v"},
    )
    t.write_arrow(pa.table({"k": [1, 1], "g1": [2, 1], "g2": [0, 5], "v": ["newer", "older"]}, schema=schema))
    assert t.to_arrow().to_pylist()[0]["v"] == "newer"


# One dialect (issue 10): the data file writer reads 'page-size' / 'parquet.*' with the same
# parsers as the table options, so a value the table accepted never fails at write time.
SIZE_SPELLINGS = ["64kib", "64 KiB", "64 kb", "64k", "65536", "65536 bytes", "64 kibibytes"]


@pytest.mark.parametrize("spelling", SIZE_SPELLINGS)
def test_page_size_accepted_by_the_table_is_honoured_by_the_writer(local_store, spelling):
    from lake_core.format.parquet_file import parquet_write_options

    cat = local_store.catalog()
    cat.create_database("db")
    options = {"bucket": "1", "page-size": spelling, "parquet.page.size": spelling}
    t = cat.create_table("db.t", SCHEMA, primary_keys=["k"], options=options)
    t.write_arrow(ROWS)  # the old writer refused '64kib' here, after the table had accepted it
    assert {r["k"]: r["v"] for r in t.to_arrow().to_pylist()} == {1: "c", 2: "b"}
    assert parquet_write_options(ROWS, options={"parquet.page.size": spelling})["data_page_size"] == 64 * 1024
    # Paimon's 'page-size' is its write buffer's memory page: it sizes no Parquet page
    assert parquet_write_options(ROWS, options={"page-size": "1 kib"})["data_page_size"] == 64 * 1024
    kib = parquet_write_options(ROWS, options={"page-size": spelling, "parquet.page.size": "1 kib"})
    assert kib["data_page_size"] == 1024


@pytest.mark.parametrize(
    "table_key,writer_key,value",
    [
        ("page-size", "parquet.page.size", "64 kibx"),
        ("page-size", "parquet.page.size", "lots"),
        ("write-only", "parquet.enable.dictionary", "yes"),
        ("write-only", "parquet.enable.dictionary", "1"),
        ("file.compression.zstd-level", "parquet.row-group.rows", " 2 "),
    ],
)
def test_writer_option_errors_read_like_table_option_errors(local_store, table_key, writer_key, value):
    from lake_core.format.data_file import write_data_file

    cat = local_store.catalog()
    cat.create_database("db")
    with pytest.raises(errors.InvalidOptionError) as table_error:
        cat.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1", table_key: value})
    with pytest.raises(errors.InvalidOptionError) as writer_error:
        write_data_file(ROWS, SCHEMA, "parquet", pa.BufferOutputStream(), options={writer_key: value})
    assert str(writer_error.value) == str(table_error.value).replace(table_key, writer_key)
