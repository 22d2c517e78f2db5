"""Paimon's metadata system tables (``db.t$snapshots``, ``$schemas``, ``$options``, ``$files``,
``$manifests``, ``$partitions``, ``$buckets``, ``$tags``, ``$consumers``, ``$audit_log``), with
Paimon 1.0's column names and types. One module per table; :mod:`lake_core.system.table` is the
read-only table object, :mod:`lake_core.system.registry` maps the suffixes to them.

This layer sits between the catalog and the table: it reads a table's metadata through the table
and the stages below it (read, maintenance's consumer and tag files), and nothing below imports it."""

from lake_core.system.registry import SYSTEM_TABLES
from lake_core.system.table import SystemReadBuilder, SystemSplit, SystemTable

__all__ = ["SYSTEM_TABLES", "SystemReadBuilder", "SystemSplit", "SystemTable"]
