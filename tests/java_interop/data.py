"""Tables and rows shared by the Java interop tests."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa

from lake_core import Catalog

ALL_TYPES = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("part", pa.string(), nullable=False),
        ("ti", pa.int8()),
        ("si", pa.int16()),
        ("i", pa.int32()),
        ("f", pa.float32()),
        ("d", pa.float64()),
        ("dec", pa.decimal128(10, 2)),
        ("bigdec", pa.decimal128(38, 10)),
        ("flag", pa.bool_()),
        ("s", pa.string()),
        ("b", pa.binary()),
        ("day", pa.date32()),
        ("t", pa.time32("ms")),
        ("ts0", pa.timestamp("s")),
        ("ts3", pa.timestamp("ms")),
        ("ts6", pa.timestamp("us")),
        ("ts9", pa.timestamp("ns")),
        ("ltz3", pa.timestamp("ms", tz="UTC")),
        ("ltz6", pa.timestamp("us", tz="UTC")),
        ("ltz9", pa.timestamp("ns", tz="UTC")),
        ("arr9", pa.list_(pa.timestamp("ns"))),
        ("arr", pa.list_(pa.int32())),
        ("sarr", pa.list_(pa.string())),
        ("m", pa.map_(pa.string(), pa.int64())),
        ("row", pa.struct([("x", pa.int32()), ("y", pa.string()), ("z", pa.list_(pa.decimal128(5, 1)))])),
    ]
)


def all_types_rows(ids, salt: int = 0, parts=("a", "b", "c")) -> pa.Table:
    """One row per id with every type, NULLs in every nullable column now and then, and edge
    values: NaN/infinities, empty strings and bytes, negative decimals, pre-1970 dates and whole
    seconds (pre-1970 fractions in ORC: see test_orc_pre_1970_fractional_timestamps)."""
    ids = list(ids)

    def maybe(i, v):
        return None if (i + salt) % 7 == 3 else v

    specials = [float("nan"), float("inf"), float("-inf"), -0.0, 1e300]
    return pa.table(
        {
            "id": ids,
            "part": [parts[i % len(parts)] for i in ids],
            "ti": [maybe(i, (i + salt) % 256 - 128) for i in ids],
            "si": [maybe(i, (i * 7 + salt) % 65536 - 32768) for i in ids],
            "i": [maybe(i, i * 1000 + salt - 2**31 if i % 3 == 0 else i + salt) for i in ids],
            "f": [maybe(i, specials[i % 5] if i % 4 == 1 else 0.1 * i + salt) for i in ids],
            "d": [maybe(i, specials[i % 5] if i % 4 == 2 else 1.1 * i - salt) for i in ids],
            "dec": [maybe(i, decimal.Decimal(f"{(i + salt) * (-1) ** i}.{i % 100:02d}")) for i in ids],
            "bigdec": [maybe(i, decimal.Decimal(f"-1234567890123456789012345678.{i:010d}")) for i in ids],
            "flag": [maybe(i, (i + salt) % 2 == 0) for i in ids],
            "s": [maybe(i, "" if i % 5 == 0 else "x" * ((i + salt) % 20) + "é✓") for i in ids],
            "b": [maybe(i, bytes([i % 256, salt % 256, 0]) * (i % 4)) for i in ids],
            "day": [maybe(i, dt.date(1969, 12, 25) + dt.timedelta(days=i * 37 + salt)) for i in ids],
            "t": pa.array([maybe(i, (i * 3_600_123 + salt) % 86_400_000) for i in ids], pa.time32("ms")),
            "ts0": [maybe(i, dt.datetime(1960, 1, 1) + dt.timedelta(seconds=i * 99_991 + salt)) for i in ids],
            "ts3": [maybe(i, dt.datetime(2024, 1, 1, 12, 0, 0, 123000) + dt.timedelta(seconds=i)) for i in ids],
            "ts6": [maybe(i, dt.datetime(2001, 1, 1, 0, 0, 0, 123456) + dt.timedelta(minutes=i + salt)) for i in ids],
            "ts9": pa.array(
                [maybe(i, 1_700_000_000_123_456_789 + i * 86_399_999_999_937 + salt) for i in ids], pa.timestamp("ns")
            ),
            "ltz9": pa.array(
                [maybe(i, 1_000_000_000_000_000_001 * (i % 3) + salt) for i in ids], pa.timestamp("ns", tz="UTC")
            ),
            "arr9": pa.array([maybe(i, [i * 1_000_000_001, None]) for i in ids], pa.list_(pa.timestamp("ns"))),
            "ltz3": [
                maybe(i, dt.datetime(2024, 6, 1, 0, 0, 0, 7000, tzinfo=dt.UTC) + dt.timedelta(hours=i)) for i in ids
            ],
            "ltz6": [
                maybe(i, dt.datetime(2024, 6, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=i * 7 + salt)) for i in ids
            ],
            "arr": [maybe(i, [i, None, salt] if i % 3 else []) for i in ids],
            "sarr": [maybe(i, ["", None, "q" * (i % 3)]) for i in ids],
            "m": [maybe(i, [("k", i), ("z", salt), ("n", None)] if i % 2 else []) for i in ids],
            "row": [
                maybe(i, {"x": i if i % 2 else None, "y": f"r{i}", "z": [decimal.Decimal(f"{i % 999}.5"), None]})
                for i in ids
            ],
        },
        schema=ALL_TYPES,
    )


#: TIMESTAMP(7..9) columns: Java 1.0 has no Avro encoding for them (its AvroSchemaConverter takes
#: precision <= 6), so Avro tables leave them out (see test_avro_nanosecond_timestamps).
NANOS_COLUMNS = ("ts9", "ltz9", "arr9")


def all_types_for(file_format: str, rows: pa.Table | None = None):
    """ALL_TYPES (or ``rows``) without the nanosecond columns for Avro."""
    drop = NANOS_COLUMNS if file_format == "avro" else ()
    if rows is not None:
        return rows.drop_columns(list(drop))
    return pa.schema([f for f in ALL_TYPES if f.name not in drop])


def lake_table(warehouse: str, identifier: str, schema: pa.Schema, **kwargs):
    """Create ``identifier`` with lake_core (database created if missing)."""
    catalog = Catalog(warehouse)
    catalog.create_database(identifier.split(".")[0], ignore_if_exists=True)
    return catalog.create_table(identifier, schema, **kwargs)


def lake_open(warehouse: str, identifier: str):
    return Catalog(warehouse).get_table(identifier)


def stream_since(table, start: int) -> pa.Table:
    """Our stream scan restored at snapshot ``start``, polled up to the latest snapshot: every
    plan's rows (with ``_ROW_KIND``) in order, as Java's streaming read from ``start`` returns them."""
    latest = table.latest_snapshot().id
    scan = table.new_read_builder().new_stream_scan()
    scan.restore(start)
    read = table.new_read_builder().new_read()
    parts = []
    while scan.checkpoint() <= latest:
        parts.append(read.to_arrow(scan.plan().splits(), row_kind=True))
    return pa.concat_tables(parts)
