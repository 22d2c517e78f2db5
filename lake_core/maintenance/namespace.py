"""``table.maintenance``: the one namespace of every maintenance operation of a table.

Method names follow Paimon's procedures (``compact``, ``compact_manifest``, ``expire_snapshots``,
``expire_changelogs``, ``expire_partitions``, ``remove_orphan_files``, ``rollback_to``,
``rescale``). Each method is a thin, keyword-only front over the module that implements the
operation; the Dagster assets call exactly these names.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..table import FileStoreTable


class TableMaintenance:
    """Maintenance operations of one table. Obtain it as ``table.maintenance``."""

    def __init__(self, table: "FileStoreTable"):
        self._table = table

    def __repr__(self) -> str:
        return f"TableMaintenance({self._table.identifier!r})"

    # Operations are added below, one section per implementing module.

    # -- compaction (lake_core.compaction) ----------------------------------------------------------
    def compact(self, *, full: bool = False, partitions=None, dry_run: bool = False,
                expire_records: bool = False, parallelism: int = 2):
        """Paimon's ``compact`` procedure for a primary-key table.

        ``full=True`` compacts every selected bucket to the top level; otherwise the universal
        picker decides per bucket (nothing to do is a valid outcome). ``partitions``: a dict or a
        list of dicts of partition values. ``expire_records=True`` rewrites exactly the buckets
        whose value statistics show records older than ``record-level.expire-time``. One COMPACT
        snapshot; units made stale by a concurrent compaction are skipped and reported.
        Returns a :class:`lake_core.compaction.CompactionResult`."""
        from ..compaction.job import compact
        return compact(self._table, full=full, partitions=partitions, dry_run=dry_run,
                       expire_records=expire_records, parallelism=parallelism)
