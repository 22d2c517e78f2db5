"""lake_core: a Python table store compatible with Apache Paimon's primary-key tables."""
from .bucket import assign_buckets
from .catalog import Catalog, validate_options
from .errors import *  # noqa: F401,F403  (the exception hierarchy is public API)
from .maintenance.result import OperationResult
from .messages import CommitMessage, Split
from .options import CoreOptions, parse_duration_ms
from .predicate import Predicate, PredicateBuilder
from .schema_change import Move, SchemaChange
from .snapshot import CommitKind, Snapshot
from .table import FileStoreTable
from .types import from_paimon_type

__all__ = [
    "Catalog", "CommitKind", "CommitMessage", "CoreOptions", "FileStoreTable", "Move", "OperationResult",
    "Predicate", "PredicateBuilder", "SchemaChange", "Snapshot", "Split", "assign_buckets", "from_paimon_type",
    "parse_duration_ms", "validate_options",
]
__version__ = "0.1.0"
