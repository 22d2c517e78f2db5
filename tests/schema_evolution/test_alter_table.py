"""alter_table: each change's effect on the next schema-N, every refusal (naming the column or
option and the reason, leaving the table as it was), and concurrent alters from real processes."""

from __future__ import annotations

import json
import multiprocessing as mp

import pyarrow as pa
import pytest

from lake_core import Catalog, LakeError, Move, SchemaChange
from lake_core.errors import InvalidOptionError, SchemaError, UnsupportedOptionError

SCHEMA = pa.schema(
    [
        ("dt", pa.string()),
        ("id", pa.int64()),
        ("a", pa.int32()),
        ("b", pa.string()),
        ("seq", pa.int64()),
        ("s", pa.struct([("x", pa.int32()), ("y", pa.string())])),
    ]
)


def make(warehouse, options=None, data=True):
    catalog = Catalog(warehouse)
    catalog.create_database("db", ignore_if_exists=True)
    opts = {"bucket": "2", "sequence.field": "seq"}
    opts.update(options or {})
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"], options=opts)
    if data:
        t.write_arrow(
            pa.table(
                {
                    "dt": ["d"],
                    "id": [1],
                    "a": pa.array([1], pa.int32()),
                    "b": ["x"],
                    "seq": [1],
                    "s": pa.array([{"x": 1, "y": "q"}], SCHEMA.field("s").type),
                }
            )
        )
    return catalog


def schema_json(warehouse, schema_id):
    from pathlib import Path
    from urllib.parse import urlparse

    return json.loads((Path(urlparse(warehouse).path) / "db.db" / "t" / "schema" / f"schema-{schema_id}").read_text())


def test_each_change_writes_the_next_schema_file(warehouse):
    catalog = make(warehouse)
    t = catalog.alter_table(
        "db.t",
        [
            SchemaChange.set_option("snapshot.num-retained.min", 5),
            SchemaChange.add_column("n", pa.struct([("p", pa.int64())]), comment="nested", move=Move.before("a")),
            SchemaChange.add_column("first", pa.float64(), move=Move.first()),
            SchemaChange.rename_column("b", "bee"),
            SchemaChange.update_column_type("a", pa.int64()),
            SchemaChange.update_column_comment("a", "widened"),
            SchemaChange.update_comment("table comment"),
        ],
    )
    d = schema_json(warehouse, 1)
    assert d["id"] == 1 and d["version"] == 3
    assert [(f["id"], f["name"]) for f in d["fields"]] == [
        (10, "first"),
        (0, "dt"),
        (1, "id"),
        (8, "n"),
        (2, "a"),
        (3, "bee"),
        (4, "seq"),
        (5, "s"),
    ]
    # s's children hold ids 6 and 7; the new column takes 8 and its nested field 9 (Java ReassignFieldId)
    assert d["highestFieldId"] == 10
    by = {f["name"]: f for f in d["fields"]}
    assert by["a"] == {"id": 2, "name": "a", "type": "BIGINT", "description": "widened"}
    assert by["n"]["description"] == "nested"
    assert by["n"]["type"]["fields"][0]["id"] == 9
    assert d["options"]["snapshot.num-retained.min"] == "5"
    assert d["comment"] == "table comment"
    t = catalog.alter_table(
        "db.t",
        [
            SchemaChange.remove_option("snapshot.num-retained.min"),
            SchemaChange.update_column_nullability("a", True),
            SchemaChange.drop_column("first"),
        ],
    )
    d2 = schema_json(warehouse, 2)
    assert "snapshot.num-retained.min" not in d2["options"]
    assert [f["name"] for f in d2["fields"]] == ["dt", "id", "n", "a", "bee", "seq", "s"]
    assert d2["highestFieldId"] == d["highestFieldId"]  # dropped ids are never reused
    assert t.schema.id == 2


def test_rename_follows_into_options(warehouse):
    catalog = make(
        warehouse,
        {
            "merge-engine": "partial-update",
            "fields.a.sequence-group": "b",
            "fields.b.aggregate-function": "last_non_null_value",
        },
        data=False,
    )
    catalog.alter_table("db.t", [SchemaChange.rename_column("seq", "version"), SchemaChange.rename_column("b", "bee")])
    opts = catalog.get_table("db.t").schema.options
    assert opts["sequence.field"] == "version"
    assert opts["fields.a.sequence-group"] == "bee"
    assert opts["fields.bee.aggregate-function"] == "last_non_null_value"
    assert "fields.b.aggregate-function" not in opts


REFUSALS = [
    (SchemaChange.drop_column("id"), SchemaError, ["'id'", "primary-key"]),
    (SchemaChange.drop_column("dt"), SchemaError, ["'dt'", "partition"]),
    (SchemaChange.rename_column("dt", "day"), SchemaError, ["'dt'", "partition"]),
    (SchemaChange.rename_column("id", "key"), SchemaError, ["'id'", "primary-key"]),
    (SchemaChange.rename_column("a", "b"), SchemaError, ["'b'", "already exists"]),
    (SchemaChange.rename_column("zz", "y"), SchemaError, ["'zz'", "does not exist"]),
    (SchemaChange.update_column_type("id", pa.int64()), SchemaError, ["'id'", "primary-key"]),
    (SchemaChange.update_column_type("dt", pa.string()), SchemaError, ["'dt'", "partition"]),
    (SchemaChange.update_column_type("a", pa.int16()), SchemaError, ["'a'", "INT", "SMALLINT", "losing"]),
    (SchemaChange.update_column_type("a", pa.float32()), SchemaError, ["'a'", "FLOAT", "losing"]),
    (SchemaChange.update_column_type("a", pa.string()), SchemaError, ["'a'", "STRING", "losing"]),
    (SchemaChange.update_column_type("b", pa.int64()), SchemaError, ["'b'", "BIGINT"]),
    (SchemaChange.update_column_type("s", pa.int64()), SchemaError, ["'s'", "nested"]),
    (SchemaChange.update_column_nullability("a", False), SchemaError, ["'a'", "NOT NULL"]),
    (SchemaChange.update_column_nullability("id", True), SchemaError, ["'id'", "primary-key"]),
    (SchemaChange.add_column("a", pa.int32()), SchemaError, ["'a'", "already exists"]),
    (SchemaChange.add_column("_KEY_x", pa.int32()), SchemaError, ["'_KEY_x'", "reserved"]),
    (SchemaChange.add_column("nn", pa.field("nn", pa.int32(), nullable=False)), SchemaError, ["'nn'", "NOT NULL"]),
    (SchemaChange.add_column("nn", pa.int32(), move=Move.after("nope")), SchemaError, ["'nope'", "does not exist"]),
    (SchemaChange.drop_column("seq"), SchemaError, ["'seq'", "sequence.field"]),
    (SchemaChange.set_option("merge-engine", "first-row"), UnsupportedOptionError, ["'merge-engine'", "snapshots"]),
    (SchemaChange.set_option("sequence.field", "a"), UnsupportedOptionError, ["'sequence.field'", "snapshots"]),
    (SchemaChange.remove_option("sequence.field"), UnsupportedOptionError, ["'sequence.field'"]),
    (SchemaChange.set_option("bucket-key", "id"), UnsupportedOptionError, ["'bucket-key'"]),
    (SchemaChange.set_option("primary-key", "id"), UnsupportedOptionError, ["'primary-key'"]),
    (SchemaChange.set_option("partition", "a"), UnsupportedOptionError, ["'partition'"]),
    (SchemaChange.set_option("bucket", "-1"), UnsupportedOptionError, ["'bucket'", "-1"]),
    (SchemaChange.set_option("bucket", "0"), InvalidOptionError, ["'bucket'", "'0'"]),
    (SchemaChange.remove_option("bucket"), UnsupportedOptionError, ["'bucket'"]),
    (SchemaChange.set_option("no.such.option", "1"), UnsupportedOptionError, ["'no.such.option'"]),
    (SchemaChange.set_option("commit.max-retries", "many"), InvalidOptionError, ["'commit.max-retries'", "many"]),
    (SchemaChange.set_option("changelog-producer", "sometimes"), InvalidOptionError, ["'changelog-producer'"]),
]


@pytest.mark.parametrize(
    "change,error,words", REFUSALS, ids=lambda v: repr(v)[:60] if isinstance(v, SchemaChange) else ""
)
def test_refusals_name_the_column_and_reason_and_change_nothing(warehouse, change, error, words):
    catalog = make(warehouse)
    before = catalog.get_table("db.t").to_arrow()
    with pytest.raises(error) as e:
        catalog.alter_table("db.t", [SchemaChange.add_column("fine", pa.int32()), change])
    msg = str(e.value)
    assert "db.t" in msg, msg
    for w in words:
        assert w in msg, (w, msg)
    t = catalog.get_table("db.t")
    assert t.schema.id == 0 and t.schema_manager.list_ids() == [0]
    assert t.to_arrow().equals(before)


def test_immutable_options_may_change_before_the_first_snapshot(warehouse):
    catalog = make(warehouse, data=False)
    t = catalog.alter_table(
        "db.t", [SchemaChange.set_option("merge-engine", "first-row"), SchemaChange.remove_option("sequence.field")]
    )
    assert t.options.merge_engine == "first-row"


def test_unknown_table_and_non_changes(warehouse):
    catalog = make(warehouse)
    with pytest.raises(LakeError, match="db.nope"):
        catalog.alter_table("db.nope", [SchemaChange.drop_column("a")])
    with pytest.raises(SchemaError, match="not a SchemaChange"):
        catalog.alter_table("db.t", ["drop a"])


def _alter_in_process(warehouse, change, barrier, queue):
    barrier.wait()
    try:
        Catalog(warehouse).alter_table("db.t", [change])
        queue.put(("ok", repr(change)))
    except LakeError as e:
        queue.put(("error", f"{type(e).__name__}: {e}"))


def _run_concurrently(warehouse, changes):
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(len(changes))
    queue = ctx.Queue()
    procs = [ctx.Process(target=_alter_in_process, args=(warehouse, c, barrier, queue)) for c in changes]
    for p in procs:
        p.start()
    results = [queue.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(60)
    return results


def test_concurrent_alters_never_overwrite_each_other(warehouse):
    catalog = make(warehouse)
    changes = [SchemaChange.add_column(f"c{i}", pa.int32()) for i in range(4)]
    results = _run_concurrently(warehouse, changes)
    assert all(r[0] == "ok" for r in results), results
    t = catalog.get_table("db.t")
    assert t.schema_manager.list_ids() == [0, 1, 2, 3, 4]
    assert {f"c{i}" for i in range(4)} <= set(t.schema.field_names)
    ids = [t.schema.field(f"c{i}").id for i in range(4)]
    assert len(set(ids)) == 4 and max(ids) == t.schema.highest_field_id


def test_conflicting_concurrent_alters_one_wins_the_other_fails_cleanly(warehouse):
    catalog = make(warehouse)
    results = _run_concurrently(
        warehouse, [SchemaChange.rename_column("b", "b1"), SchemaChange.rename_column("b", "b2")]
    )
    assert sorted(r[0] for r in results) == ["error", "ok"], results
    err = next(r[1] for r in results if r[0] == "error")
    assert "'b'" in err and "does not exist" in err
    t = catalog.get_table("db.t")
    assert t.schema_manager.list_ids() == [0, 1]
    assert ("b1" in t.schema.field_names) != ("b2" in t.schema.field_names)
    assert t.to_arrow().num_rows == 1
