"""Model tests: random writes interleaved with every kind of schema change; after each step the
table (old files read through the new schema, merged across schema versions) must equal a plain
dict model that stores each key's values by field id."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from lake_core import Catalog, Move, SchemaChange

TYPES = {"int": pa.int32(), "str": pa.string(), "flt": pa.float32()}
WIDER = {"int": ("big", pa.int64()), "flt": ("dbl", pa.float64())}


def value(rnd: random.Random, kind: str):
    if rnd.random() < 0.2:
        return None
    if kind in ("int", "big"):
        return rnd.randint(-1000, 1000)
    if kind in ("flt", "dbl"):
        return rnd.randint(-200, 200) * 0.5  # exact in float32
    return rnd.choice(["", "a", "zz", "é", "a longer string value"]) + str(rnd.randint(0, 9))


class Model:
    """Columns: name -> (field id, kind); rows: key -> {field id: value}."""

    def __init__(self, engine: str):
        self.engine = engine
        self.cols: dict[str, tuple[int, str]] = {"v0": (2, "int"), "v1": (3, "str")}
        self.next_id = 4
        self.rows: dict[tuple, dict[int, object]] = {}

    def upsert(self, key: tuple, values: dict[int, object]) -> None:
        old = self.rows.get(key)
        if old is None:
            self.rows[key] = dict(values)
        elif self.engine == "deduplicate":
            self.rows[key] = dict(values)
        elif self.engine == "partial-update":
            old.update({fid: v for fid, v in values.items() if v is not None})
        # first-row: the first row of a key stays

    def expected(self) -> list[dict]:
        out = []
        for (dt, k), vals in self.rows.items():
            row = {"dt": dt, "k": k}
            for name, (fid, _kind) in self.cols.items():
                row[name] = vals.get(fid)
            out.append(row)
        return sorted(out, key=lambda r: (r["dt"], r["k"]))


def arrow_schema(model: Model) -> pa.Schema:
    fields = [pa.field("dt", pa.string()), pa.field("k", pa.int64())]
    for name, (_fid, kind) in model.cols.items():
        fields.append(pa.field(name, TYPES.get(kind) or WIDER[{"big": "int", "dbl": "flt"}[kind]][1]))
    return pa.schema(fields)


def write_batch(rnd: random.Random, table, model: Model) -> None:
    rows = []
    seen = set()
    for _ in range(rnd.randint(1, 25)):
        key = (rnd.choice(["2024-01-01", "2024-01-02"]), rnd.randint(0, 40))
        if key in seen:
            continue
        seen.add(key)
        row = {"dt": key[0], "k": key[1]}
        vals = {}
        for name, (fid, kind) in model.cols.items():
            row[name] = vals[fid] = value(rnd, kind)
        rows.append(row)
        model.upsert(key, vals)
    table.write_arrow(pa.Table.from_pylist(rows, schema=arrow_schema(model)))


def alter(rnd: random.Random, catalog: Catalog, model: Model):
    names = list(model.cols)
    ops = ["add", "rename"] + (["drop"] if len(names) > 1 else [])
    if any(kind in WIDER for _fid, kind in model.cols.values()):
        ops.append("widen")
    op = rnd.choice(ops)
    if op == "add":
        kind = rnd.choice(list(TYPES))
        name = f"c{model.next_id}"
        pos = rnd.choice([None, "first", "after"])
        move = None
        if pos == "after":
            move = Move.after(rnd.choice(names))
        elif pos == "first":
            move = Move.first()
        change = SchemaChange.add_column(name, TYPES[kind], comment=f"added {kind}", move=move)
        model.cols[name] = (model.next_id, kind)
        model.next_id += 1
    elif op == "rename":
        old = rnd.choice(names)
        new = f"{old}_r"
        change = SchemaChange.rename_column(old, new)
        model.cols = {new if n == old else n: v for n, v in model.cols.items()}
    elif op == "drop":
        old = rnd.choice(names)
        change = SchemaChange.drop_column(old)
        del model.cols[old]
    else:
        name = rnd.choice([n for n, (_f, kind) in model.cols.items() if kind in WIDER])
        fid, kind = model.cols[name]
        wide, t = WIDER[kind]
        change = SchemaChange.update_column_type(name, t)
        model.cols[name] = (fid, wide)
    return catalog.alter_table("db.t", [change])


def rows_of(t: pa.Table, model: Model) -> list[dict]:
    assert t.column_names == ["dt", "k"] + [n for n in t.column_names if n not in ("dt", "k")]
    return sorted(t.to_pylist(), key=lambda r: (r["dt"], r["k"]))


def check(table, model: Model, rnd: random.Random) -> None:
    got = table.to_arrow()
    assert set(got.column_names) == {"dt", "k", *model.cols}
    assert got.schema.field("k").type == pa.int64()
    assert rows_of(got.select(["dt", "k", *model.cols]), model) == model.expected()
    # Filters over value columns: pruning by (evolved) statistics must never drop a matching row.
    name = rnd.choice(list(model.cols))
    fid, kind = model.cols[name]
    pb = table.predicate_builder()
    if kind == "str" or rnd.random() < 0.3:
        pred, keep = pb.is_null(name), (lambda v: v is None)
    else:
        pred, keep = pb.greater_than(name, 0), (lambda v: v is not None and v > 0)
    filtered = table.to_arrow(filter=pred).select(["dt", "k", *model.cols])
    assert rows_of(filtered, model) == [r for r in model.expected() if keep(r[name])]


@pytest.mark.parametrize("engine", ["deduplicate", "partial-update", "first-row"])
@pytest.mark.parametrize("seed", [1, 2])
def test_writes_and_schema_changes_match_the_model(warehouse, engine, seed):
    rnd = random.Random(seed * 31 + len(engine))
    catalog = Catalog(warehouse)
    catalog.create_database("db")
    model = Model(engine)
    table = catalog.create_table(
        "db.t",
        arrow_schema(model),
        primary_keys=["dt", "k"],
        partition_keys=["dt"],
        options={"bucket": "2", "merge-engine": engine, "metadata.stats-mode": "full"},
    )
    for step in range(14):
        if step % 2 == 1:
            table = alter(rnd, catalog, model)
            assert table.schema.id == catalog.get_table("db.t").schema.id
        write_batch(rnd, table, model)
        check(table, model, rnd)
    # A fresh handle reads the same table.
    check(Catalog(warehouse).get_table("db.t"), model, rnd)
    assert catalog.get_table("db.t").schema.id == 7


def test_reads_are_by_field_id_not_by_name(warehouse):
    """Drop a column and add another under the same name: the old values never come back."""
    catalog = Catalog(warehouse)
    catalog.create_database("db")
    t = catalog.create_table(
        "db.t", pa.schema([("k", pa.int64()), ("v", pa.string())]), primary_keys=["k"], options={"bucket": "1"}
    )
    t.write_arrow(pa.table({"k": [1, 2], "v": ["old1", "old2"]}))
    catalog.alter_table("db.t", SchemaChange.drop_column("v"))
    t = catalog.alter_table("db.t", SchemaChange.add_column("v", pa.string()))
    assert t.to_arrow().sort_by("k").to_pylist() == [{"k": 1, "v": None}, {"k": 2, "v": None}]
    t.write_arrow(pa.table({"k": [2], "v": ["new2"]}))
    assert t.to_arrow().sort_by("k").to_pylist() == [{"k": 1, "v": None}, {"k": 2, "v": "new2"}]
    # Filtering on the new column must not be fooled by the old column's statistics.
    pb = t.predicate_builder()
    assert t.to_arrow(filter=pb.equal("v", "old1")).num_rows == 0
    assert t.to_arrow(filter=pb.is_null("v")).to_pylist() == [{"k": 1, "v": None}]


def test_widened_types_are_cast_in_merges_and_filters(warehouse):
    catalog = Catalog(warehouse)
    catalog.create_database("db")
    schema = pa.schema(
        [
            ("k", pa.int32()),
            ("i", pa.int16()),
            ("d", pa.decimal128(6, 2)),
            ("ts", pa.timestamp("ms")),
            ("f", pa.float32()),
        ]
    )
    t = catalog.create_table("db.t", schema, primary_keys=["k"], options={"bucket": "2", "metadata.stats-mode": "full"})
    import datetime as dt
    from decimal import Decimal

    t.write_arrow(
        pa.table(
            {
                "k": pa.array([1, 2, 3], pa.int32()),
                "i": pa.array([-32768, 7, 32767], pa.int16()),
                "d": pa.array([Decimal("9999.99"), Decimal("-1.5"), None], pa.decimal128(6, 2)),
                "ts": pa.array([dt.datetime(2024, 1, 1, 0, 0, 0, 123000)] * 3, pa.timestamp("ms")),
                "f": pa.array([0.5, 1.25, -3.0], pa.float32()),
            }
        )
    )
    t = catalog.alter_table(
        "db.t",
        [
            SchemaChange.update_column_type("i", pa.int64()),
            SchemaChange.update_column_type("d", pa.decimal128(12, 4)),
            SchemaChange.update_column_type("ts", pa.timestamp("us")),
            SchemaChange.update_column_type("f", pa.float64()),
        ],
    )
    assert t.arrow_schema().field("i").type == pa.int64()
    t.write_arrow(
        pa.table(
            {
                "k": pa.array([3], pa.int32()),
                "i": pa.array([2**40], pa.int64()),
                "d": pa.array([Decimal("12345678.1234")], pa.decimal128(12, 4)),
                "ts": pa.array([dt.datetime(2024, 1, 2, 0, 0, 0, 1)], pa.timestamp("us")),
                "f": pa.array([0.1], pa.float64()),
            }
        )
    )
    got = t.to_arrow().sort_by("k")
    assert got.schema.field("d").type == pa.decimal128(12, 4)
    assert got.column("i").to_pylist() == [-32768, 7, 2**40]
    assert got.column("d").to_pylist() == [Decimal("9999.9900"), Decimal("-1.5000"), Decimal("12345678.1234")]
    assert got.column("ts").to_pylist()[2] == dt.datetime(2024, 1, 2, 0, 0, 0, 1)
    assert got.column("f").to_pylist() == [0.5, 1.25, 0.1]
    pb = t.predicate_builder()
    assert t.to_arrow(filter=pb.less_than("i", -30000)).column("k").to_pylist() == [1]
    assert t.to_arrow(filter=pb.greater_than("d", Decimal("9999"))).sort_by("k").column("k").to_pylist() == [1, 3]


def test_writer_opened_before_an_alter_fails_clearly_and_a_fresh_handle_succeeds(warehouse):
    """A handle opened before an alter refuses to commit files of the old schema under the new
    one (nothing lands); the same rows through a fresh handle are evolved like any old file."""
    from lake_core.errors import StaleTableError

    catalog = Catalog(warehouse)
    catalog.create_database("db")
    t = catalog.create_table(
        "db.t",
        pa.schema([("k", pa.int64()), ("a", pa.int32()), ("b", pa.string())]),
        primary_keys=["k"],
        options={"bucket": "2"},
    )
    t.write_arrow(pa.table({"k": [1], "a": pa.array([1], pa.int32()), "b": ["x"]}))
    wb = t.new_batch_write_builder()
    w = wb.new_write()
    w.write_arrow(pa.table({"k": [2], "a": pa.array([2], pa.int32()), "b": ["y"]}))
    new = catalog.alter_table(
        "db.t",
        [
            SchemaChange.rename_column("b", "bee"),
            SchemaChange.add_column("c", pa.int64()),
            SchemaChange.update_column_type("a", pa.int64()),
        ],
    )
    with pytest.raises(StaleTableError, match="schema of table db.t changed"):
        wb.new_commit().commit(w.prepare_commit())
    assert new.latest_snapshot().id == 1
    assert new.to_arrow().to_pylist() == [{"k": 1, "a": 1, "bee": "x", "c": None}]
    new.write_arrow(pa.table({"k": [2], "a": [2], "bee": ["y"], "c": [None]}))
    assert new.latest_snapshot().schema_id == new.schema.id
    assert new.to_arrow().sort_by("k").to_pylist() == [
        {"k": 1, "a": 1, "bee": "x", "c": None},
        {"k": 2, "a": 2, "bee": "y", "c": None},
    ]
