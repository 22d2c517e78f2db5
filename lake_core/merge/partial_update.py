"""merge-engine = partial-update (Java ``PartialUpdateMergeFunction``), vectorized.

Without sequence groups every value column takes its latest non-NULL value. With
``fields.<s1>[,<s2>].sequence-group = a,b`` the group's columns follow the row whose sequence
tuple is the largest so far (ties: the later row; a row whose sequence columns are all NULL does not
touch the group), taking its values including NULLs; an aggregate on a protected column
(``fields.<f>.aggregate-function``, ``fields.default-aggregate-function``) folds every row that
touches the group, rows older than the stored sequence through Java's ``aggReversed``.

How the sequential Java fold becomes vectorized: the stored sequence of a group is the running
maximum of the row tuples (dense ranks, :func:`sequence.tuple_rank`), so "this row updates the
group" is ``rank >= running max`` (a segmented ``maximum.accumulate``), and the final values of a
group come from the last row holding the maximum. Deletes that remove the whole row
(``partial-update.remove-record-on-delete``, ``partial-update.remove-record-on-sequence-group``)
cut each key group: only rows after the last effective delete count. Whether a sequence-group delete
is effective depends on the rows since the previous effective one, so those cut points are found in
rounds (one vectorized pass per delete that fires in the same key; rare).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from lake_core.errors import InvalidDataError, InvalidOptionError
from lake_core.kv import rowkind
from lake_core.merge.aggregate.base import ADD, ADD_REVERSED, RETRACT, SKIP, AggFunction, retract_error
from lake_core.merge.aggregate.registry import create_function, ignore_retract
from lake_core.merge.aggregate.segments import Segments, any_per_group, first_index, last_index
from lake_core.merge.aggregation import (
    MultiRows,
    _col,
    assemble,
    fold_column,
    key_like_columns,
    with_count_contributions,
)
from lake_core.merge.base import KIND, MergeEngine, drop_retracts
from lake_core.merge.sequence import parse_sequence_groups, segmented_cummax, tuple_rank, validate_common

DELETE_HELP = (
    "By default, a partial-update table cannot accept delete records (-U/-D); choose one of: "
    "1. 'ignore-delete' = 'true' (or 'partial-update.ignore-delete') to ignore them; "
    "2. 'partial-update.remove-record-on-delete' = 'true' to remove the whole row on -D; "
    "3. 'fields.<seq>.sequence-group' = '<columns>' to retract those columns, with "
    "'partial-update.remove-record-on-sequence-group' = '<seq>' to remove the whole row on a -D of "
    "that sequence group."
)


class PartialUpdateEngine(MergeEngine):
    name = "partial-update"

    def validate(self) -> None:
        schema, opts = self.ctx.schema, self.ctx.options
        validate_common(schema, opts, self.name)
        self.key_like = key_like_columns(schema)
        self.seq_groups = parse_sequence_groups(schema, opts)
        self.ignore_delete = opts.ignore_delete
        self.remove_on_delete = opts.partial_update_remove_record_on_delete
        rosg = opts.partial_update_remove_record_on_sequence_group
        if self.remove_on_delete and self.ignore_delete:
            raise InvalidOptionError(
                "'ignore-delete' and 'partial-update.remove-record-on-delete' have conflicting behavior; "
                "set only one of them"
            )
        if rosg is not None and self.ignore_delete:
            raise InvalidOptionError(
                "'ignore-delete' and 'partial-update.remove-record-on-sequence-group' have conflicting "
                "behavior; set only one of them"
            )
        if self.remove_on_delete and self.seq_groups:
            raise InvalidOptionError(
                "'partial-update.remove-record-on-delete' cannot be combined with sequence groups "
                "('fields.<seq>.sequence-group'); use 'partial-update.remove-record-on-sequence-group'"
            )
        seq_cols = [s for g in self.seq_groups for s in g.seq_fields]
        self.pd_groups: set[int] = set()
        if rosg is not None:
            wanted = [s.strip() for s in rosg.split(",") if s.strip()]
            bad = [s for s in wanted if s not in seq_cols]
            if bad or not wanted:
                raise InvalidOptionError(
                    f"option 'partial-update.remove-record-on-sequence-group' = {rosg!r}: {bad or rosg} "
                    f"must be sequence columns of sequence groups ({seq_cols or 'none defined'})"
                )
            self.pd_groups = {i for i, g in enumerate(self.seq_groups) if set(g.seq_fields) & set(wanted)}
        protected = {f: i for i, g in enumerate(self.seq_groups) for f in g.fields}
        self.protected = protected
        self.seq_cols = set(seq_cols)
        default = opts.default_aggregate_function
        self.functions: dict[str, AggFunction] = {}
        self.ignore_retract: dict[str, bool] = {}
        for f in schema.fields:
            if f.name in self.key_like or f.name in self.seq_cols:
                continue
            fname = opts.aggregate_function(f.name) or default
            if fname is None:
                continue
            fn = create_function(f.name, f.type, fname, opts, f.sql_type())
            if fn.name != "last_non_null_value" and f.name not in protected:
                raise InvalidOptionError(
                    f"column '{f.name}': aggregate function '{fn.name}' on a partial-update table needs the "
                    f"column to be protected by a sequence group ('fields.<seq>.sequence-group' = "
                    f"'...,{f.name}'); only 'last_non_null_value' works without one"
                )
            if f.name in protected:
                self.functions[f.name] = fn
                self.ignore_retract[f.name] = ignore_retract(opts, f.name)
            # outside groups, last_non_null_value is exactly the plain partial update
        self.plain = [
            f.name
            for f in schema.fields
            if f.name not in self.key_like and f.name not in self.seq_cols and f.name not in protected
        ]

    # -- write path -------------------------------------------------------------------------------
    def prepare_input(self, rows: pa.Table) -> pa.Table:
        rows = super().prepare_input(rows)
        if rows.num_rows == 0:
            return rows
        kinds = rows[KIND].to_numpy()
        retract = rowkind.is_retract(kinds)
        if retract.any():
            if not self.seq_groups and not self.remove_on_delete:
                raise InvalidDataError(DELETE_HELP)
            self._check_group_retract(rows, retract)
        return with_count_contributions(rows, self.functions)

    def _check_group_retract(self, rows: pa.Table, retract: np.ndarray) -> None:
        """A -U/-D that touches a sequence group retracts its aggregates: refuse it at write time
        when an aggregate of the group cannot retract (Java would fail later, when merging)."""
        for grp in self.seq_groups:
            bad = [
                f
                for f in grp.fields
                if f in self.functions and not self.functions[f].retract_supported and not self.ignore_retract[f]
            ]
            if not bad:
                continue
            touches = np.zeros(rows.num_rows, bool)
            for sf in grp.seq_fields:
                c = _col(rows, sf)
                touches |= c.is_valid().to_numpy(zero_copy_only=False) if c.null_count else True
            if (touches & retract).any():
                raise InvalidDataError(retract_error(bad[0], self.functions[bad[0]].name))

    # -- merge ------------------------------------------------------------------------------------
    def merge(self, rows: pa.Table, drop_deletes: bool) -> pa.Table:
        if self.ignore_delete:
            rows = drop_retracts(rows)
        if rows.num_rows == 0:
            return rows
        g = self.groups(rows)
        m = MultiRows(g.order, Segments(g.starts, g.ends))
        kinds = rows[KIND].to_numpy()[m.rows]
        retract = rowkind.is_retract(kinds)
        if self.seq_groups:
            values, kinds_out = self._merge_groups(rows, m, kinds, retract)
        else:
            if retract.any() and not self.remove_on_delete:
                raise InvalidDataError(DELETE_HELP)
            values, kinds_out = self._merge_plain(rows, m, kinds, retract)
        return assemble(rows, m, values, kinds_out, drop_deletes)

    def _last_non_null(self, rows, m: MultiRows, active, names) -> dict[str, tuple[str, Any]]:
        seg = m.sub
        out: dict[str, tuple[str, Any]] = {}
        shared = None
        for name in names:
            col = _col(rows, name)
            if col.null_count == 0:
                if shared is None:
                    shared = m.input_index(last_index(seg, active))
                out[name] = ("idx", shared)
            else:
                valid = col.is_valid().to_numpy(zero_copy_only=False)[m.rows]
                out[name] = ("idx", m.input_index(last_index(seg, active & valid)))
        return out

    def _merge_plain(self, rows, m: MultiRows, kinds, retract):
        seg = m.sub
        is_add = ~retract
        kinds_out = np.zeros(seg.count, np.int8)
        active = is_add
        if retract.any():  # remove-record-on-delete
            is_delete = kinds == rowkind.DELETE
            last_del = last_index(seg, is_delete)
            active = is_add & (seg.positions > last_del[seg.seg_id])
            no_add = ~any_per_group(seg, is_add)
            kinds_out[is_delete[seg.ends - 1] | no_add] = rowkind.DELETE
        names = [f.name for f in self.ctx.schema.fields if f.name not in self.key_like]
        return self._last_non_null(rows, m, active, names), kinds_out

    def _merge_groups(self, rows, m: MultiRows, kinds, retract):
        seg = m.sub
        n = len(m.rows)
        take_rows = m.take_rows
        is_add = ~retract
        is_delete = kinds == rowkind.DELETE
        ranks, eligibles = [], []
        for grp in self.seq_groups:
            r, e = tuple_rank([_col(rows, s).take(take_rows) for s in grp.seq_fields])
            ranks.append(r)
            eligibles.append(e)

        # whole-row deletes through 'partial-update.remove-record-on-sequence-group', in rounds
        reset = np.full(seg.count, -1, np.int64)
        if self.pd_groups and is_delete.any():
            cand = np.zeros(n, bool)
            for i in self.pd_groups:
                cand |= is_delete & eligibles[i]
            while cand.any():
                active = seg.positions > reset[seg.seg_id]
                trig = np.zeros(n, bool)
                for i in self.pd_groups:
                    mask = eligibles[i] & active
                    _, excl = segmented_cummax(seg, ranks[i], mask)
                    trig |= cand & mask & (ranks[i] >= excl)
                first = first_index(seg, trig)
                found = first >= 0
                if not found.any():
                    break
                reset[found] = first[found]
                cand &= found[seg.seg_id] & (seg.positions > reset[seg.seg_id])
        active = seg.positions > reset[seg.seg_id]
        meet_insert = any_per_group(seg, is_add)
        last_trig = reset == seg.ends - 1
        kinds_out = np.where(last_trig | ~meet_insert, rowkind.DELETE, rowkind.INSERT).astype(np.int8)

        values = self._last_non_null(rows, m, active & is_add, self.plain)
        for gi, grp in enumerate(self.seq_groups):
            elig = eligibles[gi] & active
            incl, excl = segmented_cummax(seg, ranks[gi], elig)
            gmax = incl[seg.ends - 1]
            winner = last_index(seg, elig & (ranks[gi] == gmax[seg.seg_id]))
            w_in = m.input_index(winner)
            for sf in grp.seq_fields:
                values[sf] = ("idx", w_in)
            win_add = (winner >= 0) & is_add[np.maximum(winner, 0)]
            w_add_in = np.where(win_add, w_in, -1)
            fwd = elig & (ranks[gi] >= excl)
            ops = np.full(n, SKIP, np.int8)
            ops[elig & is_add & fwd] = ADD
            ops[elig & is_add & ~fwd] = ADD_REVERSED
            ops[elig & retract] = RETRACT
            for f in grp.fields:
                if f in self.key_like or f in values:
                    continue
                fn = self.functions.get(f)
                if fn is None:
                    values[f] = ("idx", w_add_in)
                    continue
                values[f] = fold_column(rows, m, fn, ops, ignores_retract=self.ignore_retract[f])
        return values, kinds_out
