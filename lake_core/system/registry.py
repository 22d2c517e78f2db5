"""The system tables lake_core serves, by the suffix after ``$`` (Java ``SystemTableLoader``)."""

from __future__ import annotations

from lake_core.system.audit_log import AUDIT_LOG
from lake_core.system.consumers import CONSUMERS
from lake_core.system.files import FILES
from lake_core.system.kind import SystemTableKind
from lake_core.system.manifests import MANIFESTS
from lake_core.system.options import OPTIONS
from lake_core.system.partitions import BUCKETS, PARTITIONS
from lake_core.system.schemas import SCHEMAS
from lake_core.system.snapshots import SNAPSHOTS
from lake_core.system.tags import TAGS

#: ``$ro`` is not here: it is a table of rows (lake_core.table.ReadOptimizedTable).
SYSTEM_TABLES: dict[str, SystemTableKind] = {
    k.name: k for k in (SNAPSHOTS, SCHEMAS, OPTIONS, FILES, MANIFESTS, PARTITIONS, BUCKETS, TAGS, CONSUMERS, AUDIT_LOG)
}
