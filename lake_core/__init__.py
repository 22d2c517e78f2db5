"""lake_core: a Python table store compatible with Apache Paimon's primary-key tables."""
from .catalog import Catalog
from .errors import *  # noqa: F401,F403  (the exception hierarchy is public API)
from .messages import CommitMessage, Split
from .predicate import Predicate, PredicateBuilder
from .schema_change import Move, SchemaChange
from .snapshot import Snapshot
from .table import FileStoreTable

__all__ = ["Catalog", "CommitMessage", "FileStoreTable", "Move", "Predicate", "PredicateBuilder", "SchemaChange", "Snapshot", "Split"]
__version__ = "0.1.0"
