"""Table maintenance: every operation that keeps a table healthy, named after Paimon's procedures.

Reached as ``table.maintenance`` (a :class:`TableMaintenance`). Each operation plans from metadata
first, can be shown as a dry run, then executes and returns a frozen result whose ``as_metadata()``
is what the Dagster service records.
"""

from lake_core.maintenance.namespace import TableMaintenance
from lake_core.result import OperationResult

__all__ = ["TableMaintenance", "OperationResult"]
