"""Table options: Paimon's names and defaults, validated strictly.

Paimon silently ignores options it does not know (Java ``CoreOptions``); we reject them so a typo never
turns into a silently different table. Options Paimon has but lake_core does not implement yet are
named as such, so the user knows the difference between "typo" and "not yet".
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from lake_core.errors import InvalidOptionError, UnsupportedOptionError

# The value parsers live below format/, which reads the writer options with them too.
from lake_core.option_values import (
    INT_RANGE,
    LONG_RANGE,
    parse_bool,
    parse_duration_ms,
    parse_int,
    parse_memory_size,
)

MERGE_ENGINES = ("deduplicate", "partial-update", "aggregation", "first-row")
CHANGELOG_PRODUCERS = ("none", "input", "lookup", "full-compaction")
FILE_FORMATS = ("parquet", "orc", "avro")
READ_BATCH_ROWS = 65_536  # 'read.batch-size' when unset
# rounds of a read that returns its whole result (to_arrow) when 'read.batch-size' is unset: that
# result dwarfs the rounds, and fewer, larger rounds keep two reader threads busier
MATERIALIZED_READ_ROWS = 1 << 20

# Exact option names lake_core understands, with their Paimon defaults (None = no default).
KNOWN: dict[str, str | None] = {
    "bucket": "-1",
    "bucket-key": None,
    "bucket-function.type": "default",
    "merge-engine": "deduplicate",
    "ignore-delete": "false",
    "first-row.ignore-delete": "false",
    "deduplicate.ignore-delete": "false",
    "partial-update.ignore-delete": "false",
    "partial-update.remove-record-on-delete": "false",
    "partial-update.remove-record-on-sequence-group": None,
    "aggregation.remove-record-on-delete": "false",
    "fields.default-aggregate-function": None,
    "sequence.field": None,
    "sequence.field.sort-order": "ascending",
    "sequence.auto-padding": None,
    "rowkind.field": None,
    "changelog-producer": "none",
    "changelog-producer.row-deduplicate": "false",
    "file.format": "parquet",
    "file.compression": "zstd",
    "file.compression.zstd-level": "1",
    "metadata.stats-mode": "truncate(16)",
    "manifest.compression": "zstd",
    "manifest.format": "avro",
    "manifest.target-file-size": "8 mb",
    "manifest.merge-min-count": "30",
    "manifest.full-compaction-threshold-size": "16 mb",
    "target-file-size": None,
    "parquet.block.size": None,  # Parquet's row-group size (ParquetOutputFormat.BLOCK_SIZE)
    "orc.stripe.size": None,  # ORC's stripe size (OrcConf.STRIPE_SIZE)
    "write-buffer-size": "256 mb",
    "page-size": "64 kb",
    "num-sorted-run.compaction-trigger": "5",
    "num-sorted-run.stop-trigger": None,
    "num-levels": None,
    "compaction.max-size-amplification-percent": "200",
    "compaction.size-ratio": "1",
    "compaction.min.file-num": "5",
    "compaction.small-file-ratio": "0.7",
    "compaction.optimization-interval": None,
    "compaction.total-size-threshold": None,
    "compaction.incremental-size-threshold": None,
    "compaction.force-rewrite-all-files": "false",
    "full-compaction.delta-commits": None,
    "commit.force-compact": "false",
    "write-only": "false",
    "snapshot.num-retained.min": "10",
    "snapshot.num-retained.max": "2147483647",
    "snapshot.time-retained": "1 h",
    "snapshot.expire.limit": "50",
    "snapshot.clean-empty-directories": "false",
    "snapshot.expire.execution-mode": "sync",
    # Unset: the snapshot.* value (CoreOptions.changelogNumRetainMin/Max, changelogTimeRetain).
    "changelog.num-retained.min": None,
    "changelog.num-retained.max": None,
    "changelog.time-retained": None,
    "consumer.expiration-time": None,
    "partition.expiration-check-interval": "1 h",
    "tag.automatic-creation": "none",
    "tag.creation-period": "daily",
    "tag.num-retained-max": None,
    "tag.default-time-retained": None,
    "commit.max-retries": "10",
    "commit.min-retry-wait": "10 ms",
    "commit.max-retry-wait": "10 s",
    "commit.timeout": None,
    "partition.default-name": "__DEFAULT_PARTITION__",
    "data-file.prefix": "data-",
    "changelog-file.prefix": "changelog-",
    "file.suffix.include.compression": "false",
    "dynamic-bucket.target-row-num": "2000000",
    "dynamic-bucket.initial-buckets": None,
    "dynamic-bucket.max-buckets": "-1",
    "cross-partition-upsert.index-ttl": None,
    "cross-partition-upsert.bootstrap-parallelism": "10",
    "record-level.expire-time": None,
    "record-level.time-field": None,
    "partition.expiration-time": None,
    "partition.timestamp-formatter": None,
    "partition.timestamp-pattern": None,
    "deletion-vectors.enabled": "false",
    "deletion-vectors.bitmap64": "false",
    # Paimon's default is 1024 (rows per batch of its format readers); unset, lake_core reads
    # READ_BATCH_ROWS: its merge is vectorized per chunk, so small chunks cost speed
    "read.batch-size": None,
    "path": None,
    "owner": None,
    "comment": None,
}

# Per-field options: fields.<name>.<suffix>
FIELD_OPTION_SUFFIXES = (
    "aggregate-function",
    "ignore-retract",
    "sequence-group",
    "list-agg-delimiter",
    "distinct",
    "nested-key",
    "count-limit",
    "stats-mode",
    "default-value",
)

# Paimon options we know exist but do not implement: rejected with "not supported yet".
UNSUPPORTED_PREFIXES = (
    "file-index.",
    "changelog.",
    "tag.",
    "consumer.",
    "lookup.",
    "data-file.thin-mode",
    "deletion-vectors.",
    "row-tracking.",
    "data-evolution.",
    "scan.",
    "incremental-between",
    "streaming-read",
    "local-merge-buffer-size",
    "sink.",
    "index-file-in-data-file-dir",
    "data-file.external-paths",
    "global-index.",
    "bucket-append-ordered",
    "sequence.snapshot-ordering",
    "metadata.stats-keep-first-n-columns",
)

def validate_option_names(options: Mapping[str, str]) -> None:
    """Reject unknown options and known-but-unsupported ones, naming each."""
    for key in options:
        if key in KNOWN:
            continue
        if key.startswith("fields."):
            suffix = key.rsplit(".", 1)[-1]
            if key.count(".") >= 2 and suffix in FIELD_OPTION_SUFFIXES:
                continue
            raise UnsupportedOptionError(
                f"unknown per-field option '{key}'; supported suffixes: "
                + ", ".join(f"fields.<name>.{s}" for s in FIELD_OPTION_SUFFIXES))
        if key.startswith(UNSUPPORTED_PREFIXES):
            raise UnsupportedOptionError(
                f"option '{key}' is a Paimon option that lake_core does not support yet; remove it")
        raise UnsupportedOptionError(f"unknown table option '{key}' (check the spelling against Paimon's CoreOptions)")


@dataclass(frozen=True)
class CoreOptions:
    """Typed view over a table's option map (strings, as stored in schema-N)."""

    raw: Mapping[str, str]

    def get(self, key: str, default: str | None = None) -> str | None:
        if key in self.raw:
            return self.raw[key]
        return KNOWN.get(key, default) if default is None else default

    def get_bool(self, key: str) -> bool:
        return parse_bool(key, self.get(key) or "false")

    @property
    def deletion_vectors_enabled(self) -> bool:
        return self.get_bool("deletion-vectors.enabled")

    @property
    def deletion_vectors_bitmap64(self) -> bool:
        return self.get_bool("deletion-vectors.bitmap64")

    def get_int(self, key: str) -> int:
        return parse_int(key, self.get(key))

    # -- the options the write/read paths consult --------------------------------------------
    @property
    def read_batch_rows(self) -> int:
        """Rows read per data file per merge round (``read.batch-size``): merge-on-read and compaction
        hold about this many rows per sorted run, whatever the size of the bucket."""
        v = self.get("read.batch-size")
        return parse_int("read.batch-size", v) if v else READ_BATCH_ROWS

    @property
    def materialized_read_rows(self) -> int:
        """Rows per data file per merge round of a read that keeps its whole result (``to_arrow``):
        ``read.batch-size`` when set, else ``MATERIALIZED_READ_ROWS``."""
        return self.read_batch_rows if self.get("read.batch-size") else MATERIALIZED_READ_ROWS

    @property
    def bucket(self) -> int:
        return parse_int("bucket", self.get("bucket"))

    @property
    def bucket_function(self) -> str:
        return (self.get("bucket-function.type") or "default").lower()

    @property
    def merge_engine(self) -> str:
        return self.get("merge-engine")

    @property
    def ignore_delete(self) -> bool:
        # Paimon's 'ignore-delete' has fallback keys per merge engine.
        return any(self.get_bool(k) for k in (
            "ignore-delete", "first-row.ignore-delete", "deduplicate.ignore-delete",
            "partial-update.ignore-delete") if k in self.raw)

    @property
    def sequence_fields(self) -> tuple[str, ...]:
        v = self.get("sequence.field")
        return tuple(f.strip() for f in v.split(",") if f.strip()) if v else ()

    @property
    def sequence_descending(self) -> bool:
        return (self.get("sequence.field.sort-order") or "ascending").lower() == "descending"

    @property
    def rowkind_field(self) -> str | None:
        return self.get("rowkind.field")

    @property
    def changelog_producer(self) -> str:
        return self.get("changelog-producer")

    @property
    def file_format(self) -> str:
        return self.get("file.format").lower()

    @property
    def file_compression(self) -> str:
        return self.get("file.compression").lower()

    @property
    def stats_mode(self) -> str:
        return self.get("metadata.stats-mode")

    def field_stats_mode(self, name: str) -> str:
        return self.raw.get(f"fields.{name}.stats-mode", self.stats_mode)

    @property
    def target_file_size(self) -> int:
        v = self.get("target-file-size")
        return parse_memory_size("target-file-size", v) if v else 128 << 20

    @property
    def parquet_block_size(self) -> int | None:
        """``parquet.block.size``: bytes of rows per Parquet row group (None: the writer's default)."""
        v = self.get("parquet.block.size")
        return parse_memory_size("parquet.block.size", v) if v else None

    @property
    def partition_default_name(self) -> str:
        return self.get("partition.default-name")

    @property
    def data_file_prefix(self) -> str:
        return self.get("data-file.prefix")

    @property
    def changelog_file_prefix(self) -> str:
        return self.get("changelog-file.prefix")

    @property
    def commit_max_retries(self) -> int:
        return self.get_int("commit.max-retries")

    @property
    def commit_min_retry_wait_ms(self) -> int:
        return parse_duration_ms("commit.min-retry-wait", self.get("commit.min-retry-wait"))

    @property
    def commit_max_retry_wait_ms(self) -> int:
        return parse_duration_ms("commit.max-retry-wait", self.get("commit.max-retry-wait"))

    @property
    def commit_timeout_ms(self) -> int | None:
        v = self.get("commit.timeout")
        return parse_duration_ms("commit.timeout", v) if v else None

    @property
    def num_sorted_run_compaction_trigger(self) -> int:
        return self.get_int("num-sorted-run.compaction-trigger")

    @property
    def num_levels(self) -> int:
        v = self.get("num-levels")
        return parse_int("num-levels", v) if v else self.num_sorted_run_compaction_trigger + 1

    # -- compaction (Paimon's UniversalCompaction / MergeTreeCompactManager options) ----------------
    @property
    def num_sorted_run_stop_trigger(self) -> int:
        v = self.get("num-sorted-run.stop-trigger")
        trigger = self.num_sorted_run_compaction_trigger
        return max(trigger, parse_int("num-sorted-run.stop-trigger", v)) if v else trigger + 3

    @property
    def compaction_max_size_amp(self) -> int:
        return self.get_int("compaction.max-size-amplification-percent")

    @property
    def compaction_size_ratio(self) -> int:
        return self.get_int("compaction.size-ratio")

    @property
    def compaction_small_file_ratio(self) -> float:
        return _parse_ratio("compaction.small-file-ratio", self.get("compaction.small-file-ratio"))

    @property
    def compaction_force_rewrite_all_files(self) -> bool:
        return self.get_bool("compaction.force-rewrite-all-files")

    @property
    def compaction_optimization_interval_ms(self) -> int | None:
        v = self.get("compaction.optimization-interval")
        return parse_duration_ms("compaction.optimization-interval", v) if v else None

    @property
    def compaction_total_size_threshold(self) -> int | None:
        v = self.get("compaction.total-size-threshold")
        return parse_memory_size("compaction.total-size-threshold", v) if v else None

    @property
    def compaction_incremental_size_threshold(self) -> int | None:
        v = self.get("compaction.incremental-size-threshold")
        return parse_memory_size("compaction.incremental-size-threshold", v) if v else None

    @property
    def full_compaction_delta_commits(self) -> int | None:
        v = self.get("full-compaction.delta-commits")
        return parse_int("full-compaction.delta-commits", v) if v else None

    @property
    def write_only(self) -> bool:
        return self.get_bool("write-only")

    @property
    def commit_force_compact(self) -> bool:
        return self.get_bool("commit.force-compact")


# Integer options and the values Paimon's CoreOptions / SchemaValidation give meaning to:
# (minimum, maximum, what the bound means). Checked when a table is created.
_INT_OPTIONS: dict[str, tuple[int, int, str]] = {
    "num-levels": (2, INT_RANGE[1], "at least 2: level 0 plus one sorted level"),
    "num-sorted-run.compaction-trigger": (1, INT_RANGE[1], "at least 1 sorted run"),
    "num-sorted-run.stop-trigger": (1, INT_RANGE[1], "at least 1 sorted run"),
    "commit.max-retries": (0, INT_RANGE[1], "0 (no retry) or more"),
    "snapshot.num-retained.min": (1, INT_RANGE[1], "at least 1 snapshot"),
    "snapshot.num-retained.max": (1, INT_RANGE[1], "at least 1 snapshot"),
    "snapshot.expire.limit": (1, INT_RANGE[1], "at least 1 snapshot per expiry"),
    "changelog.num-retained.min": (1, INT_RANGE[1], "at least 1 changelog"),
    "changelog.num-retained.max": (1, INT_RANGE[1], "at least 1 changelog"),
    "tag.num-retained-max": (1, INT_RANGE[1], "at least 1 tag"),
    "manifest.merge-min-count": (1, INT_RANGE[1], "at least 1 manifest"),
    "compaction.max-size-amplification-percent": (0, INT_RANGE[1], "a percentage, 0 or more"),
    "compaction.size-ratio": (0, INT_RANGE[1], "a percentage, 0 or more"),
    "compaction.min.file-num": (1, INT_RANGE[1], "at least 1 file"),
    "full-compaction.delta-commits": (1, INT_RANGE[1], "at least 1 commit"),
    "cross-partition-upsert.bootstrap-parallelism": (1, INT_RANGE[1], "at least 1 thread"),
    "dynamic-bucket.target-row-num": (1, LONG_RANGE[1], "at least 1 key per bucket"),
    "dynamic-bucket.max-buckets": (-1, INT_RANGE[1], "-1 (unlimited) or a positive count"),  # 0: see below
    "dynamic-bucket.initial-buckets": (1, INT_RANGE[1], "at least 1 bucket"),
    "read.batch-size": (1, INT_RANGE[1], "at least 1 row"),
    # zstd's own level range (ZSTD_minCLevel()..ZSTD_maxCLevel()); negative levels are zstd's fast modes
    "file.compression.zstd-level": (-(1 << 17), 22, "a zstd level between -131072 and 22"),
}
_MEMORY_OPTIONS: dict[str, int] = {  # option -> minimum bytes
    "target-file-size": 1, "parquet.block.size": 1, "orc.stripe.size": 1, "write-buffer-size": 1, "page-size": 1,
    "manifest.target-file-size": 1,
    "manifest.full-compaction-threshold-size": 0, "compaction.total-size-threshold": 0,
    "compaction.incremental-size-threshold": 0,
}
_DURATION_OPTIONS = ("commit.min-retry-wait", "commit.max-retry-wait", "commit.timeout", "snapshot.time-retained",
                     "cross-partition-upsert.index-ttl", "record-level.expire-time", "partition.expiration-time",
                     "consumer.expiration-time", "partition.expiration-check-interval",
                     "compaction.optimization-interval", "changelog.time-retained",
                     "tag.default-time-retained")
_BOOL_OPTIONS = ("ignore-delete", "first-row.ignore-delete", "deduplicate.ignore-delete",
                 "partial-update.ignore-delete", "write-only", "partial-update.remove-record-on-delete",
                 "aggregation.remove-record-on-delete", "commit.force-compact", "file.suffix.include.compression",
                 "changelog-producer.row-deduplicate", "snapshot.clean-empty-directories", "deletion-vectors.enabled",
                 "deletion-vectors.bitmap64", "compaction.force-rewrite-all-files")
_ENUM_OPTIONS: dict[str, tuple[str, ...]] = {  # compared case-insensitively, as Java's enum options
    "sequence.field.sort-order": ("ascending", "descending"),
    "manifest.format": ("avro",),
    "tag.creation-period": ("daily", "hourly", "two-hours"),
}


def _parse_ratio(key: str, value: str) -> float:
    try:
        x = float(str(value))
    except ValueError:
        x = float("nan")
    if not (x >= 0 and x != float("inf")):  # also refuses NaN
        raise InvalidOptionError(f"option '{key}' = {value!r} must be a finite number, 0 or more (e.g. '0.7')")
    return x


def _check_choice(key: str, value: str, choices: Sequence[str], *, ignore_case: bool) -> None:
    v = value.lower() if ignore_case else value
    if v not in choices:
        raise InvalidOptionError(f"option '{key}' = {value!r} is invalid; choose one of {', '.join(choices)}")


def _check_int_options(options: Mapping[str, str]) -> None:
    for key, (lo, hi, what) in _INT_OPTIONS.items():
        if key in options:
            n = parse_int(key, options[key], LONG_RANGE)
            if not lo <= n <= hi or (key == "dynamic-bucket.max-buckets" and n == 0):
                raise InvalidOptionError(f"option '{key}' = {options[key]!r} is invalid: it must be {what}")
    for kind in ("snapshot", "changelog"):
        lo_key, hi_key = f"{kind}.num-retained.min", f"{kind}.num-retained.max"
        if lo_key in options or hi_key in options:
            # changelog.* fall back to snapshot.* (CoreOptions.changelogNumRetainMin/Max)
            lo = parse_int(lo_key, options.get(lo_key) or options.get("snapshot.num-retained.min")
                            or KNOWN["snapshot.num-retained.min"])
            hi = parse_int(hi_key, options.get(hi_key) or options.get("snapshot.num-retained.max")
                            or KNOWN["snapshot.num-retained.max"])
            if lo > hi:  # SchemaValidation refuses this too
                raise InvalidOptionError(f"option '{lo_key}' = {lo} is larger than '{hi_key}' = {hi}")


def _check_names_and_texts(options: Mapping[str, str]) -> None:
    from lake_core.names import validate_file_prefix
    from lake_core.errors import InvalidNameError
    for key in ("data-file.prefix", "changelog-file.prefix"):
        if key in options:
            try:
                validate_file_prefix(key, options[key])
            except InvalidNameError as e:
                raise InvalidOptionError(str(e)) from None
    if "partition.default-name" in options:
        v = options["partition.default-name"]
        if not v.strip():
            raise InvalidOptionError(f"option 'partition.default-name' = {v!r} is invalid: it names the directory "
                                     "of NULL and empty partition values, so it must not be empty or blank")


def check_supported(options: Mapping[str, str], *, table: str | None = None) -> None:
    """Refuse options lake_core does not implement, with :class:`UnsupportedOptionError`: unknown
    names, Paimon options not supported yet, and supported names with a value that is not
    (``deletion-vectors.enabled`` with first-row, ``bucket`` = -2). Run when a table is created AND
    whenever one is opened: a table written by another engine with such an option would read
    wrong (deletion vectors: deleted rows come back), so it must not be read or written at all.
    ``table`` names the table in the message."""
    try:
        validate_option_names(options)
        if (parse_bool("deletion-vectors.enabled", options.get("deletion-vectors.enabled", "false"))
                and str(options.get("merge-engine", "deduplicate")).lower() == "first-row"):
            # Paimon's SchemaValidation refuses it too: first-row never replaces a stored row
            raise UnsupportedOptionError(
                "option 'deletion-vectors.enabled' = 'true' does not apply to 'merge-engine' = 'first-row': "
                "first-row never deletes an old row, so there is nothing for a deletion vector to mark")
        if str(options.get("bucket", "")).strip() == "-2":
            raise UnsupportedOptionError(
                "option 'bucket' = '-2' (postpone bucket mode) is not supported by lake_core yet")
    except UnsupportedOptionError as e:
        if table is None:
            raise
        raise UnsupportedOptionError(f"table {table}: {e}; lake_core refuses to read or write it") from None


def validate_table_options(options: Mapping[str, str], *, has_primary_key: bool) -> CoreOptions:
    """Validate names, types, ranges and choices of every option lake_core uses; return the typed view.

    Each error names the option, the value and what is allowed."""
    check_supported(options)
    opts = CoreOptions(dict(options))
    if "bucket" in options:
        b = parse_int("bucket", options["bucket"])
        if b == 0 or b < -2:
            raise InvalidOptionError(
                f"option 'bucket' = {options['bucket']!r} is invalid: use a positive bucket count, "
                "or -1 for dynamic (primary-key) / unaware (append) bucket mode")
    _check_choice("merge-engine", opts.merge_engine, MERGE_ENGINES, ignore_case=False)
    _check_choice("changelog-producer", opts.changelog_producer, CHANGELOG_PRODUCERS, ignore_case=False)
    _check_choice("file.format", opts.file_format, FILE_FORMATS, ignore_case=False)
    _check_choice("bucket-function.type", opts.bucket_function, ("default", "mod", "hive"), ignore_case=False)
    for key, choices in _ENUM_OPTIONS.items():
        if key in options:
            _check_choice(key, options[key], choices, ignore_case=True)
    for key in _BOOL_OPTIONS:
        if key in options:
            parse_bool(key, options[key])
    _check_int_options(options)
    for key, minimum in _MEMORY_OPTIONS.items():
        if key in options and parse_memory_size(key, options[key]) < minimum:
            raise InvalidOptionError(f"option '{key}' = {options[key]!r} must be at least {minimum} byte(s)")
    for key in _DURATION_OPTIONS:
        if key in options:
            parse_duration_ms(key, options[key])
    if "compaction.small-file-ratio" in options:
        _parse_ratio("compaction.small-file-ratio", options["compaction.small-file-ratio"])
    if opts.commit_min_retry_wait_ms > opts.commit_max_retry_wait_ms:
        raise InvalidOptionError(
            f"option 'commit.min-retry-wait' = {opts.get('commit.min-retry-wait')!r} is longer than "
            f"'commit.max-retry-wait' = {opts.get('commit.max-retry-wait')!r}")
    _check_names_and_texts(options)
    _validate_expire_options(options)
    if not has_primary_key:
        for key in ("merge-engine", "sequence.field", "changelog-producer"):
            if key in options:
                raise InvalidOptionError(
                    f"option '{key}' only applies to primary-key tables; this table has no primary key")
    return opts


def _validate_expire_options(options: Mapping[str, str]) -> None:
    """Maintenance run after commits: synchronous expiry only, process-time automatic tags only."""
    tag_mode = options.get("tag.automatic-creation", "none").lower()
    if tag_mode in ("watermark", "batch"):
        raise UnsupportedOptionError(
            f"option 'tag.automatic-creation' = {tag_mode!r} is not supported by lake_core; use 'process-time'")
    if tag_mode not in ("none", "process-time"):
        raise InvalidOptionError(
            f"option 'tag.automatic-creation' = {options['tag.automatic-creation']!r} is invalid; choose none or "
            "process-time")
    mode = options.get("snapshot.expire.execution-mode", "sync").lower()
    if mode == "async":
        raise UnsupportedOptionError(
            "option 'snapshot.expire.execution-mode' = 'async' is not supported by lake_core: expiry runs "
            "synchronously after each commit ('sync'), or set 'write-only' = 'true' and run "
            "table.maintenance.expire_snapshots() from a maintenance job")
    if mode != "sync":
        raise InvalidOptionError(
            f"option 'snapshot.expire.execution-mode' = {options['snapshot.expire.execution-mode']!r} is "
            "invalid; choose 'sync' (or 'async', which lake_core does not support)")
