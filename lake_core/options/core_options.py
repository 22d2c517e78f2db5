"""Typed access to a table's options (Java ``CoreOptions``' getters), each attribute read from its
declaration in :mod:`.table_options`.

A value is parsed on first use and kept on the instance (one ``CoreOptions`` per table handle), so
the write and read paths pay an attribute lookup, not a parse.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Generic, TypeVar, overload

from lake_core.option_values import parse_bool
from lake_core.options import table_options as o
from lake_core.options.config_option import ConfigOption

T = TypeVar("T")

READ_BATCH_ROWS = 65_536  # 'read.batch-size' when unset
# rounds of a read that returns its whole result (to_arrow) when 'read.batch-size' is unset: that
# result dwarfs the rounds, and fewer, larger rounds keep two reader threads busier
MATERIALIZED_READ_ROWS = 1 << 20
TARGET_FILE_SIZE = 128 << 20  # 'target-file-size' when unset (Paimon's for primary-key tables)


class _Typed(Generic[T]):
    """A ``CoreOptions`` attribute: its option's typed value (None when unset without a default).
    Not annotated in the class body, where a dataclass would take it for a field."""

    def __init__(self, option: ConfigOption[T]):
        self.option = option

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, options: None, owner: type) -> _Typed[T]: ...

    @overload
    def __get__(self, options: CoreOptions, owner: type) -> T: ...

    def __get__(self, options: CoreOptions | None, owner: type | None = None) -> T | _Typed[T] | None:
        if options is None:
            return self
        value = self.option.read(options.raw)
        # a non-data descriptor: the instance's entry shadows it from now on
        options.__dict__[self.name] = value
        return value


@dataclass(frozen=True)
class CoreOptions:
    """Typed view over a table's option map (strings, as stored in schema-N)."""

    raw: Mapping[str, str]

    def text(self, option: ConfigOption) -> str | None:
        """The option as stored (else its default), for messages and records that quote it."""
        return option.text(self.raw)

    def get(self, key: str, default: str | None = None) -> str | None:
        """The option named ``key`` as stored, else ``default``, else its declared default. For code
        outside lake_core (orchestration's jobs read tables' options by name); lake_core reads the
        typed attributes."""
        if key in self.raw:
            return self.raw[key]
        if default is not None:
            return default
        return o.BY_KEY[key].default if key in o.BY_KEY else None

    # -- buckets --------------------------------------------------------------------------------------
    bucket = _Typed(o.BUCKET)
    bucket_key = _Typed(o.BUCKET_KEY)
    bucket_function = _Typed(o.BUCKET_FUNCTION_TYPE)
    dynamic_bucket_target_row_num = _Typed(o.DYNAMIC_BUCKET_TARGET_ROW_NUM)
    dynamic_bucket_initial_buckets = _Typed(o.DYNAMIC_BUCKET_INITIAL_BUCKETS)
    dynamic_bucket_max_buckets = _Typed(o.DYNAMIC_BUCKET_MAX_BUCKETS)
    cross_partition_upsert_index_ttl_ms = _Typed(o.CROSS_PARTITION_UPSERT_INDEX_TTL)

    # -- merge engine ---------------------------------------------------------------------------------
    merge_engine = _Typed(o.MERGE_ENGINE)
    partial_update_remove_record_on_delete = _Typed(o.PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE)
    partial_update_remove_record_on_sequence_group = _Typed(o.PARTIAL_UPDATE_REMOVE_RECORD_ON_SEQUENCE_GROUP)
    aggregation_remove_record_on_delete = _Typed(o.AGGREGATION_REMOVE_RECORD_ON_DELETE)
    default_aggregate_function = _Typed(o.FIELDS_DEFAULT_AGGREGATE_FUNCTION)

    @cached_property
    def ignore_delete(self) -> bool:
        # any of its names set to true (Paimon reads the first of them that is set)
        return any(parse_bool(k, self.raw[k]) for k in o.IGNORE_DELETE.keys if k in self.raw)

    # -- sequence and row kind ------------------------------------------------------------------------
    _sequence_field = _Typed(o.SEQUENCE_FIELD)
    _sequence_field_sort_order = _Typed(o.SEQUENCE_FIELD_SORT_ORDER)
    sequence_auto_padding = _Typed(o.SEQUENCE_AUTO_PADDING)
    rowkind_field = _Typed(o.ROWKIND_FIELD)

    @cached_property
    def sequence_fields(self) -> tuple[str, ...]:
        v = self._sequence_field
        return tuple(f.strip() for f in v.split(",") if f.strip()) if v else ()

    @cached_property
    def sequence_descending(self) -> bool:
        return self._sequence_field_sort_order == "descending"

    # -- changelog ------------------------------------------------------------------------------------
    changelog_producer = _Typed(o.CHANGELOG_PRODUCER)
    changelog_producer_row_deduplicate = _Typed(o.CHANGELOG_PRODUCER_ROW_DEDUPLICATE)

    # -- data files -----------------------------------------------------------------------------------
    file_format = _Typed(o.FILE_FORMAT)
    file_compression = _Typed(o.FILE_COMPRESSION)
    stats_mode = _Typed(o.METADATA_STATS_MODE)
    _target_file_size = _Typed(o.TARGET_FILE_SIZE)
    parquet_block_size = _Typed(o.PARQUET_BLOCK_SIZE)
    data_file_prefix = _Typed(o.DATA_FILE_PREFIX)
    changelog_file_prefix = _Typed(o.CHANGELOG_FILE_PREFIX)

    @cached_property
    def target_file_size(self) -> int:
        return TARGET_FILE_SIZE if self._target_file_size is None else self._target_file_size

    # -- per-column options ---------------------------------------------------------------------------
    def field_option(self, column: str, suffix: str, default: str | None = None) -> str | None:
        """``fields.<column>.<suffix>`` as stored (each aggregate function reads its own)."""
        return self.raw.get(f"fields.{column}.{suffix}", default)

    def field_stats_mode(self, name: str) -> str:
        return self.raw.get(o.FIELD_STATS_MODE.key(name), self.stats_mode)

    def aggregate_function(self, column: str) -> str | None:
        """The column's own aggregate function (``default_aggregate_function`` covers the others)."""
        return self.raw.get(o.FIELD_AGGREGATE_FUNCTION.key(column))

    def ignore_retract(self, column: str) -> bool:
        return (self.raw.get(o.FIELD_IGNORE_RETRACT.key(column), "false") or "false").strip().lower() == "true"

    # -- manifests ------------------------------------------------------------------------------------
    manifest_target_file_size = _Typed(o.MANIFEST_TARGET_FILE_SIZE)
    manifest_merge_min_count = _Typed(o.MANIFEST_MERGE_MIN_COUNT)
    manifest_full_compaction_threshold_size = _Typed(o.MANIFEST_FULL_COMPACTION_THRESHOLD_SIZE)

    # -- compaction (Paimon's UniversalCompaction / MergeTreeCompactManager options) -------------------
    num_sorted_run_compaction_trigger = _Typed(o.NUM_SORTED_RUN_COMPACTION_TRIGGER)
    _num_sorted_run_stop_trigger = _Typed(o.NUM_SORTED_RUN_STOP_TRIGGER)
    _num_levels = _Typed(o.NUM_LEVELS)
    compaction_max_size_amp = _Typed(o.COMPACTION_MAX_SIZE_AMPLIFICATION_PERCENT)
    compaction_size_ratio = _Typed(o.COMPACTION_SIZE_RATIO)
    compaction_small_file_ratio = _Typed(o.COMPACTION_SMALL_FILE_RATIO)
    compaction_optimization_interval_ms = _Typed(o.COMPACTION_OPTIMIZATION_INTERVAL)
    compaction_total_size_threshold = _Typed(o.COMPACTION_TOTAL_SIZE_THRESHOLD)
    compaction_incremental_size_threshold = _Typed(o.COMPACTION_INCREMENTAL_SIZE_THRESHOLD)
    compaction_force_rewrite_all_files = _Typed(o.COMPACTION_FORCE_REWRITE_ALL_FILES)
    full_compaction_delta_commits = _Typed(o.FULL_COMPACTION_DELTA_COMMITS)
    commit_force_compact = _Typed(o.COMMIT_FORCE_COMPACT)
    write_only = _Typed(o.WRITE_ONLY)
    record_level_expire_time_ms = _Typed(o.RECORD_LEVEL_EXPIRE_TIME)
    record_level_time_field = _Typed(o.RECORD_LEVEL_TIME_FIELD)

    @cached_property
    def num_levels(self) -> int:
        return self.num_sorted_run_compaction_trigger + 1 if self._num_levels is None else self._num_levels

    @cached_property
    def num_sorted_run_stop_trigger(self) -> int:
        trigger = self.num_sorted_run_compaction_trigger
        stop = self._num_sorted_run_stop_trigger
        return trigger + 3 if stop is None else max(trigger, stop)

    # -- commit ---------------------------------------------------------------------------------------
    commit_max_retries = _Typed(o.COMMIT_MAX_RETRIES)
    commit_min_retry_wait_ms = _Typed(o.COMMIT_MIN_RETRY_WAIT)
    commit_max_retry_wait_ms = _Typed(o.COMMIT_MAX_RETRY_WAIT)
    commit_timeout_ms = _Typed(o.COMMIT_TIMEOUT)

    # -- expiry of snapshots, changelogs and consumers -------------------------------------------------
    snapshot_num_retained_min = _Typed(o.SNAPSHOT_NUM_RETAINED_MIN)
    snapshot_num_retained_max = _Typed(o.SNAPSHOT_NUM_RETAINED_MAX)
    snapshot_time_retained_ms = _Typed(o.SNAPSHOT_TIME_RETAINED)
    snapshot_expire_limit = _Typed(o.SNAPSHOT_EXPIRE_LIMIT)
    # unset: the snapshot.* value (CoreOptions.changelogNumRetainMin/Max, changelogTimeRetain)
    changelog_num_retained_min = _Typed(o.CHANGELOG_NUM_RETAINED_MIN)
    changelog_num_retained_max = _Typed(o.CHANGELOG_NUM_RETAINED_MAX)
    changelog_time_retained_ms = _Typed(o.CHANGELOG_TIME_RETAINED)
    consumer_expiration_time_ms = _Typed(o.CONSUMER_EXPIRATION_TIME)

    # -- partitions -----------------------------------------------------------------------------------
    partition_default_name = _Typed(o.PARTITION_DEFAULT_NAME)
    partition_expiration_time_ms = _Typed(o.PARTITION_EXPIRATION_TIME)
    partition_expiration_check_interval_ms = _Typed(o.PARTITION_EXPIRATION_CHECK_INTERVAL)
    partition_timestamp_formatter = _Typed(o.PARTITION_TIMESTAMP_FORMATTER)
    partition_timestamp_pattern = _Typed(o.PARTITION_TIMESTAMP_PATTERN)

    # -- tags -----------------------------------------------------------------------------------------
    tag_automatic_creation = _Typed(o.TAG_AUTOMATIC_CREATION)
    tag_creation_period = _Typed(o.TAG_CREATION_PERIOD)
    tag_num_retained_max = _Typed(o.TAG_NUM_RETAINED_MAX)
    tag_default_time_retained_ms = _Typed(o.TAG_DEFAULT_TIME_RETAINED)

    # -- deletion vectors -----------------------------------------------------------------------------
    deletion_vectors_enabled = _Typed(o.DELETION_VECTORS_ENABLED)
    deletion_vectors_bitmap64 = _Typed(o.DELETION_VECTORS_BITMAP64)

    # -- reading --------------------------------------------------------------------------------------
    _read_batch_size = _Typed(o.READ_BATCH_SIZE)

    @cached_property
    def read_batch_rows(self) -> int:
        """Rows read per data file per merge round (``read.batch-size``): merge-on-read and compaction
        hold about this many rows per sorted run, whatever the size of the bucket."""
        return READ_BATCH_ROWS if self._read_batch_size is None else self._read_batch_size

    @cached_property
    def materialized_read_rows(self) -> int:
        """Rows per data file per merge round of a read that keeps its whole result (``to_arrow``):
        ``read.batch-size`` when set, else ``MATERIALIZED_READ_ROWS``."""
        return MATERIALIZED_READ_ROWS if self._read_batch_size is None else self._read_batch_size
