"""merge-engine = first-row (Java ``FirstRowMergeFunction``): the first row of every key wins.

No ``sequence.field`` (refused at table creation); ``-U``/``-D`` rows are rejected unless
``ignore-delete`` (or ``first-row.ignore-delete``), in which case they are dropped; only the
``none`` and ``lookup`` changelog producers are allowed. The kept row keeps its own
``_SEQUENCE_NUMBER`` (Java keeps the first ``KeyValue`` as it is). Paimon hides level-0 files of
first-row tables from batch reads (``hides_level0``): the writer must compact new level-0 files up
for the data to become visible.
"""

from __future__ import annotations

import pyarrow as pa

from lake_core.errors import InvalidDataError, InvalidOptionError
from lake_core.kv import rowkind
from lake_core.merge.base import KIND, MergeEngine, take
from lake_core.merge.sequence import validate_common

REJECT_HELP = (
    "By default, the first-row merge engine cannot accept DELETE/UPDATE_BEFORE (-D/-U) records; "
    "set 'ignore-delete' = 'true' (or 'first-row.ignore-delete' = 'true') to ignore them."
)


class FirstRowEngine(MergeEngine):
    name = "first-row"
    hides_level0 = True
    merged_row_is_stored = True
    on_partition_change = "skip-new"

    def validate(self) -> None:
        opts = self.ctx.options
        if opts.sequence_fields:
            raise InvalidOptionError(
                "option 'sequence.field' cannot be used with 'merge-engine' = 'first-row' (the first row "
                "is kept in input order); remove 'sequence.field' or use another merge engine"
            )
        cp = opts.changelog_producer
        if cp not in ("none", "lookup"):
            raise InvalidOptionError(
                f"option 'changelog-producer' = {cp!r} is not supported with 'merge-engine' = 'first-row'; "
                "use 'none' or 'lookup'"
            )
        validate_common(self.ctx.schema, opts, self.name)

    def prepare_input(self, rows: pa.Table) -> pa.Table:
        rows = super().prepare_input(rows)  # drops -U/-D when ignore-delete is set
        if rows.num_rows and rowkind.is_retract(rows[KIND].to_numpy()).any():
            raise InvalidDataError(REJECT_HELP)
        return rows

    def merge(self, rows: pa.Table, drop_deletes: bool) -> pa.Table:
        if rows.num_rows == 0:
            return rows
        retract = rowkind.is_retract(rows[KIND].to_numpy())
        if retract.any():
            if not self.ctx.options.ignore_delete:
                raise InvalidDataError(REJECT_HELP)
            rows = rows.filter(pa.array(~retract))
            if rows.num_rows == 0:
                return rows
        return take(rows, self.groups(rows).first)
