"""Per-column min / max / null-count statistics for data files (``_VALUE_STATS``, ``_KEY_STATS``).

Semantics follow Java Paimon (``org.apache.paimon.statistics.*SimpleColStatsCollector`` and
``ParquetSimpleStatsExtractor``), computed column-wise with ``pyarrow.compute``:

* ``none``       -> min, max and null count all null.
* ``counts``     -> null count only.
* ``full``       -> exact min / max and null count.
* ``truncate(N)``-> like full, but STRING min is cut to its first N code points and STRING max is
  cut to N code points with the last code point that can be incremented incremented (so it stays
  an upper bound). When no code point can be incremented (all U+10FFFF), min and max are both
  null (Java's ``failed`` flag); the null count is kept. BYTES get null min / max in truncate mode
  (Java only truncates ``BinaryString`` and skips non-``Comparable`` ``byte[]``).
* Nested types (ARRAY, MAP, ROW): null min / max, null count kept.
* FLOAT / DOUBLE: if any value is NaN, min and max are null (what parquet-mr's statistics builder
  does, and so what Java reports for the default Parquet format); a min of +0.0 is widened to
  -0.0 and a max of -0.0 to +0.0 (same origin), so no zero is ever excluded.
* A column with only nulls (or no rows) has null min / max.

Orderings match Java: strings by UTF-8 bytes (= code points), bytes unsigned lexicographic,
booleans false < true.

Values are Python objects: int, float, bool, str, bytes, decimal.Decimal, datetime.date,
datetime.time, datetime.datetime (naive for TIMESTAMP, tz-aware for TIMESTAMP WITH LOCAL TIME
ZONE, in UTC; nanosecond precision columns give ``lake_core.format.binary_row.nano_datetime.NanoDatetime``, a datetime
subclass with ``.nanosecond``, when the value is not a whole microsecond).
"""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lake_core.errors import InvalidOptionError
from lake_core.format.binary_row.nano_datetime import NanoDatetime
from lake_core.types import is_nested

__all__ = [
    "StatsMode",
    "ColumnStats",
    "parse_stats_mode",
    "column_stats",
    "table_stats",
    "truncate_min",
    "truncate_max",
    "DEFAULT_STATS_MODE",
    "NONE",
    "COUNTS",
    "FULL",
]

STATS_MODE_OPTION = "metadata.stats-mode"


@dataclass(frozen=True)
class StatsMode:
    kind: str  # 'none' | 'counts' | 'full' | 'truncate'
    length: int | None = None  # truncate length, code points

    def __str__(self) -> str:
        return f"truncate({self.length})" if self.kind == "truncate" else self.kind


NONE = StatsMode("none")
COUNTS = StatsMode("counts")
FULL = StatsMode("full")
DEFAULT_STATS_MODE = StatsMode("truncate", 16)

_TRUNCATE_RE = re.compile(r"TRUNCATE\((\d+)\)")


def parse_stats_mode(mode: str | StatsMode, option: str = STATS_MODE_OPTION) -> StatsMode:
    """Parse a stats mode option value ('none', 'counts', 'full', 'truncate(N)', any case).

    ``option`` names the option in error messages (e.g. ``fields.name.stats-mode``)."""
    if isinstance(mode, StatsMode):
        return mode
    if not isinstance(mode, str):
        raise InvalidOptionError(f"Option '{option}' must be a string, got {mode!r}")
    upper = mode.strip().upper()
    if upper == "NONE":
        return NONE
    if upper == "COUNTS":
        return COUNTS
    if upper == "FULL":
        return FULL
    m = _TRUNCATE_RE.fullmatch(upper)
    if m:
        n = int(m.group(1))
        if n <= 0:
            raise InvalidOptionError(f"Invalid value {mode!r} for option '{option}': truncate length must be > 0")
        return StatsMode("truncate", n)
    raise InvalidOptionError(
        f"Invalid value {mode!r} for option '{option}': expected none, counts, full or truncate(N)"
    )


@dataclass(frozen=True)
class ColumnStats:
    min: Any
    max: Any
    null_count: int | None


_EMPTY = ColumnStats(None, None, None)

_MAX_CODE_POINT = 0x10FFFF


def truncate_min(s: str, length: int) -> str:
    """Java ``TruncateSimpleColStatsCollector.truncateMin`` for strings."""
    return s[:length]


def truncate_max(s: str, length: int) -> str | None:
    """Java ``truncateMax``: ``s`` itself when it has at most ``length`` code points; else the
    first ``length`` code points with the last incrementable one incremented (and the rest
    dropped); None when nothing can be incremented.

    Deviation: Java can produce a lone surrogate (U+D7FF + 1 = U+D800), which it cannot encode to
    UTF-8; we skip the surrogate block (U+D800 -> U+E000) so the result is a valid string and still
    an upper bound."""
    if len(s) <= length:
        return s
    t = s[:length]
    for i in range(length - 1, -1, -1):
        cp = ord(t[i]) + 1
        if cp <= _MAX_CODE_POINT:
            if 0xD800 <= cp <= 0xDFFF:
                cp = 0xE000
            return t[:i] + chr(cp)
    return None


def _as_array(arr: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    t = arr.type
    if pa.types.is_dictionary(t):
        arr = arr.cast(t.value_type) if isinstance(arr, pa.Array) else pc.cast(arr, t.value_type)
    return arr


def _is_stringish(t: pa.DataType) -> bool:
    return (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or (hasattr(pa.types, "is_string_view") and pa.types.is_string_view(t))
    )


def _is_binaryish(t: pa.DataType) -> bool:
    return (
        pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_fixed_size_binary(t)
        or (hasattr(pa.types, "is_binary_view") and pa.types.is_binary_view(t))
    ) and not pa.types.is_decimal(t)


def _float_extremes(arr: pa.Array | pa.ChunkedArray) -> tuple[float, float] | None:
    """(min, max) of a float32/float64 column with values, NaN when it holds one: by NumPy when it
    has no nulls (its reductions propagate a NaN; 17x faster than Arrow's ``min_max``, which skips
    NaNs branch by branch), else by Arrow. Which zero comes out does not matter:
    :func:`column_stats` widens zeros. None for other columns (Arrow's ``min_max`` as is)."""
    if not pa.types.is_floating(arr.type) or arr.type.bit_width not in (32, 64) or len(arr) == arr.null_count:
        return None
    if arr.null_count == 0:
        values = arr.to_numpy()
        return float(values.min()), float(values.max())
    if pc.any(pc.is_nan(arr)).as_py():
        return math.nan, math.nan
    mm = pc.min_max(arr)
    return mm["min"].as_py(), mm["max"].as_py()


def column_stats(arr: pa.Array | pa.ChunkedArray, mode: StatsMode | str) -> ColumnStats:
    """Statistics of one column (vectorized: one ``min_max`` pass, plus a NaN check for floats)."""
    mode = parse_stats_mode(mode)
    if mode.kind == "none":
        return _EMPTY
    arr = _as_array(arr)
    null_count = int(arr.null_count)
    if mode.kind == "counts":
        return ColumnStats(None, None, null_count)
    t = arr.type
    if is_nested(t) or pa.types.is_null(t) or len(arr) == null_count:
        return ColumnStats(None, None, null_count)
    truncate = mode.kind == "truncate"
    if truncate and _is_binaryish(t):
        return ColumnStats(None, None, null_count)

    lo: Any
    hi: Any
    extremes = _float_extremes(arr)
    if extremes is not None:
        lo, hi = extremes
        if math.isnan(lo) or math.isnan(hi):
            return ColumnStats(None, None, null_count)
    elif pa.types.is_floating(t) and pc.any(pc.is_nan(arr)).as_py():  # float16
        return ColumnStats(None, None, null_count)
    elif pa.types.is_timestamp(t) and t.unit == "ns":
        mm = pc.min_max(arr.cast(pa.int64()))
        lo = _ns_value(mm["min"].as_py(), t.tz)
        hi = _ns_value(mm["max"].as_py(), t.tz)
    else:
        mm = pc.min_max(arr)
        lo = mm["min"].as_py()
        hi = mm["max"].as_py()
    if lo is None or hi is None:
        return ColumnStats(None, None, null_count)

    if pa.types.is_floating(t):
        if lo == 0.0 and math.copysign(1.0, lo) > 0:
            lo = -0.0
        if hi == 0.0 and math.copysign(1.0, hi) < 0:
            hi = 0.0
    elif truncate and _is_stringish(t):
        n = mode.length
        assert n is not None  # a truncate mode always has its length
        hi_t = truncate_max(hi, n)
        if hi_t is None:
            return ColumnStats(None, None, null_count)
        lo, hi = truncate_min(lo, n), hi_t
    return ColumnStats(lo, hi, null_count)


_EPOCH = datetime.datetime(1970, 1, 1)


def _ns_value(v: int | None, tz: str | None) -> Any:
    """A nanosecond epoch value as a datetime (``binary_row.nano_datetime.NanoDatetime`` when the nanoseconds
    are not a whole microsecond), without needing pandas."""
    if v is None:
        return None

    micros, nano = divmod(v, 1000)
    base = _EPOCH + datetime.timedelta(microseconds=micros)
    if tz is not None:
        base = base.replace(tzinfo=datetime.UTC)
    if not nano:
        return base
    return NanoDatetime(
        base.year,
        base.month,
        base.day,
        base.hour,
        base.minute,
        base.second,
        base.microsecond,
        base.tzinfo,
        nanosecond=nano,
    )


def table_stats(
    table: pa.Table,
    columns: Sequence[str],
    modes: Mapping[str, StatsMode | str] | StatsMode | str,
) -> list[ColumnStats]:
    """Stats of ``columns`` of ``table``, in that order. ``modes`` maps a column to its mode
    (columns missing from the mapping use ``truncate(16)``), or is one mode for all."""
    if isinstance(modes, (StatsMode, str)):
        m = parse_stats_mode(modes)
        return [column_stats(table.column(c), m) for c in columns]
    out = []
    for c in columns:
        m = parse_stats_mode(modes.get(c, DEFAULT_STATS_MODE), f"fields.{c}.stats-mode")
        out.append(column_stats(table.column(c), m))
    return out


#: a column's raw min / max as a Parquet footer holds them (UTF-8 bytes for strings, ints for integers)
RawExtremes = tuple[bytes | int, bytes | int]


def footer_gives_extremes(t: pa.DataType) -> bool:
    """Whether a Parquet footer's raw min / max of a column of type ``t`` are its values as
    :func:`column_stats` finds them: UTF-8 strings (bytes) and signed integers (Parquet INT32 /
    INT64, any width; the writer skips nulls alike). Floats are not: the footer skips NaNs,
    which void a column's statistics here."""
    return pa.types.is_string(t) or pa.types.is_signed_integer(t)


def _footer_value(raw: bytes | int) -> str | int:
    return raw.decode() if isinstance(raw, bytes) else raw


class StatsAccumulator:
    """Statistics of ``columns`` over a file written in chunks, equal to :func:`table_stats` of the
    whole file: each chunk contributes its null count, a NaN flag and its raw (untruncated)
    min / max; :meth:`result` takes the min / max of those and applies the mode (truncation,
    zero widening) once."""

    def __init__(
        self, columns: Sequence[str], modes: Mapping[str, StatsMode | str], *, from_footer: Collection[str] = ()
    ):
        """``from_footer``: string and signed integer columns whose min / max the file's own footer
        gives (Parquet writes them anyway, as Java's stats extractor reads them; the same values
        a ``min_max`` pass over each chunk finds): :meth:`add` counts their nulls only, and
        :meth:`result` takes their extremes from ``footer``."""
        self.columns = list(columns)
        self._modes = [
            parse_stats_mode(modes.get(c, DEFAULT_STATS_MODE), f"fields.{c}.stats-mode") for c in self.columns
        ]
        self._footer = [c in from_footer for c in self.columns]
        self._nulls = [0] * len(self.columns)
        self._nan = [False] * len(self.columns)
        self._extremes: list[list[pa.Array]] = [[] for _ in self.columns]
        self._types: list[pa.DataType | None] = [None] * len(self.columns)

    def add(self, table: pa.Table) -> None:
        for i, (c, mode) in enumerate(zip(self.columns, self._modes, strict=True)):
            if mode.kind == "none":
                continue
            arr = _as_array(table.column(c))
            self._types[i] = arr.type
            nulls = int(arr.null_count)
            self._nulls[i] += nulls
            t = arr.type
            if mode.kind == "counts" or self._nan[i] or is_nested(t) or pa.types.is_null(t) or len(arr) == nulls:
                continue
            if self._footer[i] and footer_gives_extremes(t):
                continue
            if mode.kind == "truncate" and _is_binaryish(t):
                continue
            extremes = _float_extremes(arr)
            if extremes is not None:
                if math.isnan(extremes[0]) or math.isnan(extremes[1]):
                    self._nan[i] = True
                    continue
                self._extremes[i].append(pa.array(extremes, type=t))
                continue
            if pa.types.is_floating(t) and pc.any(pc.is_nan(arr)).as_py():  # float16
                self._nan[i] = True
                continue
            mm = pc.min_max(arr)
            self._extremes[i].append(pa.array([mm["min"], mm["max"]], type=t))

    def result(self, footer: Mapping[str, RawExtremes | None] | None = None) -> list[ColumnStats]:
        """The statistics of everything added; ``footer``: the raw min / max of the ``from_footer``
        columns as the file's footer holds them (UTF-8 bytes, or ints; None: the footer has none,
        so neither does the file's metadata)."""
        out = []
        for i, mode in enumerate(self._modes):
            t = self._types[i]
            extremes = self._extremes[i]
            if self._footer[i] and t is not None and footer_gives_extremes(t):  # add() left them to the footer
                raw = (footer or {}).get(self.columns[i])
                extremes = [] if raw is None else [pa.array([_footer_value(v) for v in raw], type=t)]
            if mode.kind == "none":
                out.append(_EMPTY)
            elif mode.kind == "counts" or self._nan[i] or not extremes:
                out.append(ColumnStats(None, None, self._nulls[i]))
            else:
                s = column_stats(pa.chunked_array(extremes, type=t), mode)
                out.append(ColumnStats(s.min, s.max, self._nulls[i]))
        return out
