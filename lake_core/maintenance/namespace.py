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

    # -- rescale (lake_core/maintenance/rescale.py) ------------------------------------------------
    def rescale(self, *, bucket: int, partitions=None, dry_run: bool = False):
        """Set the ``bucket`` option and rewrite the selected partitions (a list of
        ``{column: value}`` selectors; all when None) into ``bucket`` buckets, one verified
        OVERWRITE per partition. Returns a ``RescaleResult``."""
        from .rescale import rescale
        return rescale(self._table, bucket=bucket, partitions=partitions, dry_run=dry_run)

    def plan_rescale(self, *, bucket: int, partitions=None):
        """The partitions a rescale to ``bucket`` would rewrite (metadata only): a ``RescalePlan``."""
        from .rescale import plan_rescale
        return plan_rescale(self._table, bucket=bucket, partitions=partitions)

    def rescale_partition(self, *, partition=None, bucket: int, commit_user: str | None = None,
                          dry_run: bool = False):
        """Rewrite one partition into ``bucket`` buckets (the unit of a backfill). The table's
        ``bucket`` option is not changed here; ``rescale`` (or ``alter_table``) sets it."""
        from .rescale import rescale_partition
        return rescale_partition(self._table, partition=partition, bucket=bucket, commit_user=commit_user,
                                 dry_run=dry_run)
