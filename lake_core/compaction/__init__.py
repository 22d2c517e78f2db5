"""LSM compaction as Paimon does it: levels, the universal picker, compaction units and the
dedicated compaction job (``table.maintenance.compact``)."""

from lake_core.compaction.figures import BucketFigures, CompactionCheck, UnitFigures, check_compaction
from lake_core.compaction.job import CompactionJob, abort_compaction, commit_compaction, compaction_job
from lake_core.compaction.picker import CompactUnit, UniversalConfig, pick_full, pick_universal
from lake_core.compaction.plan import BucketCompactionUnit, CompactionPlan, plan_compaction, run_unit
from lake_core.compaction.result import CompactionResult
from lake_core.compaction.verify import CompactionVerification, verify_compaction
from lake_core.lsm.levels import Levels, LevelSortedRun, SortedRun

__all__ = [
    "Levels",
    "LevelSortedRun",
    "SortedRun",
    "CompactUnit",
    "UniversalConfig",
    "pick_full",
    "pick_universal",
    "CompactionPlan",
    "BucketCompactionUnit",
    "plan_compaction",
    "run_unit",
    "CompactionResult",
    "CompactionJob",
    "compaction_job",
    "commit_compaction",
    "abort_compaction",
    "CompactionVerification",
    "verify_compaction",
    "UnitFigures",
    "BucketFigures",
    "CompactionCheck",
    "check_compaction",
]
