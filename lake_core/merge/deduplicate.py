"""merge-engine = deduplicate: the newest row per key wins (a -D as newest removes the key)."""

from __future__ import annotations

import pyarrow as pa

from lake_core.kv import rowkind
from lake_core.merge.base import KIND, MergeEngine, take


class DeduplicateEngine(MergeEngine):
    name = "deduplicate"
    merged_row_is_stored = True
    run_is_merged = True
    on_partition_change = "delete-old"

    @property
    def lookup_needs_old_value(self) -> bool:
        return bool(self.ctx.sequence_fields)  # by arrival order the newest row simply wins

    def merge(self, rows: pa.Table, drop_deletes: bool) -> pa.Table:
        if rows.num_rows == 0:
            return rows
        idx = self.groups(rows).last
        if drop_deletes:
            kinds = rows[KIND].to_numpy()[idx]
            idx = idx[~rowkind.is_retract(kinds)]
        return take(rows, idx)
