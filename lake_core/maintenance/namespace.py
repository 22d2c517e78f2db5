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
