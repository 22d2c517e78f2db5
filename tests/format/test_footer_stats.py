"""String and integer min / max of a written Parquet file come from its footer (Arrow's writer
computes them anyway, and Java's stats extractor reads them there): checked against the statistics
of the rows each file holds (``column_stats``, the accumulating path every other type still takes),
through a real table's writes, for key and value columns, every stats mode and several row groups."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lake_core import Catalog
from lake_core.format.binary_row.reader import deserialize_row
from lake_core.format.stats import column_stats, parse_stats_mode

_TEXT = st.one_of(
    st.none(),
    st.text(alphabet=st.sampled_from(["a", "b", "z", "é", "中", "😀", " ", "\u007f"]), max_size=24),
)


def _write(tmp_path, rows: list[tuple[str, str | None, str | None]], options: dict[str, str]):
    cat = Catalog(f"file://{tmp_path}")
    cat.create_database("db")
    schema = pa.schema([pa.field("k", pa.string(), nullable=False), ("v", pa.string()), ("w", pa.string())])
    t = cat.create_table("db.t", schema=schema, primary_keys=["k"], options={"bucket": "1", **options})
    data = {"k": [r[0] for r in rows], "v": [r[1] for r in rows], "w": [r[2] for r in rows]}
    t.write_arrow(pa.table(data, schema=schema))
    return t


def _check_files(t, modes: dict[str, str]) -> int:
    checked = 0
    for e in t.manifest_store.live_entries(t.latest_snapshot()):
        f = e.file
        path = f"{t.bucket_dir(b'', 0)}/{f.file_name}".removeprefix("file://")
        stored = pq.read_table(path)
        types = [pa.string()]
        lo = deserialize_row(f.key_stats.min_values, types)
        hi = deserialize_row(f.key_stats.max_values, types)
        want = column_stats(stored.column("_KEY_k"), parse_stats_mode("full"))  # key stats are always full
        assert (lo[0], hi[0], f.key_stats.null_counts[0]) == (want.min, want.max, want.null_count)
        cols = ["k", "v", "w"]
        lo = deserialize_row(f.value_stats.min_values, [pa.string()] * 3)
        hi = deserialize_row(f.value_stats.max_values, [pa.string()] * 3)
        for i, c in enumerate(cols):
            want = column_stats(stored.column(c), parse_stats_mode(modes.get(c, "truncate(16)")))
            assert (lo[i], hi[i], f.value_stats.null_counts[i]) == (want.min, want.max, want.null_count), c
        checked += 1
    return checked


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    values=st.lists(st.tuples(_TEXT, _TEXT), min_size=1, max_size=60),
    modes=st.fixed_dictionaries(
        {},
        optional={
            "v": st.sampled_from(["full", "truncate(3)", "counts"]),
            "k": st.sampled_from(["full", "truncate(2)"]),
        },
    ),
    small_groups=st.booleans(),
)
def test_string_stats_from_the_footer_match_the_rows(tmp_path_factory, values, modes, small_groups):
    rows = [(f"k{i:03d}-" + (v or ""), v, w) for i, (v, w) in enumerate(values)]
    options = {f"fields.{c}.stats-mode": m for c, m in modes.items()}
    if small_groups:  # several row groups per file: the footer's extremes are combined
        options["parquet.block.size"] = "256 b"
    t = _write(tmp_path_factory.mktemp("wh"), rows, options)
    assert _check_files(t, modes) >= 1


def test_a_string_longer_than_the_footer_keeps_has_no_min_max(tmp_path):
    """Arrow (like Java's parquet-mr) leaves statistics out of the footer for values over 4 KiB: the
    file's metadata then has no min / max for that column (as Java's), and its null count stays."""
    t = _write(tmp_path, [("a", "x" * 5000, "w"), ("b", None, "w2")], {})
    (e,) = t.manifest_store.live_entries(t.latest_snapshot())
    lo = deserialize_row(e.file.value_stats.min_values, [pa.string()] * 3)
    hi = deserialize_row(e.file.value_stats.max_values, [pa.string()] * 3)
    assert (lo, hi, e.file.value_stats.null_counts) == (["a", None, "w"], ["b", None, "w2"], (0, 1, 0))
    assert t.to_arrow().sort_by("k").column("v").to_pylist() == ["x" * 5000, None]


_INTS = {"i8": pa.int8(), "i16": pa.int16(), "i32": pa.int32(), "i64": pa.int64()}


def _int_values(t: pa.DataType):
    bits = t.bit_width
    return st.one_of(st.none(), st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    data=st.data(),
    n=st.integers(1, 60),
    modes=st.fixed_dictionaries({}, optional={c: st.sampled_from(["full", "counts", "none"]) for c in _INTS}),
    small_groups=st.booleans(),
)
def test_integer_stats_from_the_footer_match_the_rows(tmp_path_factory, data, n, modes, small_groups):
    """TINYINT to BIGINT value columns (nulls, extremes, row groups of nulls only) and a BIGINT key:
    the file metadata's min / max / null counts equal those of the rows each file holds."""
    keys = data.draw(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=n, max_size=n, unique=True))
    cols = {c: data.draw(st.lists(_int_values(t), min_size=n, max_size=n)) for c, t in _INTS.items()}
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), *[(c, t) for c, t in _INTS.items()]])
    options = {"bucket": "1", **{f"fields.{c}.stats-mode": m for c, m in modes.items()}}
    if small_groups:
        options["parquet.block.size"] = "64 b"
    cat = Catalog(f"file://{tmp_path_factory.mktemp('wh')}")
    cat.create_database("db")
    t = cat.create_table("db.t", schema=schema, primary_keys=["k"], options=options)
    t.write_arrow(pa.table({"k": keys, **cols}, schema=schema))
    (e,) = t.manifest_store.live_entries(t.latest_snapshot())
    f = e.file
    stored = pq.read_table(f"{t.bucket_dir(b'', 0)}/{f.file_name}".removeprefix("file://"))
    want = column_stats(stored.column("_KEY_k"), parse_stats_mode("full"))
    lo, hi = (
        deserialize_row(f.key_stats.min_values, [pa.int64()]),
        deserialize_row(f.key_stats.max_values, [pa.int64()]),
    )
    assert (
        (lo[0], hi[0], f.key_stats.null_counts[0]) == (want.min, want.max, want.null_count) == (min(keys), max(keys), 0)
    )
    stats_cols = list(f.value_stats_cols or schema.names)  # a column in mode "none" has no stats at all
    types = [schema.field(c).type for c in stats_cols]
    lo, hi = deserialize_row(f.value_stats.min_values, types), deserialize_row(f.value_stats.max_values, types)
    for i, c in enumerate(stats_cols):
        want = column_stats(stored.column(c), parse_stats_mode(modes.get(c, "truncate(16)")))
        assert (lo[i], hi[i], f.value_stats.null_counts[i]) == (want.min, want.max, want.null_count), c
        if c in cols and modes.get(c, "full") == "full":  # against the plain model of the column
            present = [v for v in cols[c] if v is not None]
            assert (lo[i], hi[i]) == ((min(present), max(present)) if present else (None, None)), c


@pytest.mark.parametrize("fmt", ["orc", "avro"])
def test_other_formats_compute_string_stats_from_the_rows(tmp_path, fmt):
    t = _write(tmp_path, [("b", "é", None), ("a", "zz", None)], {"file.format": fmt})
    (e,) = t.manifest_store.live_entries(t.latest_snapshot())
    lo = deserialize_row(e.file.value_stats.min_values, [pa.string()] * 3)
    hi = deserialize_row(e.file.value_stats.max_values, [pa.string()] * 3)
    assert (lo, hi, e.file.value_stats.null_counts) == (["a", "zz", None], ["b", "é", None], (0, 0, 2))
