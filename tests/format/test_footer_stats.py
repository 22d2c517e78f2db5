"""String min / max of a written Parquet file come from its footer (Arrow's writer computes them
anyway, and Java's stats extractor reads them there): checked against the statistics of the rows
each file holds (``column_stats``, the accumulating path every other type still takes), through a
real table's writes, for key and value columns, every stats mode and several row groups."""

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


@pytest.mark.parametrize("fmt", ["orc", "avro"])
def test_other_formats_compute_string_stats_from_the_rows(tmp_path, fmt):
    t = _write(tmp_path, [("b", "é", None), ("a", "zz", None)], {"file.format": fmt})
    (e,) = t.manifest_store.live_entries(t.latest_snapshot())
    lo = deserialize_row(e.file.value_stats.min_values, [pa.string()] * 3)
    hi = deserialize_row(e.file.value_stats.max_values, [pa.string()] * 3)
    assert (lo, hi, e.file.value_stats.null_counts) == (["a", "zz", None], ["b", "é", None], (0, 0, 2))
