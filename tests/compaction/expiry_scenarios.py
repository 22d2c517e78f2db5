"""Record-expiry scenarios shared by the compaction tests and the Java interop tests: each builds a
table with real files and returns it with a plain dict model of the rows a reader should see
({key: row without the key}); the tests run the expiry and compare."""

from __future__ import annotations

import time
from collections.abc import Callable

import pyarrow as pa

from lake_core import Catalog, SchemaChange

NOW = int(time.time())
DAY = 86_400
TTL = {"record-level.expire-time": "1 d", "record-level.time-field": "ts"}


def read_rows(table) -> dict:
    """The table's rows as {id: row without id}."""
    return {r.pop("id"): r for r in table.to_arrow().to_pylist()}


def unexpired(model: dict, *, cutoff_s: int = NOW - DAY, field: str = "ts") -> dict:
    """``model`` after expiry at ``cutoff_s`` (NULL times never expire)."""
    return {k: r for k, r in model.items() if r[field] is None or r[field] >= cutoff_s}


# -- item 3: a schema change between writing the files and expiring them -------------------------
ALTERS: dict[str, tuple[dict, Callable[[], list] | None]] = {
    "ttl_turned_on": ({}, lambda: [SchemaChange.set_option(k, v) for k, v in TTL.items()]),
    "column_added": (TTL, lambda: [SchemaChange.add_column("note", pa.string())]),
    # the option follows the rename; the old files name the column 'ts'
    "time_field_renamed": (TTL, lambda: [SchemaChange.rename_column("ts", "event_ts")]),
    "time_field_widened": (TTL, lambda: [SchemaChange.update_column_type("ts", pa.int64())]),
    "rescaled": (TTL, None),  # rescale sets 'bucket' (a schema change) and rewrites partition 'a' only
}


def altered_table(catalog: Catalog, alter: str):
    """Two partitions, 2 of 6 rows expired (ids 2 and 4, one per partition), written under schema 0;
    then ``alter``. Returns (table, model, time field name)."""
    options, changes = ALTERS[alter]
    schema = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("ts", pa.int32()), ("v", pa.string())])
    t = catalog.create_table(
        "db.t",
        schema=schema,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": "1", "write-only": "true", **options},
    )
    ages = {1: 0, 2: 2 * DAY, 3: 0, 4: 3 * DAY, 5: 3600, 6: 0}
    model = {i: {"dt": "a" if i <= 3 else "b", "ts": NOW - age, "v": f"v{i}"} for i, age in ages.items()}
    t.write_arrow(pa.Table.from_pylist([{"id": i, **r} for i, r in model.items()], schema=schema))
    if changes is None:
        t.maintenance.rescale(bucket=2, partitions=[{"dt": "a"}])
        t = catalog.get_table("db.t")
    else:
        t = catalog.alter_table("db.t", changes())
    field = t.options.get("record-level.time-field")  # 'event_ts' after the rename
    model = {i: {(field if k == "ts" else k): v for k, v in r.items()} for i, r in model.items()}
    if "note" in t.schema.field_names:
        model = {i: {**r, "note": None} for i, r in model.items()}
    return t, model, field


# -- item 4: expiry of merged rows ------------------------------------------------------------
ENGINES = {
    "deduplicate": {},
    "partial-update": {"merge-engine": "partial-update"},
    "aggregation": {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"},  # ts: last non-NULL
    "aggregation_ts_max": {
        "merge-engine": "aggregation",
        "fields.v.aggregate-function": "sum",
        "fields.ts.aggregate-function": "max",
    },
    "first-row": {"merge-engine": "first-row"},
}
# ts INT: the Java 1.0 build of the interop tests writes (and expires) only INT time fields by default
MERGE_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("ts", pa.int32()), ("v", pa.int64())])


def _merge(engine: str, a: dict, b: dict) -> dict:
    """The model of merging ``b`` (newer) into ``a`` (no NULLs in these scenarios)."""
    if engine == "first-row":
        return a
    if engine.startswith("aggregation"):
        ts = max(a["ts"], b["ts"]) if engine == "aggregation_ts_max" else b["ts"]
        return {"ts": ts, "v": a["v"] + b["v"]}
    return b


def apply_writes(engine: str, model: dict, rows: list[dict]) -> dict:
    out = dict(model)
    for r in rows:
        row = {"ts": r["ts"], "v": r["v"]}
        out[r["id"]] = _merge(engine, out[r["id"]], row) if r["id"] in out else row
    return out


LATE_CUTOFF_S = NOW - DAY // 2  # the second full compaction runs half a day later


def late_update_table(catalog: Catalog, engine: str, *, extra_options: dict | None = None):
    """Key 1 = v1 (fresh), fully compacted; then key 1 = v2 with a timestamp 10 days old (late data).
    Key 4's first row (20 h old) expires at the second compaction, half a day later, although a fresh
    row of key 4 arrived meanwhile. Returns (table, merged model before expiry, the second batch):
    the caller runs the second full compaction with ``now_ms=(NOW + DAY // 2) * 1000``."""
    t = catalog.create_table(
        "db.t",
        schema=MERGE_SCHEMA,
        primary_keys=["id"],
        options={"bucket": "1", "write-only": "true", **TTL, **ENGINES[engine], **(extra_options or {})},
    )
    first = [
        {"id": 1, "ts": NOW, "v": 1},
        {"id": 2, "ts": NOW, "v": 1},
        {"id": 3, "ts": NOW - 3 * DAY, "v": 1},
        {"id": 4, "ts": NOW - 20 * 3600, "v": 4},
    ]
    t.write_arrow(pa.Table.from_pylist(first, schema=MERGE_SCHEMA))
    t.maintenance.compact(full=True)
    model = unexpired(apply_writes(engine, {}, first))  # key 3 expired at once
    second = [{"id": 1, "ts": NOW - 10 * DAY, "v": 2}, {"id": 4, "ts": NOW, "v": 40}]
    t.write_arrow(pa.Table.from_pylist(second, schema=MERGE_SCHEMA))
    return t, apply_writes(engine, model, second)


def layered_table(catalog: Catalog, *, deletion_vectors: bool):
    """5,000 fresh keys at the top level, then two small level-0 runs: key 1 = an expired update,
    key 2 = a fresh one. A universal compaction merges the two runs into level 4 only (trigger 2).
    Returns (table, merged model before expiry)."""
    options = {"bucket": "1", "write-only": "true", **TTL, "num-sorted-run.compaction-trigger": "2", "num-levels": "6"}
    if deletion_vectors:
        options["deletion-vectors.enabled"] = "true"
    t = catalog.create_table("db.t", schema=MERGE_SCHEMA, primary_keys=["id"], options=options)
    n = 5_000
    t.write_arrow(pa.table({"id": range(n), "ts": [NOW] * n, "v": range(n)}, schema=MERGE_SCHEMA))
    t.maintenance.compact(full=True)
    model = {i: {"ts": NOW, "v": i} for i in range(n)}
    for row in ({"id": 1, "ts": NOW - 10 * DAY, "v": -1}, {"id": 2, "ts": NOW, "v": -2}):
        t.write_arrow(pa.Table.from_pylist([row], schema=MERGE_SCHEMA))
        model = apply_writes("deduplicate", model, [row])
    return t, model


def levels(table) -> list[int]:
    return sorted(e.file.level for e in table.manifest_store.live_entries(table.latest_snapshot()))
