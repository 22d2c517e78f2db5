"""lake_core: a Python table store compatible with Apache Paimon's primary-key tables."""
from lake_core.bucket.assign import assign_buckets
from lake_core.catalog import Catalog, validate_options
from lake_core.errors import *  # noqa: F401,F403  (the exception hierarchy is public API)
from lake_core.maintenance.health import TableHealth
from lake_core.result import OperationResult
from lake_core.maintenance.tag_snapshot import check_name_format as check_tag_name_format
from lake_core.commit.messages import CommitMessage
from lake_core.read.split import Split
from lake_core.options import CoreOptions, parse_duration_ms
from lake_core.read.predicate import Predicate, PredicateBuilder
from lake_core.read.split_read import ROW_KIND
from lake_core.read.stream_scan import StreamScan
from lake_core.schema.change import Move, SchemaChange
from lake_core.schema.partition_selector import PartitionSelector
from lake_core.snapshot.snapshot import CommitKind, Snapshot
from lake_core.table import FileStoreTable, ReadOptimizedTable
from lake_core.type_parser import from_paimon_type

__all__ = [
    "Catalog", "CommitKind", "CommitMessage", "CoreOptions", "FileStoreTable", "Move", "OperationResult",
    "PartitionSelector", "Predicate", "PredicateBuilder", "ROW_KIND", "ReadOptimizedTable", "SchemaChange", "Snapshot", "Split", "StreamScan", "TableHealth", "assign_buckets",
    "check_tag_name_format", "from_paimon_type", "parse_duration_ms", "validate_options",
]
__version__ = "0.1.0"
