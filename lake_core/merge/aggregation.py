"""merge-engine = aggregation (Java ``AggregateMergeFunction``), vectorized.

Every value column folds with its ``fields.<f>.aggregate-function`` (else
``fields.default-aggregate-function``, else ``last_non_null_value``); primary-key columns keep the
key; ``sequence.field`` columns take ``last_value``. ``-U``/``-D`` rows retract (functions without
retraction fail unless ``fields.<f>.ignore-retract``); with ``aggregation.remove-record-on-delete``
a ``-D`` wipes the accumulated row and a group ending in ``-D`` yields a delete.

Like Java (``ReducerMergeFunctionWrapper``), a key with a single row keeps that row as it is.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa

from lake_core import arrow_memory
from lake_core.errors import InvalidDataError
from lake_core.kv import rowkind
from lake_core.merge.aggregate.base import ADD, ADD_REVERSED, RETRACT, SKIP, AggFunction, retract_error
from lake_core.merge.aggregate.numeric import CountAgg, count_contributions
from lake_core.merge.aggregate.registry import create_function, ignore_retract
from lake_core.merge.aggregate.segments import Segments, last_index, seg_reduce, take_or_null
from lake_core.merge.base import KIND, SEQ, MergeEngine, drop_retracts
from lake_core.merge.sequence import validate_common


def _col(rows: pa.Table, name: str) -> pa.Array:
    return arrow_memory.one_array(rows.column(name))


def key_like_columns(schema) -> set[str]:
    return set(schema.primary_keys) | set(schema.partition_keys)


def with_count_contributions(rows: pa.Table, functions: dict[str, AggFunction]) -> pa.Table:
    """``rows`` with every ``count`` column replaced by its contributions (1 for a value, 0 for
    NULL): the merge then only sums them, which re-merges exactly (see ``CountAgg``)."""
    for name, fn in functions.items():
        if isinstance(fn, CountAgg):
            rows = rows.set_column(
                rows.schema.get_field_index(name), rows.schema.field(name), count_contributions(rows[name])
            )
    return rows


class MultiRows:
    """The key groups with several rows: only they are merged. A key with a single row keeps that
    row as it is, like Java's ``ReducerMergeFunctionWrapper`` (and it is most keys of a merged
    read, so skipping them is also the fast path)."""

    def __init__(self, order: np.ndarray, seg: Segments):
        self.order, self.seg = order, seg
        single = seg.sizes == 1
        self.all_multi = not single.any()
        if self.all_multi:
            self.groups = np.arange(seg.count, dtype=np.int64)
            self.sub, self.rows = seg, order
            self.single_groups = np.zeros(0, np.int64)
        else:
            self.groups = np.flatnonzero(~single)
            self.sub, sub_rows = seg.subset(self.groups)
            self.rows = order[sub_rows]  # input row of every merged row, in merge order
            self.single_groups = np.flatnonzero(single)
        self.single_rows = order[seg.starts[self.single_groups]]

    @property
    def count(self) -> int:
        return self.sub.count

    @cached_property
    def take_rows(self) -> pa.Array:
        """``rows`` as an Arrow index array, to gather the merged rows of a column."""
        return pa.array(self.rows)

    def input_index(self, idx: np.ndarray) -> np.ndarray:
        """Merge-order positions (-1 = NULL) -> input row indices (-1 = NULL)."""
        return np.where(idx >= 0, self.rows[np.maximum(idx, 0)], -1)


def fold_column(
    rows: pa.Table, m: MultiRows, fn: AggFunction, ops: np.ndarray, *, ignores_retract: bool
) -> tuple[str, object]:
    """The merged value of column ``fn.column`` for every group of ``m``, as ``assemble`` takes
    it. ``RETRACT`` rows fail for a function that cannot retract, unless the column ignores
    retractions (``fields.<f>.ignore-retract``: they are skipped)."""
    if (ops == RETRACT).any():
        if not ignores_retract and not fn.retract_supported:
            raise InvalidDataError(retract_error(fn.column, fn.name))
        if ignores_retract:
            ops = np.where(ops == RETRACT, SKIP, ops).astype(np.int8)
    col = _col(rows, fn.column)
    idx = None
    if not (ops == ADD_REVERSED).any():  # picking a row cannot apply aggReversed: fold instead
        valid = (
            np.ones(len(m.rows), bool) if col.null_count == 0 else col.is_valid().to_numpy(zero_copy_only=False)[m.rows]
        )
        idx = fn.pick(valid, m.sub, ops)
    if idx is not None:
        return "idx", m.input_index(idx)
    return "arr", fn.reduce(col.take(m.take_rows), m.sub, ops)


def assemble(
    rows: pa.Table, m: MultiRows, values: dict[str, tuple[str, Any]], kinds_multi: np.ndarray, drop_deletes: bool
) -> pa.Table:
    """The output, one row per key in key order. ``values`` holds per merged group either
    ``("idx", input row index or -1)`` or ``("arr", pa.Array)``; other columns (keys) come from the
    group's last row, ``_SEQUENCE_NUMBER`` is the group's largest, ``_VALUE_KIND`` ``kinds_multi``."""
    seg, G = m.seg, m.seg.count
    sg, sr, mg = m.single_groups, m.single_rows, m.groups
    seq_in = rows[SEQ].to_numpy()
    seq_out = np.empty(G, np.int64)
    seq_out[sg] = seq_in[sr]
    seq_out[mg] = seg_reduce(np.maximum, seq_in[m.rows], m.sub)
    kind_in = rows[KIND].to_numpy()
    kind_out = np.empty(G, np.int8)
    kind_out[sg] = kind_in[sr]
    kind_out[mg] = kinds_multi
    last = m.order[seg.ends - 1]
    last_idx = pa.array(last)
    perm = None
    cols = []
    for f in rows.schema:
        name = f.name
        if name == SEQ:
            arr = pa.array(seq_out, type=f.type)
        elif name == KIND:
            arr = pa.array(kind_out, type=f.type)
        elif name in values:
            how, v = values[name]
            col = _col(rows, name)
            if how == "idx":
                full = last.copy()
                full[mg] = v
                arr = take_or_null(col, full)
            else:
                if perm is None:
                    perm = np.empty(G, np.int64)
                    perm[mg] = np.arange(len(mg), dtype=np.int64)
                    perm[sg] = len(mg) + sr
                v = v if v.type == f.type else v.cast(f.type)
                arr = v if m.all_multi else pa.chunked_array([v, col]).take(pa.array(perm)).combine_chunks()
        else:
            arr = _col(rows, name).take(last_idx)
        cols.append(arr)
    out = pa.Table.from_arrays(cols, schema=rows.schema)
    if drop_deletes:
        retract = rowkind.is_retract(kind_out)
        if retract.any():
            out = out.filter(pa.array(~retract))
    return out


class AggregationEngine(MergeEngine):
    name = "aggregation"

    def validate(self) -> None:
        schema, opts = self.ctx.schema, self.ctx.options
        validate_common(schema, opts, self.name)
        self.key_like = key_like_columns(schema)
        seq_fields = set(opts.sequence_fields)
        default = opts.default_aggregate_function
        self.functions: dict[str, AggFunction] = {}
        self.ignore_retract: dict[str, bool] = {}
        for f in schema.fields:
            if f.name in self.key_like:
                continue
            if f.name in seq_fields:
                fname = "last_value"
            else:
                fname = opts.aggregate_function(f.name) or default or "last_non_null_value"
            self.functions[f.name] = create_function(f.name, f.type, fname, opts, f.sql_type())
            self.ignore_retract[f.name] = ignore_retract(opts, f.name)
        self.remove_on_delete = opts.aggregation_remove_record_on_delete

    # -- write path -------------------------------------------------------------------------------
    def prepare_input(self, rows: pa.Table) -> pa.Table:
        rows = super().prepare_input(rows)
        if rows.num_rows == 0:
            return rows
        kinds = rows[KIND].to_numpy()
        retract = rowkind.is_retract(kinds)
        if retract.any():
            self._check_retract(kinds)
        return with_count_contributions(rows, self.functions)

    def _check_retract(self, kinds: np.ndarray) -> None:
        deletes_reset = self.remove_on_delete
        has_u = (kinds == rowkind.UPDATE_BEFORE).any()
        has_d = (kinds == rowkind.DELETE).any()
        if not (has_u or (has_d and not deletes_reset)):
            return
        for name, fn in self.functions.items():
            if not fn.retract_supported and not self.ignore_retract[name]:
                raise InvalidDataError(retract_error(name, fn.name))

    # -- merge ------------------------------------------------------------------------------------
    def merge(self, rows: pa.Table, drop_deletes: bool) -> pa.Table:
        if self.ctx.options.ignore_delete:
            rows = drop_retracts(rows)
        if rows.num_rows == 0:
            return rows
        g = self.groups(rows)
        m = MultiRows(g.order, Segments(g.starts, g.ends))
        seg = m.sub
        kinds = rows[KIND].to_numpy()[m.rows]
        retract = rowkind.is_retract(kinds)
        is_delete = kinds == rowkind.DELETE
        ops = np.where(retract, RETRACT, ADD).astype(np.int8)
        kinds_out = np.zeros(seg.count, np.int8)
        if self.remove_on_delete and is_delete.any():
            last_del = last_index(seg, is_delete)
            ops[seg.positions <= last_del[seg.seg_id]] = SKIP
            kinds_out[is_delete[seg.ends - 1]] = rowkind.DELETE
        values = {
            name: fold_column(rows, m, fn, ops, ignores_retract=self.ignore_retract[name])
            for name, fn in self.functions.items()
        }
        return assemble(rows, m, values, kinds_out, drop_deletes)
