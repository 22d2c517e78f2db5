"""The merge-engine contract shared by the write path (folding a batch, compaction) and the
read path (merge-on-read), so the two can never disagree.

Input of :meth:`MergeEngine.merge`: one bucket's rows as an Arrow table with every table column
plus ``_SEQUENCE_NUMBER`` (int64) and ``_VALUE_KIND`` (int8, see :mod:`lake_core.kv.rowkind`), in
any order. Output: one row per key (or none, when the key's result is a delete and deletes are
dropped), ordered by key, with the same columns; ``_SEQUENCE_NUMBER`` is the group's newest.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_core.kv import rowkind
from lake_core.kv.system_fields import KIND, SEQ
from lake_core.merge.sequence import rowkind_tiebreak
from lake_core.merge.sort import Groups, group_rows
from lake_core.options import CoreOptions
from lake_core.schema.table_schema import TableSchema


@dataclass(frozen=True)
class MergeContext:
    schema: TableSchema
    options: CoreOptions
    key_columns: tuple[str, ...]  # trimmed primary key: identifies a row inside a bucket
    sequence_fields: tuple[str, ...]
    sequence_descending: bool

    @staticmethod
    def of(schema: TableSchema, options: CoreOptions | None = None) -> MergeContext:
        options = options or CoreOptions(schema.options)
        return MergeContext(
            schema=schema,
            options=options,
            key_columns=tuple(schema.trimmed_primary_keys),
            sequence_fields=options.sequence_fields,
            sequence_descending=options.sequence_descending,
        )

    @property
    def value_columns(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.schema.fields)


class MergeEngine(ABC):
    """One engine instance per table; stateless between calls."""

    name: str = ""
    # Capabilities: scan, read, write and compaction ask the engine these instead of comparing names.
    #: Batch reads skip level 0 (first-row), so writers compact it up at once (ForceUpLevel0).
    hides_level0: bool = False
    #: The merged row of a key is one of its stored rows, unchanged (deduplicate, first-row): value
    #: statistics of the files can prune a whole bucket, and a read needs only the projected columns.
    merged_row_is_stored: bool = False
    #: One sorted run already holds each key once, merged: reading it alone only drops retractions.
    run_is_merged: bool = False
    #: Cross-partition upsert, a key arriving in a new partition: 'delete-old' moves it, 'use-old'
    #: merges into the old row and moves it, 'skip-new' keeps the old one (Java ``ExistingProcessor``).
    on_partition_change: str = "use-old"

    @property
    def lookup_needs_old_value(self) -> bool:
        """Whether merging a key with its looked-up older row needs that row's values, not just its
        position (not when the newest row wins whatever the old one held)."""
        return True

    @property
    def newest_row_wins(self) -> bool:
        """Whether a key's merged row is simply its newest stored row (no sequence field, no
        combining): of runs whose sequence ranges do not interleave, a read can then take each
        key's last row in run order (dropped if it is a retraction) without reading
        ``_SEQUENCE_NUMBER``."""
        return False

    def __init__(self, ctx: MergeContext):
        self.ctx = ctx
        self.validate()

    def validate(self) -> None:  # noqa: B027 - a no-op unless the engine has options to check
        """Check table options/types at table creation; raise LakeError subclasses naming the problem."""

    def prepare_input(self, rows: pa.Table) -> pa.Table:
        """Write-time treatment of incoming rows (already carrying _VALUE_KIND): drop ignored deletes,
        reject unsupported retractions with an error naming the table option to set."""
        if self.ctx.options.ignore_delete:
            rows = drop_retracts(rows)
        return rows

    def groups(self, rows: pa.Table) -> Groups:
        return group_rows(
            rows,
            self.ctx.key_columns,
            self.ctx.sequence_fields,
            self.ctx.sequence_descending,
            rowkind_tiebreak(self.ctx.options),
        )

    @abstractmethod
    def merge(self, rows: pa.Table, drop_deletes: bool) -> pa.Table:
        """Reduce every key group to its merged row (see module docstring)."""

    #: the columns :meth:`pick` reads (None: this engine has no ``pick``)
    def pick_columns(self) -> list[str] | None:
        return None

    def pick(self, rows: pa.Table, drop_deletes: bool) -> np.ndarray:
        """For an engine whose merged row is one of the stored rows unchanged: the positions in
        ``rows`` of the rows :meth:`merge` returns, in its order, so that a reader can gather only
        the columns it returns. ``rows`` needs only :meth:`pick_columns`."""
        raise NotImplementedError(f"merge engine {self.name!r} has no pick")


def drop_retracts(rows: pa.Table) -> pa.Table:
    """Remove -U/-D rows (a fully merged view shows only live rows)."""
    kinds = rows[KIND].to_numpy()
    retract = rowkind.is_retract(kinds)
    return rows.filter(pa.array(~retract)) if retract.any() else rows


def take(rows: pa.Table, indices: np.ndarray) -> pa.Table:
    """The rows at ``indices``, positions a merge computed from ``rows`` itself: Arrow's bounds
    check (a tenth of a gather's time) is skipped."""
    return pc.take(rows, pa.array(indices, type=pa.int64()), boundscheck=False)


__all__ = ["MergeContext", "MergeEngine", "drop_retracts", "take", "SEQ", "KIND"]
