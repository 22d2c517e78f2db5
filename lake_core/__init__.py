"""lake_core: a Python table store compatible with Apache Paimon's primary-key tables."""

import warnings

from lake_core.bucket.assign import assign_buckets
from lake_core.build import __version__, build_id
from lake_core.catalog import Catalog, validate_options
from lake_core.commit.messages import CommitMessage
from lake_core.compaction.figures import BucketFigures, CompactionCheck, UnitFigures, check_compaction

# What table.maintenance returns: frozen results and plans (annotated on every method).
from lake_core.compaction.job import CompactionJob
from lake_core.compaction.plan import BucketCompactionUnit, CompactionPlan
from lake_core.compaction.result import CompactionResult
from lake_core.compaction.rewrite import UnitOutcome
from lake_core.compaction.verify import CompactionVerification

# The one protocol of the maintenance operations that run in parts (compaction, rescale), and its local runner.
from lake_core.distributed import DistributedJob, run_locally
from lake_core.errors import *  # noqa: F401,F403  (the exception hierarchy is public API)
from lake_core.maintenance.consumers import Lease
from lake_core.maintenance.expire_changelogs import ExpireChangelogsPlan, ExpireChangelogsResult
from lake_core.maintenance.expire_snapshots import ExpireSnapshotsPlan, ExpireSnapshotsResult
from lake_core.maintenance.health import TableHealth
from lake_core.maintenance.manifest_compaction import CompactManifestResult
from lake_core.maintenance.orphans import RemoveOrphanFilesResult
from lake_core.maintenance.partitions import ExpirePartitionsResult
from lake_core.maintenance.rescale import (
    PartitionRescaleResult,
    PreparedRescale,
    RescaleJob,
    RescalePlan,
    RescaleResult,
)
from lake_core.maintenance.rescale_verify import PartitionVerification, RescaleVerification, check_rescale
from lake_core.maintenance.rollback import RollbackResult
from lake_core.maintenance.tag_deletion import DeleteTagResult
from lake_core.maintenance.tag_snapshot import TagSnapshotResult
from lake_core.maintenance.tag_snapshot import check_name_format as check_tag_name_format
from lake_core.maintenance.tag_time import ExpireTagsResult
from lake_core.manifest.cache import (
    ManifestCacheStats,
    clear_manifest_cache,
    configure_manifest_cache,
    manifest_cache_stats,
)
from lake_core.options import CoreOptions, parse_duration_ms
from lake_core.read.predicate import Predicate, PredicateBuilder
from lake_core.read.split import Split
from lake_core.read.split_read import ROW_KIND
from lake_core.read.stream_scan import StreamScan
from lake_core.result import OperationResult, human_bytes, human_duration
from lake_core.schema.change import Move, SchemaChange
from lake_core.schema.partition_selector import PartitionSelector
from lake_core.snapshot.latest_ids import LatestSnapshotIds
from lake_core.snapshot.snapshot import CommitKind, Snapshot
from lake_core.system import SystemTable
from lake_core.table import FileStoreTable, ReadOptimizedTable
from lake_core.type_parser import from_paimon_type

__all__ = [
    "Catalog",
    "CommitKind",
    "CommitMessage",
    "CoreOptions",
    "FileStoreTable",
    "Move",
    "OperationResult",
    "PartitionSelector",
    "Predicate",
    "PredicateBuilder",
    "ROW_KIND",
    "ReadOptimizedTable",
    "SchemaChange",
    "Snapshot",
    "Split",
    "StreamScan",
    "SystemTable",
    "TableHealth",
    "assign_buckets",
    "check_tag_name_format",
    "clear_manifest_cache",
    "configure_manifest_cache",
    "manifest_cache_stats",
    "ManifestCacheStats",
    "from_paimon_type",
    "human_bytes",
    "human_duration",
    "parse_duration_ms",
    "validate_options",
    "DistributedJob",
    "run_locally",
    # maintenance results and plans
    "BucketCompactionUnit",
    "CompactManifestResult",
    "CompactionJob",
    "CompactionPlan",
    "CompactionResult",
    "CompactionVerification",
    "CompactionCheck",
    "UnitFigures",
    "BucketFigures",
    "check_compaction",
    "DeleteTagResult",
    "ExpireChangelogsPlan",
    "ExpireChangelogsResult",
    "ExpirePartitionsResult",
    "ExpireSnapshotsPlan",
    "ExpireSnapshotsResult",
    "ExpireTagsResult",
    "Lease",
    "LatestSnapshotIds",
    "PartitionRescaleResult",
    "PreparedRescale",
    "RemoveOrphanFilesResult",
    "RescaleJob",
    "RescalePlan",
    "RescaleResult",
    "RescaleVerification",
    "PartitionVerification",
    "check_rescale",
    "RollbackResult",
    "TagSnapshotResult",
    "UnitOutcome",
    "__version__",
    "build_id",
]

_DEPRECATED = {"CompactionUnit": ("BucketCompactionUnit", BucketCompactionUnit)}


def __getattr__(name: str):
    # CompactionUnit was public; its new name says it is one bucket of a dedicated job, not the
    # picker's CompactUnit. The old name keeps working, with a warning, for one release.
    if name in _DEPRECATED:
        new, value = _DEPRECATED[name]
        warnings.warn(f"lake_core.{name} is deprecated; use lake_core.{new}", DeprecationWarning, stacklevel=2)
        return value
    raise AttributeError(f"module 'lake_core' has no attribute {name!r}")
