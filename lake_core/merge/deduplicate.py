"""merge-engine = deduplicate: the newest row per key wins (a -D as newest removes the key)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lake_core import arrow_memory
from lake_core.kv import rowkind
from lake_core.merge.base import KIND, SEQ, MergeEngine, take
from lake_core.merge.sort import last_rows


class DeduplicateEngine(MergeEngine):
    name = "deduplicate"
    merged_row_is_stored = True
    run_is_merged = True
    on_partition_change = "delete-old"

    @property
    def lookup_needs_old_value(self) -> bool:
        return bool(self.ctx.sequence_fields)  # by arrival order the newest row simply wins

    @property
    def newest_row_wins(self) -> bool:
        return not self.ctx.sequence_fields

    def merge(self, rows: pa.Table, drop_deletes: bool) -> pa.Table:
        if rows.num_rows == 0:
            return rows
        return take(rows, self.pick(rows, drop_deletes))

    def pick_columns(self) -> list[str]:
        return list(dict.fromkeys([*self.ctx.key_columns, *self.ctx.sequence_fields, SEQ, KIND]))

    def pick(self, rows: pa.Table, drop_deletes: bool) -> np.ndarray:
        if rows.num_rows == 0:
            return np.zeros(0, np.int64)
        ctx = self.ctx
        if not ctx.sequence_fields:
            idx = last_rows(rows, ctx.key_columns)
        else:
            idx = self.groups(rows).last
        if drop_deletes:
            kinds = rows[KIND]
            retract = rowkind.is_retract(arrow_memory.one_array(kinds).to_numpy())
            if retract.any():
                idx = idx[~retract[idx]]
        return idx
