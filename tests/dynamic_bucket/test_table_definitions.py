"""What the catalog accepts and refuses for dynamic-bucket and cross-partition tables."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_core import Catalog
from lake_core.errors import InvalidOptionError, LakeError, UnsupportedOptionError

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])


@pytest.fixture
def catalog(warehouse):
    c = Catalog(warehouse)
    c.create_database("db")
    return c


def test_modes(catalog):
    assert catalog.create_table("db.a", SCHEMA, primary_keys=["id"]).bucket_mode == "dynamic"
    assert (
        catalog.create_table(
            "db.b", SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"], options={"bucket": "-1"}
        ).bucket_mode
        == "dynamic"
    )
    assert (
        catalog.create_table("db.c", SCHEMA, primary_keys=["id"], partition_keys=["dt"]).bucket_mode
        == "cross-partition"
    )
    assert catalog.create_table("db.d", SCHEMA, primary_keys=["id"], options={"bucket": "2"}).bucket_mode == "fixed"
    assert catalog.create_table("db.e", SCHEMA).bucket_mode == "unaware"


def test_fixed_bucket_with_key_omitting_partition_explains_both_choices(catalog):
    with pytest.raises(InvalidOptionError) as e:
        catalog.create_table("db.t", SCHEMA, primary_keys=["id"], partition_keys=["dt"], options={"bucket": "4"})
    msg = str(e.value)
    assert "add ['dt'] to the primary key" in msg
    assert "remove the 'bucket' option" in msg and "cross-partition upsert" in msg
    assert catalog.list_tables("db") == []


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(primary_keys=["id"], partition_keys=["dt"], options={"bucket-key": "id"}), "bucket-key"),
        (dict(primary_keys=["id"], options={"bucket-key": "id"}), "bucket-key"),
        (dict(primary_keys=["id"], partition_keys=["dt"], options={"sequence.field": "v"}), "sequence.field"),
        (dict(primary_keys=["id"], options={"dynamic-bucket.target-row-num": "0"}), "target-row-num"),
        (dict(primary_keys=["id"], options={"dynamic-bucket.max-buckets": "0"}), "max-buckets"),
        (dict(primary_keys=["id"], options={"dynamic-bucket.max-buckets": "40000"}), "max-buckets"),
        (dict(primary_keys=["id"], options={"dynamic-bucket.initial-buckets": "x"}), "initial-buckets"),
        (
            dict(
                primary_keys=["id"], options={"dynamic-bucket.initial-buckets": "4", "dynamic-bucket.max-buckets": "2"}
            ),
            "initial-buckets",
        ),
        (
            dict(primary_keys=["id"], partition_keys=["dt"], options={"cross-partition-upsert.index-ttl": "soon"}),
            "index-ttl",
        ),
    ],
)
def test_refused_definitions(catalog, kwargs, match):
    with pytest.raises(InvalidOptionError, match=match):
        catalog.create_table("db.t", SCHEMA, **kwargs)
    assert catalog.list_tables("db") == []


def test_dynamic_table_can_require_fixed_buckets_for_distributed_writers(catalog):
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"])
    with pytest.raises(UnsupportedOptionError, match="dynamic bucket mode"):
        t.require_fixed_bucket("a distributed write")
    catalog.create_table("db.f", SCHEMA, primary_keys=["id"], options={"bucket": "2"}).require_fixed_bucket()


def test_incomplete_hash_index_is_refused(catalog):
    """Data in a bucket without a HASH file (a writer that does not maintain the index) would make
    new keys duplicable: the writer refuses, as pypaimon does."""
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"])
    t.write_arrow(pa.table({"dt": ["a"], "id": [1], "v": ["x"]}, schema=SCHEMA))
    # drop the index from the table's metadata: commit an index DELETE only
    from lake_core.bucket.hash_index import as_delete
    from lake_core.commit.file_store_commit import FileStoreCommit
    from lake_core.commit.messages import CommitMessage

    (e,) = t.manifest_store.index_entries(t.latest_snapshot())
    FileStoreCommit(t.store, hooks=t).commit(
        [CommitMessage(e.partition, e.bucket, -1, deleted_index_files=(as_delete(e),))]
    )
    assert t.manifest_store.index_entries(t.latest_snapshot()) == []
    with pytest.raises(LakeError, match="no HASH index"):
        t.write_arrow(pa.table({"dt": ["a"], "id": [2], "v": ["y"]}, schema=SCHEMA))
