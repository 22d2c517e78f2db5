"""Sequence options shared by the merge engines: ``sequence.field`` checks,
``sequence.auto-padding``, partial-update sequence groups, and vectorized tuple ranking.

Ordering inside a key group is (user ``sequence.field`` values, NULL smallest; then, with
``sequence.auto-padding`` containing ``row-kind-flag``, retractions before additions; then
``_SEQUENCE_NUMBER``, the input order). ``second-to-micro`` / ``millis-to-micro`` only existed to
break ties of coarse sequence values inside Java's old single-long sequence number; ties are always
broken by input order here (as in Paimon since the user sequence fields are compared on their
own), so those two paddings are accepted and change nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_core.errors import InvalidOptionError, SchemaError
from lake_core.merge.aggregate.registry import ALIASES, FUNCTIONS
from lake_core.merge.aggregate.segments import Segments
from lake_core.options import CoreOptions

AUTO_PADDINGS = ("row-kind-flag", "second-to-micro", "millis-to-micro")
SEQUENCE_GROUP_SUFFIX = ".sequence-group"


def auto_padding(options: CoreOptions) -> frozenset[str]:
    raw = options.sequence_auto_padding
    if not raw:
        return frozenset()
    vals = [v.strip().lower() for v in raw.split(",") if v.strip()]
    bad = [v for v in vals if v not in AUTO_PADDINGS]
    if bad:
        raise InvalidOptionError(
            f"option 'sequence.auto-padding' = {raw!r}: unknown value(s) {bad}; use a comma-separated "
            f"list of {', '.join(AUTO_PADDINGS)}"
        )
    return frozenset(vals)


def rowkind_tiebreak(options: CoreOptions) -> bool:
    """``sequence.auto-padding`` has ``row-kind-flag``: -U/-D sort before +I/+U on equal sequence."""
    return "row-kind-flag" in auto_padding(options) and bool(options.sequence_fields)


def _field_names(schema) -> list[str]:
    return [f.name for f in schema.fields]


def validate_common(schema, options: CoreOptions, engine: str) -> None:
    """Checks every engine shares (Java SchemaValidation): ``sequence.field`` columns exist, are not
    repeated and carry no aggregate; ``sequence.auto-padding`` values; per-field options name
    existing columns."""
    names = _field_names(schema)
    seq = list(options.sequence_fields)
    for f in seq:
        if f not in names:
            raise InvalidOptionError(
                f"option 'sequence.field' names column '{f}', which is not in the table; columns: {names}"
            )
        if seq.count(f) > 1:
            raise InvalidOptionError(f"option 'sequence.field': column '{f}' is listed more than once")
        if options.aggregate_function(f):
            raise InvalidOptionError(
                f"column '{f}' is a sequence field ('sequence.field') and must not have an aggregate "
                f"function; remove 'fields.{f}.aggregate-function'"
            )
    pads = auto_padding(options)
    if pads and not seq:
        raise InvalidOptionError("option 'sequence.auto-padding' needs 'sequence.field' to be set")
    for key in options.raw:
        if not key.startswith("fields.") or key == "fields.default-aggregate-function":
            continue
        body = key[len("fields.") :]
        col_part = body.rsplit(".", 1)[0] if "." in body else body
        for col in col_part.split(","):
            if col not in names:
                raise InvalidOptionError(
                    f"option '{key}' names column '{col}', which is not in the table; columns: {names}"
                )
    default = options.default_aggregate_function
    if default is not None:
        k = ALIASES.get(default.strip().lower(), default.strip().lower())
        if k not in FUNCTIONS:
            raise InvalidOptionError(
                f"option 'fields.default-aggregate-function' = {default!r} is not an aggregate function; "
                f"supported: {', '.join(sorted(FUNCTIONS))}"
            )


@dataclass(frozen=True)
class SequenceGroup:
    option_key: str
    seq_fields: tuple[str, ...]
    fields: tuple[str, ...]  # the columns the group protects


_SEQ_TYPES = "DECIMAL, TINYINT, SMALLINT, INTEGER, BIGINT, FLOAT, DOUBLE, DATE, TIME, TIMESTAMP, TIMESTAMP_LTZ"


def _seq_type_ok(t: pa.DataType) -> bool:
    return (
        (pa.types.is_integer(t) and pa.types.is_signed_integer(t))
        or pa.types.is_floating(t)
        or pa.types.is_decimal(t)
        or pa.types.is_date(t)
        or pa.types.is_time(t)
        or pa.types.is_timestamp(t)
    )


def parse_sequence_groups(schema, options: CoreOptions) -> list[SequenceGroup]:
    """``fields.<s1>[,<s2>...].sequence-group = a,b``, validated like Java: sequence columns and
    protected columns exist, sequence columns have a comparable type, no column belongs to two
    groups, no aggregate on a sequence column."""
    names = _field_names(schema)
    types = {f.name: f.type for f in schema.fields}
    groups: list[SequenceGroup] = []
    owner: dict[str, str] = {}
    for key in sorted(options.raw):
        if not (key.startswith("fields.") and key.endswith(SEQUENCE_GROUP_SUFFIX)):
            continue
        seq_part = key[len("fields.") : -len(SEQUENCE_GROUP_SUFFIX)]
        seq_fields = tuple(s.strip() for s in seq_part.split(",") if s.strip())
        if not seq_fields:
            raise InvalidOptionError(f"option '{key}' names no sequence column")
        for s in seq_fields:
            if s not in names:
                raise InvalidOptionError(f"option '{key}': sequence column '{s}' is not in the table; columns: {names}")
            if not _seq_type_ok(types[s]):
                raise SchemaError(
                    f"option '{key}': sequence column '{s}' has type {types[s]}, which cannot order a "
                    f"sequence group; use one of {_SEQ_TYPES}"
                )
            if options.aggregate_function(s):
                raise InvalidOptionError(
                    f"column '{s}' is the sequence column of '{key}' and must not have an aggregate "
                    f"function; remove 'fields.{s}.aggregate-function'"
                )
        value = options.raw[key] or ""
        fields = tuple(f.strip() for f in value.split(",") if f.strip())
        for f in fields:
            if f not in names:
                raise InvalidOptionError(
                    f"option '{key}' = {value!r}: column '{f}' is not in the table; columns: {names}"
                )
            if f in owner and owner[f] != key:
                raise InvalidOptionError(
                    f"column '{f}' is defined repeatedly by multiple sequence groups: '{owner[f]}' and '{key}'"
                )
            owner[f] = key
        groups.append(SequenceGroup(key, seq_fields, fields))
    # a sequence column protected by another group would be updated by two rules
    seq_cols = {s: g.option_key for g in groups for s in g.seq_fields}
    for f, k in owner.items():
        if f in seq_cols and seq_cols[f] != k:
            raise InvalidOptionError(
                f"column '{f}' is the sequence column of '{seq_cols[f]}' and also protected by '{k}'"
            )
    return groups


# ------------------------------------------------------------------------------------------------
# Vectorized tuple comparison: dense ranks with NULL smallest
# ------------------------------------------------------------------------------------------------


def _dense_rank(col: pa.Array) -> tuple[np.ndarray, int]:
    """0 for NULL, 1..U for values in ascending order."""
    t = col.type
    if col.null_count == 0 and (pa.types.is_integer(t) or pa.types.is_floating(t)):
        x = col.to_numpy(zero_copy_only=False)
        uniq, inv = np.unique(x, return_inverse=True)
        return inv.astype(np.int64) + 1, len(uniq)
    r = pc.rank(col, sort_keys=[("", "ascending", "at_start")], tiebreaker="dense").to_numpy().astype(np.int64)
    if col.null_count:
        r = r - 1  # NULLs share rank 1 -> 0
        return r, int(r.max()) if len(r) else 0
    return r, int(r.max()) if len(r) else 0


def tuple_rank(cols: list[pa.Array]) -> tuple[np.ndarray, np.ndarray]:
    """(key, eligible): an order-preserving key of the row tuples under Java's comparison of
    several sequence fields in order (NULL smallest; a row with every field NULL is not eligible),
    and whether any of the fields is set. One numeric column is its own key (NULL -> the smallest
    value of the key type); otherwise a dense rank."""
    n = len(cols[0])
    if len(cols) == 1:
        c = cols[0]
        t = c.type
        eligible = c.is_valid().to_numpy(zero_copy_only=False) if c.null_count else np.ones(n, bool)
        x: np.ndarray | None = None
        sentinel: float
        if pa.types.is_integer(t) or pa.types.is_date(t) or pa.types.is_time(t) or pa.types.is_timestamp(t):
            v = c.view(pa.int64() if t.bit_width == 64 else pa.int32()) if not pa.types.is_integer(t) else c
            x = pc.fill_null(v, 0).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
            sentinel = np.iinfo(np.int64).min
        elif pa.types.is_floating(t) and not pc.any(pc.is_nan(c)).as_py():
            x = pc.fill_null(c, 0).to_numpy(zero_copy_only=False).astype(np.float64, copy=False)
            sentinel = -np.inf
        if x is not None:
            if not eligible.all():
                x = np.where(eligible, x, sentinel)
            return x, eligible
    eligible = np.zeros(n, bool)
    rank = np.zeros(n, np.int64)
    for c in cols:
        eligible |= c.is_valid().to_numpy(zero_copy_only=False) if c.null_count else True
        r, u = _dense_rank(c)
        if len(cols) == 1:
            return r, eligible
        _, rank = np.unique(rank * (u + 1) + r, return_inverse=True)
        rank = rank.astype(np.int64)
    return rank, eligible


def segmented_cummax(seg: Segments, values: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(inclusive, exclusive) running maximum of ``values`` over the rows where ``mask`` holds,
    restarting at every group; the key type's lowest value (a NULL sequence's key) where nothing
    qualified yet, so ``value >= exclusive`` holds for a group's first qualifying row."""
    low = np.iinfo(values.dtype).min if values.dtype.kind in "iu" else -np.inf
    incl = np.where(mask, values, low).astype(values.dtype, copy=False)
    if seg.n == 0:
        return incl, incl.copy()
    for _groups, rows in seg.rounds:
        incl[rows] = np.maximum(incl[rows - 1], incl[rows])
    for g in seg.large.tolist():
        s0, e0 = seg.starts[g], seg.ends[g]
        incl[s0:e0] = np.maximum.accumulate(incl[s0:e0])
    excl = np.empty_like(incl)
    excl[1:] = incl[:-1]
    excl[seg.starts] = low
    return incl, excl
