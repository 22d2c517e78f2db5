"""Partition selectors of maintenance calls: a selector that matches nothing is an error that
changes nothing (a typo is never a silent no-op), text and typed values select alike, and a rescale
that would change nothing writes nothing."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from lake_core import Catalog
from lake_core.errors import InvalidOptionError, PartitionNotFoundError

SCHEMA = pa.schema([("dt", pa.string()), ("hr", pa.int32()), ("k", pa.int64()), ("v", pa.string())])


def _tree(root) -> dict:
    out = {}
    for d, _dirs, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root)] = fh.read()
    return out


@pytest.fixture
def table(warehouse):
    catalog = Catalog(warehouse)
    catalog.create_database("db")
    t = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["dt", "hr", "k"], partition_keys=["dt", "hr"], options={"bucket": "2"}
    )
    for hr in (1, 2):
        t.write_arrow(
            pa.table({"dt": ["2024-01-01"] * 4, "hr": [hr] * 4, "k": [1, 2, 3, 4], "v": list("abcd")}, schema=SCHEMA)
        )
    return catalog, t


@pytest.mark.parametrize(
    "call",
    [
        lambda t: t.maintenance.rescale(bucket=64, partitions=[{"dt": "2099-01-01"}]),
        lambda t: t.maintenance.rescale(bucket=64, partitions=[{"dt": "2024-01-01", "hr": 1}, {"hr": 7}]),
        lambda t: t.maintenance.plan_rescale(bucket=64, partitions="dt=2099-01-01"),
        lambda t: t.maintenance.compact(full=True, partitions={"dt": "2099-01-01"}),
        lambda t: t.maintenance.compact(full=True, partitions=["dt=2024-01-01/hr=9"]),
        lambda t: t.maintenance.plan_compaction(full=True, partitions={"hr": 3}),
    ],
    ids=["rescale typo", "rescale one of two", "plan_rescale text", "compact typo", "compact text", "plan_compaction"],
)
def test_a_selector_matching_nothing_is_refused_and_changes_nothing(table, warehouse_path, call):
    catalog, t = table
    before = _tree(warehouse_path)
    with pytest.raises(PartitionNotFoundError) as err:
        call(t)
    message = str(err.value)
    assert "db.t" in message and "matches no partition with data files" in message
    assert "dt=2024-01-01/hr=1" in message  # it says which partitions do hold data
    assert _tree(warehouse_path) == before  # no schema-N with bucket=64, no snapshot, no file
    assert catalog.get_table("db.t").options.bucket == 2


def test_text_and_typed_selectors_select_the_same_partition(table):
    catalog, t = table
    by_text = t.maintenance.plan_compaction(full=True, partitions="dt=2024-01-01/hr=2")
    by_str_value = t.maintenance.plan_compaction(full=True, partitions={"dt": "2024-01-01", "hr": "2"})
    by_int_value = t.maintenance.plan_compaction(full=True, partitions=[{"hr": 2}])
    units = {tuple((u.partition_values, u.bucket) for u in p.units) for p in (by_text, by_str_value, by_int_value)}
    assert len(units) == 1 and {v for v, _b in next(iter(units))} == {("2024-01-01", 2)}
    with pytest.raises(InvalidOptionError, match="'hr' is int32; 'two' is not a value of that type"):
        t.maintenance.compact(partitions={"hr": "two"})
    result = t.maintenance.rescale(bucket=3, partitions=["dt=2024-01-01/hr=1"])
    assert [p.partition for p in result.partitions] == ["dt=2024-01-01/hr=1"]
    assert t.maintenance.rescale_partition(partition="dt=2024-01-01/hr=2", bucket=3).partition == "dt=2024-01-01/hr=2"


def test_a_rescale_that_changes_nothing_writes_nothing(table, warehouse_path):
    catalog, t = table
    before = _tree(warehouse_path)
    result = t.maintenance.rescale(bucket=2)
    assert result.partitions_rescaled == 0 and result.snapshot_id is None and result.schema_id == 0
    assert _tree(warehouse_path) == before
    # a stale handle (bucket 2) asking for the count another handle already set: no identical schema
    catalog.get_table("db.t").maintenance.set_bucket(bucket=4)
    assert catalog.get_table("db.t").schema.id == 1
    t.maintenance.set_bucket(bucket=4)
    assert catalog.get_table("db.t").schema.id == 1
    t.maintenance.rescale(bucket=4, partitions=[{"hr": 1}])
    fresh = catalog.get_table("db.t")
    assert fresh.schema.id == 1 and fresh.options.bucket == 4
    assert sorted(r["k"] for r in fresh.to_arrow().to_pylist()) == [1, 1, 2, 2, 3, 3, 4, 4]


@pytest.mark.s3
def test_a_selector_matching_nothing_changes_nothing_on_s3(s3_warehouse):
    catalog = Catalog(s3_warehouse.uri, storage_options=s3_warehouse.storage_options)
    catalog.create_database("db")
    t = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["dt", "hr", "k"], partition_keys=["dt", "hr"], options={"bucket": "2"}
    )
    t.write_arrow(pa.table({"dt": ["2024-01-01"] * 2, "hr": [1, 1], "k": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    fs = s3_warehouse.filesystem()
    root = s3_warehouse.uri[len("s3://") :]

    def objects():
        return {p: fs.cat_file(p) for p in fs.find(root)}

    before = objects()
    for call in (
        lambda: t.maintenance.rescale(bucket=64, partitions=[{"dt": "2099-01-01"}]),
        lambda: t.maintenance.compact(full=True, partitions="dt=2099-01-01/hr=1"),
    ):
        with pytest.raises(PartitionNotFoundError, match="matches no partition with data files"):
            call()
    fs.invalidate_cache()
    assert objects() == before
