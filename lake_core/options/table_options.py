"""Every table option lake_core knows, declared once, as Paimon's ``CoreOptions`` declares them.

Each :class:`ConfigOption` gives the key, the kind of value (which parses and checks it), the
default, what it does and whether lake_core implements it; :mod:`.core_options` reads them as
typed attributes, :mod:`.validation` refuses what they do not allow, and ``python -m
lake_core.options`` writes ``docs/reference/options.md`` from them. To add an option: declare it here, list
it in :data:`SECTIONS`, add the attribute that reads it to ``CoreOptions``, regenerate the page.

Paimon silently ignores options it does not know; lake_core refuses them, and names those of
:data:`REFUSED_PREFIXES` as Paimon options it does not support yet.
"""

from __future__ import annotations

from lake_core.format.avro import CODEC_ALIASES
from lake_core.option_values import LONG_RANGE
from lake_core.options.config_option import ConfigOption, FieldOption, Support
from lake_core.options.option_types import (
    Bool,
    Choice,
    Duration,
    FilePrefix,
    Int,
    MemorySize,
    NonBlankText,
    Ratio,
    Text,
)

IGNORED = Support.IGNORED

# -- buckets ----------------------------------------------------------------------------------------
BUCKET = ConfigOption(
    key="bucket",
    type=Int(
        -1, "a positive bucket count, or -1 for dynamic (primary-key) / unaware (append) bucket mode", excluded=(0,)
    ),
    default="-1",
    description="Buckets per partition. -1: dynamic bucket mode for a primary-key table (cross-partition "
    "upsert when the key omits a partition column), bucket-unaware for an append table. "
    "-2 (postpone bucket mode) is refused when a table is created or opened.",
)
BUCKET_KEY = ConfigOption(
    key="bucket-key",
    type=Text(),
    default=None,
    immutable=True,
    names_columns=True,
    unset="the primary key without its partition columns",
    description="Columns (comma-separated) whose hash picks a row's fixed bucket: a subset of the primary "
    "key. An append table with a fixed `bucket` needs it; dynamic bucket mode refuses it.",
)
BUCKET_FUNCTION_TYPE = ConfigOption(
    key="bucket-function.type",
    type=Choice(("default", "mod", "hive"), ignore_case=True),
    default="default",
    immutable=True,
    description="How a bucket key becomes a bucket: `default` (Paimon's hash of the key row), `mod` (floorMod "
    "of one INT or BIGINT key), `hive` (Hive's bucketing hash).",
)
DYNAMIC_BUCKET_TARGET_ROW_NUM = ConfigOption(
    key="dynamic-bucket.target-row-num",
    type=Int(1, "at least 1 key per bucket", maximum=LONG_RANGE[1], long=True),
    default="2000000",
    description="Dynamic bucket mode: keys per bucket; a new bucket opens once the others hold this many.",
)
DYNAMIC_BUCKET_INITIAL_BUCKETS = ConfigOption(
    key="dynamic-bucket.initial-buckets",
    type=Int(1, "at least 1 bucket"),
    default=None,
    immutable=True,
    unset="1",
    description="Dynamic bucket mode: bucket assigners per partition; each opens buckets of its own.",
)
DYNAMIC_BUCKET_MAX_BUCKETS = ConfigOption(
    key="dynamic-bucket.max-buckets",
    type=Int(-1, "-1 (unlimited) or a positive count", excluded=(0,)),
    default="-1",
    description="Dynamic bucket mode: the most buckets a partition opens; -1 for no limit.",
)
CROSS_PARTITION_UPSERT_INDEX_TTL = ConfigOption(
    key="cross-partition-upsert.index-ttl",
    type=Duration(),
    default=None,
    unset="keys stay in the index",
    description="Cross-partition upsert: keys not written for this long leave the key index, so a later "
    "write of such a key may store it in a second partition.",
)
CROSS_PARTITION_UPSERT_BOOTSTRAP_PARALLELISM = ConfigOption(
    key="cross-partition-upsert.bootstrap-parallelism",
    type=Int(1, "at least 1 thread"),
    default="10",
    support=IGNORED,
    description="Threads of Java's key index bootstrap.",
)

# -- merge engine -----------------------------------------------------------------------------------
MERGE_ENGINE = ConfigOption(
    key="merge-engine",
    type=Choice(("deduplicate", "partial-update", "aggregation", "first-row")),
    default="deduplicate",
    primary_key_only=True,
    immutable=True,
    description="How rows of one key merge: the last one wins, non-null columns update, columns aggregate, "
    "or the first one wins.",
)
IGNORE_DELETE = ConfigOption(
    key="ignore-delete",
    type=Bool(),
    default="false",
    fallback_keys=("first-row.ignore-delete", "deduplicate.ignore-delete", "partial-update.ignore-delete"),
    description="Drop delete (-D) and update-before (-U) rows instead of applying them; on when any of its "
    "names is `true`. Once `true` on a table with snapshots, it cannot go back to `false`.",
)
PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE = ConfigOption(
    key="partial-update.remove-record-on-delete",
    type=Bool(),
    default="false",
    immutable=True,
    description="partial-update: a -D row removes the whole row.",
)
PARTIAL_UPDATE_REMOVE_RECORD_ON_SEQUENCE_GROUP = ConfigOption(
    key="partial-update.remove-record-on-sequence-group",
    type=Text(),
    default=None,
    immutable=True,
    description="partial-update: a -D row of these sequence groups (their sequence columns, comma-separated) "
    "removes the whole row.",
)
AGGREGATION_REMOVE_RECORD_ON_DELETE = ConfigOption(
    key="aggregation.remove-record-on-delete",
    type=Bool(),
    default="false",
    immutable=True,
    description="aggregation: a -D row removes the whole row.",
)
FIELDS_DEFAULT_AGGREGATE_FUNCTION = ConfigOption(
    key="fields.default-aggregate-function",
    type=Text(),
    default=None,
    unset="`last_non_null_value` (aggregation)",
    description="The aggregate function of columns without `fields.<name>.aggregate-function`.",
)

# -- sequence and row kind --------------------------------------------------------------------------
SEQUENCE_FIELD = ConfigOption(
    key="sequence.field",
    type=Text(),
    default=None,
    primary_key_only=True,
    immutable=True,
    names_columns=True,
    unset="the order of writing",
    description="Columns (comma-separated) that order the rows of a key; the largest wins.",
)
SEQUENCE_FIELD_SORT_ORDER = ConfigOption(
    key="sequence.field.sort-order",
    type=Choice(("ascending", "descending"), ignore_case=True),
    default="ascending",
    description="`descending`: the smallest `sequence.field` wins.",
)
SEQUENCE_AUTO_PADDING = ConfigOption(
    key="sequence.auto-padding",
    type=Text(),
    default=None,
    description="Comma-separated: `row-kind-flag` (on equal sequence, -U/-D sort before +I/+U), "
    "`second-to-micro`, `millis-to-micro`. Needs `sequence.field`.",
)
ROWKIND_FIELD = ConfigOption(
    key="rowkind.field",
    type=Text(),
    default=None,
    immutable=True,
    names_columns=True,
    unset="every row is an insert (+I)",
    description="A STRING column holding each row's kind: `+I`, `-U`, `+U` or `-D`.",
)

# -- changelog --------------------------------------------------------------------------------------
CHANGELOG_PRODUCER = ConfigOption(
    key="changelog-producer",
    type=Choice(("none", "input", "lookup", "full-compaction")),
    default="none",
    primary_key_only=True,
    description="Whether commits write changelog files, and from what: the input rows, or the merge of "
    "lookups or full compactions.",
)
CHANGELOG_PRODUCER_ROW_DEDUPLICATE = ConfigOption(
    key="changelog-producer.row-deduplicate",
    type=Bool(),
    default="false",
    description="`lookup` / `full-compaction`: no -U/+U pair for an update that changes nothing.",
)

# -- data files -------------------------------------------------------------------------------------
FILE_FORMAT = ConfigOption(
    key="file.format",
    type=Choice(("parquet", "orc", "avro"), ignore_case=True),
    default="parquet",
    description="The format of data and changelog files.",
)
FILE_COMPRESSION = ConfigOption(
    key="file.compression",
    type=Text(lower=True),
    default="zstd",
    description="The codec of data files, checked against `file.format`: zstd, snappy, gzip, lz4, brotli "
    "(Parquet), zlib (ORC), deflate (Avro), none. With zstd, a Parquet file's fixed-width columns that zstd "
    "shrinks by less than a tenth (random doubles, hashes) are stored uncompressed: they read 3.5x faster.",
)
FILE_COMPRESSION_ZSTD_LEVEL = ConfigOption(
    key="file.compression.zstd-level",
    # zstd's own level range (ZSTD_minCLevel()..ZSTD_maxCLevel()); negative levels are zstd's fast modes
    type=Int(-(1 << 17), "a zstd level between -131072 and 22", maximum=22),
    default="1",
    description="The zstd level of data files.",
)
METADATA_STATS_MODE = ConfigOption(
    key="metadata.stats-mode",
    type=Text(),
    default="truncate(16)",
    description="Column statistics in the manifests: `none`, `counts`, `truncate(N)` (min/max cut to N "
    "characters) or `full`; per column with `fields.<name>.stats-mode`.",
)
TARGET_FILE_SIZE = ConfigOption(
    key="target-file-size",
    type=MemorySize(),
    default=None,
    unset="128 MiB (Paimon: 256 MiB for append tables)",
    description="A data file rolls over to the next once its encoded size reaches this.",
)
PARQUET_BLOCK_SIZE = ConfigOption(
    key="parquet.block.size",
    type=MemorySize(),
    default=None,
    unset="16 MiB of Arrow data, at most half of `target-file-size`",
    description="Parquet's row-group size (Java's `ParquetOutputFormat.BLOCK_SIZE`); smaller groups make "
    "first-row's key probe finer.",
)
PARQUET_PAGE_SIZE = ConfigOption(
    key="parquet.page.size",
    type=MemorySize(),
    default=None,
    unset="64 KiB (Java's Parquet writer: 1 MiB)",
    description="Parquet's data page size (Java's `ParquetOutputFormat.PAGE_SIZE`): the unit a reader "
    "decompresses and decodes.",
)
ORC_STRIPE_SIZE = ConfigOption(
    key="orc.stripe.size",
    type=MemorySize(),
    default=None,
    unset="the ORC writer's 64 MiB",
    description="ORC's stripe size (Java's `OrcConf.STRIPE_SIZE`): a reader decodes a stripe at a time.",
)
PAGE_SIZE = ConfigOption(
    key="page-size",
    type=MemorySize(),
    default="64 kb",
    description="Paimon's memory page size (the pages of Java's write buffer and spill files); lake_core "
    "buffers Arrow tables and does not use it. A Parquet file's data page size is `parquet.page.size` "
    "(default 64 KiB).",
)
WRITE_BUFFER_SIZE = ConfigOption(
    key="write-buffer-size",
    type=MemorySize(),
    default="256 mb",
    support=IGNORED,
    description="Java's sort buffer before a spill; lake_core sorts each write whole.",
)
FILE_SUFFIX_INCLUDE_COMPRESSION = ConfigOption(
    key="file.suffix.include.compression",
    type=Bool(),
    default="false",
    support=IGNORED,
    description="Java names data files `….zstd.parquet`; lake_core's names never carry the codec (readers "
    "take names from the manifests).",
)
DATA_FILE_PREFIX = ConfigOption(
    key="data-file.prefix", type=FilePrefix(), default="data-", description="The start of data file names."
)
CHANGELOG_FILE_PREFIX = ConfigOption(
    key="changelog-file.prefix",
    type=FilePrefix(),
    default="changelog-",
    description="The start of changelog file names.",
)

# -- manifests --------------------------------------------------------------------------------------
MANIFEST_FORMAT = ConfigOption(
    key="manifest.format",
    type=Choice(("avro",), ignore_case=True),
    default="avro",
    description="The format of manifest files; Avro is the only one.",
)
MANIFEST_COMPRESSION = ConfigOption(
    key="manifest.compression",
    type=Choice(tuple(sorted(CODEC_ALIASES)), ignore_case=True),
    default="zstd",
    support=IGNORED,
    description="The codec of manifest files; lake_core writes zstd, as Java by default.",
)
MANIFEST_TARGET_FILE_SIZE = ConfigOption(
    key="manifest.target-file-size",
    type=MemorySize(),
    default="8 mb",
    description="Manifests smaller than this are merged at commit.",
)
MANIFEST_MERGE_MIN_COUNT = ConfigOption(
    key="manifest.merge-min-count",
    type=Int(1, "at least 1 manifest"),
    default="30",
    description="A trailing group of small manifests is merged once it has this many.",
)
MANIFEST_FULL_COMPACTION_THRESHOLD_SIZE = ConfigOption(
    key="manifest.full-compaction-threshold-size",
    type=MemorySize(0),
    default="16 mb",
    description=(
        "Once small manifests and deletes add up to this, a commit rewrites them all. lake_core also "
        "does when at least 10,000 deletes and the entries they cancel outnumber the live files (the "
        "commit after a large compaction)."
    ),
)

# -- compaction -------------------------------------------------------------------------------------
NUM_SORTED_RUN_COMPACTION_TRIGGER = ConfigOption(
    key="num-sorted-run.compaction-trigger",
    type=Int(1, "at least 1 sorted run"),
    default="5",
    description="A bucket with this many sorted runs (each level-0 file, each other level) is compacted.",
)
NUM_SORTED_RUN_STOP_TRIGGER = ConfigOption(
    key="num-sorted-run.stop-trigger",
    type=Int(1, "at least 1 sorted run"),
    default=None,
    unset="`num-sorted-run.compaction-trigger` + 3",
    description="A writer that finds more sorted runs than this compacts fully before it commits.",
)
NUM_LEVELS = ConfigOption(
    key="num-levels",
    type=Int(2, "at least 2: level 0 plus one sorted level"),
    default=None,
    unset="`num-sorted-run.compaction-trigger` + 1",
    description="Levels of a bucket's LSM tree, level 0 included.",
)
COMPACTION_MAX_SIZE_AMPLIFICATION_PERCENT = ConfigOption(
    key="compaction.max-size-amplification-percent",
    type=Int(0, "a percentage, 0 or more"),
    default="200",
    description="Universal compaction: compact fully once the runs outside the top level exceed this "
    "percentage of the top level's size.",
)
COMPACTION_SIZE_RATIO = ConfigOption(
    key="compaction.size-ratio",
    type=Int(0, "a percentage, 0 or more"),
    default="1",
    description="Universal compaction: the next sorted run joins the candidates while their size, plus this "
    "percentage, reaches its own.",
)
COMPACTION_MIN_FILE_NUM = ConfigOption(
    key="compaction.min.file-num",
    type=Int(1, "at least 1 file"),
    default="5",
    support=IGNORED,
    description="Java's append-table compaction trigger.",
)
COMPACTION_SMALL_FILE_RATIO = ConfigOption(
    key="compaction.small-file-ratio",
    type=Ratio(),
    default="0.7",
    description="Files below `target-file-size` times this are rewritten by a full compaction, larger ones "
    "upgraded as they are.",
)
COMPACTION_OPTIMIZATION_INTERVAL = ConfigOption(
    key="compaction.optimization-interval",
    type=Duration(),
    default=None,
    description="A full compaction runs once this long has passed since the last one.",
)
COMPACTION_TOTAL_SIZE_THRESHOLD = ConfigOption(
    key="compaction.total-size-threshold",
    type=MemorySize(0),
    default=None,
    description="A bucket smaller than this is compacted fully.",
)
COMPACTION_INCREMENTAL_SIZE_THRESHOLD = ConfigOption(
    key="compaction.incremental-size-threshold",
    type=MemorySize(0),
    default=None,
    description="A bucket whose runs outside the top level exceed this is compacted fully.",
)
COMPACTION_FORCE_REWRITE_ALL_FILES = ConfigOption(
    key="compaction.force-rewrite-all-files",
    type=Bool(),
    default="false",
    description="A full compaction rewrites every file instead of upgrading large ones.",
)
FULL_COMPACTION_DELTA_COMMITS = ConfigOption(
    key="full-compaction.delta-commits",
    type=Int(1, "at least 1 commit"),
    default=None,
    description="Every batch commit fully compacts the buckets it touched.",
)
COMMIT_FORCE_COMPACT = ConfigOption(
    key="commit.force-compact",
    type=Bool(),
    default="false",
    support=IGNORED,
    description="Makes Java's streaming writers wait for their compaction; lake_core's writers always wait.",
)
WRITE_ONLY = ConfigOption(
    key="write-only",
    type=Bool(),
    default="false",
    description="Writers never compact nor expire; run a dedicated compaction and maintenance instead.",
)
RECORD_LEVEL_EXPIRE_TIME = ConfigOption(
    key="record-level.expire-time",
    type=Duration(),
    default=None,
    description="Compaction drops rows whose `record-level.time-field` is older than this (at least a "
    "second). Needs `record-level.time-field`.",
)
RECORD_LEVEL_TIME_FIELD = ConfigOption(
    key="record-level.time-field",
    type=Text(),
    default=None,
    names_columns=True,
    description="The INT or BIGINT (seconds or millis) or TIMESTAMP column that `record-level.expire-time` reads.",
)

# -- commit -----------------------------------------------------------------------------------------
COMMIT_MAX_RETRIES = ConfigOption(
    key="commit.max-retries",
    type=Int(0, "0 (no retry) or more"),
    default="10",
    description="How often a commit that lost the race for its snapshot is retried.",
)
COMMIT_MIN_RETRY_WAIT = ConfigOption(
    key="commit.min-retry-wait",
    type=Duration(),
    default="10 ms",
    description="The shortest wait before a retry; no longer than `commit.max-retry-wait`.",
)
COMMIT_MAX_RETRY_WAIT = ConfigOption(
    key="commit.max-retry-wait", type=Duration(), default="10 s", description="The longest wait before a retry."
)
COMMIT_TIMEOUT = ConfigOption(
    key="commit.timeout",
    type=Duration(),
    default=None,
    unset="no limit",
    description="A commit stops retrying after this long.",
)

# -- expiry of snapshots, changelogs and consumers ---------------------------------------------------
SNAPSHOT_NUM_RETAINED_MIN = ConfigOption(
    key="snapshot.num-retained.min",
    type=Int(1, "at least 1 snapshot"),
    default="10",
    description="Snapshots always kept, however old.",
)
SNAPSHOT_NUM_RETAINED_MAX = ConfigOption(
    key="snapshot.num-retained.max",
    type=Int(1, "at least 1 snapshot"),
    default="2147483647",
    description="Snapshots kept at most, however young; at least `snapshot.num-retained.min`.",
)
SNAPSHOT_TIME_RETAINED = ConfigOption(
    key="snapshot.time-retained",
    type=Duration(),
    default="1 h",
    description="Snapshots older than this expire (beyond `snapshot.num-retained.min`).",
)
SNAPSHOT_EXPIRE_LIMIT = ConfigOption(
    key="snapshot.expire.limit",
    type=Int(1, "at least 1 snapshot per expiry"),
    default="50",
    description="Snapshots one expiry removes at most.",
)
SNAPSHOT_EXPIRE_EXECUTION_MODE = ConfigOption(
    key="snapshot.expire.execution-mode",
    default="sync",
    type=Choice(
        ("sync",),
        ignore_case=True,
        refused={
            "async": ": expiry runs synchronously after each commit ('sync'), or set 'write-only' = 'true' and run "
            "table.maintenance.expire_snapshots() from a maintenance job"
        },
    ),
    description="Expiry runs in the committing writer, after its commit.",
)
SNAPSHOT_CLEAN_EMPTY_DIRECTORIES = ConfigOption(
    key="snapshot.clean-empty-directories",
    type=Bool(),
    default="false",
    support=IGNORED,
    description="Java's removal of emptied directories at expiry.",
)
CHANGELOG_NUM_RETAINED_MIN = ConfigOption(
    key="changelog.num-retained.min",
    type=Int(1, "at least 1 changelog"),
    default=None,
    unset="`snapshot.num-retained.min`",
    description="Changelogs always kept, however old.",
)
CHANGELOG_NUM_RETAINED_MAX = ConfigOption(
    key="changelog.num-retained.max",
    type=Int(1, "at least 1 changelog"),
    default=None,
    unset="`snapshot.num-retained.max`",
    description="Changelogs kept at most. Retaining more than the snapshots keeps the changelogs of expired "
    "snapshots (decoupled lifecycle).",
)
CHANGELOG_TIME_RETAINED = ConfigOption(
    key="changelog.time-retained",
    type=Duration(),
    default=None,
    unset="`snapshot.time-retained`",
    description="Changelogs older than this expire.",
)
CONSUMER_EXPIRATION_TIME = ConfigOption(
    key="consumer.expiration-time",
    type=Duration(),
    default=None,
    unset="consumers never expire",
    description="A consumer not updated for this long is removed after a commit, and no longer protects "
    "its snapshots from expiry.",
)

# -- partitions -------------------------------------------------------------------------------------
PARTITION_DEFAULT_NAME = ConfigOption(
    key="partition.default-name",
    default="__DEFAULT_PARTITION__",
    type=NonBlankText(reason="it names the directory of NULL and empty partition values"),
    description="The directory name of NULL and empty partition values.",
)
PARTITION_EXPIRATION_TIME = ConfigOption(
    key="partition.expiration-time",
    type=Duration(),
    default=None,
    description="After a commit, partitions whose time (read from their values) is older than this are dropped.",
)
PARTITION_EXPIRATION_CHECK_INTERVAL = ConfigOption(
    key="partition.expiration-check-interval",
    type=Duration(),
    default="1 h",
    description="How often, per table and process, commits check for expired partitions.",
)
PARTITION_TIMESTAMP_FORMATTER = ConfigOption(
    key="partition.timestamp-formatter",
    type=Text(),
    default=None,
    unset="`yyyy-MM-dd` or `yyyy-MM-dd HH:mm:ss`",
    description="Partition expiry: the Java pattern (yyyy, MM, dd, HH, mm, ss) of a partition's time.",
)
PARTITION_TIMESTAMP_PATTERN = ConfigOption(
    key="partition.timestamp-pattern",
    type=Text(),
    default=None,
    unset="the first partition field",
    description="Partition expiry: how partition fields form the time, e.g. `$dt $hour:00:00`.",
)

# -- tags -------------------------------------------------------------------------------------------
TAG_AUTOMATIC_CREATION = ConfigOption(
    key="tag.automatic-creation",
    default="none",
    type=Choice(
        ("none", "process-time"),
        ignore_case=True,
        refused={"watermark": "; use 'process-time'", "batch": "; use 'process-time'"},
    ),
    description="`process-time`: after a commit, the tag of the last complete period is created.",
)
TAG_CREATION_PERIOD = ConfigOption(
    key="tag.creation-period",
    type=Choice(("daily", "hourly", "two-hours"), ignore_case=True),
    default="daily",
    description="The period of automatic tags, which also names them.",
)
TAG_NUM_RETAINED_MAX = ConfigOption(
    key="tag.num-retained-max",
    type=Int(1, "at least 1 tag"),
    default=None,
    unset="all are kept",
    description="Automatic tags kept at most; the oldest go first. Users' tags are never touched.",
)
TAG_DEFAULT_TIME_RETAINED = ConfigOption(
    key="tag.default-time-retained",
    type=Duration(),
    default=None,
    unset="tags never expire",
    description="Tags created without a retention of their own expire after this long.",
)

# -- deletion vectors -------------------------------------------------------------------------------
DELETION_VECTORS_ENABLED = ConfigOption(
    key="deletion-vectors.enabled",
    type=Bool(),
    default="false",
    description="Writes mark replaced rows in deletion vectors, so reads need no merge. Not with "
    "`merge-engine` = `first-row`.",
)
DELETION_VECTORS_BITMAP64 = ConfigOption(
    key="deletion-vectors.bitmap64",
    type=Bool(),
    default="false",
    description="Deletion vectors in the 64-bit roaring layout (Iceberg-compatible).",
)

# -- reading ----------------------------------------------------------------------------------------
READ_BATCH_SIZE = ConfigOption(
    key="read.batch-size",
    type=Int(1, "at least 1 row"),
    default=None,
    # Paimon's default is 1024 (rows per batch of its format readers): lake_core's merge is vectorized
    # per chunk, so small chunks cost speed
    unset="65,536 rows; 1,048,576 for a read that returns its whole result (Paimon: 1024)",
    description="Rows read per data file per merge round: merge-on-read and compaction hold about this "
    "many rows per sorted run, whatever the size of the bucket.",
)

# -- table metadata ---------------------------------------------------------------------------------
PATH = ConfigOption(
    key="path",
    type=Text(),
    default=None,
    support=IGNORED,
    description="The table's location as Java records it; lake_core takes it from the catalog.",
)
OWNER = ConfigOption(key="owner", type=Text(), default=None, support=IGNORED, description="Kept for other engines.")
COMMENT = ConfigOption(
    key="comment",
    type=Text(),
    default=None,
    support=IGNORED,
    description="Kept for other engines; the table's own comment is in its schema.",
)

#: the options by topic, in the order of the reference page
SECTIONS: tuple[tuple[str, tuple[ConfigOption, ...]], ...] = (
    (
        "Buckets",
        (
            BUCKET,
            BUCKET_KEY,
            BUCKET_FUNCTION_TYPE,
            DYNAMIC_BUCKET_TARGET_ROW_NUM,
            DYNAMIC_BUCKET_INITIAL_BUCKETS,
            DYNAMIC_BUCKET_MAX_BUCKETS,
            CROSS_PARTITION_UPSERT_INDEX_TTL,
            CROSS_PARTITION_UPSERT_BOOTSTRAP_PARALLELISM,
        ),
    ),
    (
        "Merge engine",
        (
            MERGE_ENGINE,
            IGNORE_DELETE,
            PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE,
            PARTIAL_UPDATE_REMOVE_RECORD_ON_SEQUENCE_GROUP,
            AGGREGATION_REMOVE_RECORD_ON_DELETE,
            FIELDS_DEFAULT_AGGREGATE_FUNCTION,
        ),
    ),
    ("Sequence and row kind", (SEQUENCE_FIELD, SEQUENCE_FIELD_SORT_ORDER, SEQUENCE_AUTO_PADDING, ROWKIND_FIELD)),
    ("Changelog", (CHANGELOG_PRODUCER, CHANGELOG_PRODUCER_ROW_DEDUPLICATE)),
    (
        "Data files",
        (
            FILE_FORMAT,
            FILE_COMPRESSION,
            FILE_COMPRESSION_ZSTD_LEVEL,
            METADATA_STATS_MODE,
            TARGET_FILE_SIZE,
            PARQUET_BLOCK_SIZE,
            PARQUET_PAGE_SIZE,
            ORC_STRIPE_SIZE,
            PAGE_SIZE,
            WRITE_BUFFER_SIZE,
            FILE_SUFFIX_INCLUDE_COMPRESSION,
            DATA_FILE_PREFIX,
            CHANGELOG_FILE_PREFIX,
        ),
    ),
    (
        "Manifests",
        (
            MANIFEST_FORMAT,
            MANIFEST_COMPRESSION,
            MANIFEST_TARGET_FILE_SIZE,
            MANIFEST_MERGE_MIN_COUNT,
            MANIFEST_FULL_COMPACTION_THRESHOLD_SIZE,
        ),
    ),
    (
        "Compaction",
        (
            NUM_SORTED_RUN_COMPACTION_TRIGGER,
            NUM_SORTED_RUN_STOP_TRIGGER,
            NUM_LEVELS,
            COMPACTION_MAX_SIZE_AMPLIFICATION_PERCENT,
            COMPACTION_SIZE_RATIO,
            COMPACTION_MIN_FILE_NUM,
            COMPACTION_SMALL_FILE_RATIO,
            COMPACTION_OPTIMIZATION_INTERVAL,
            COMPACTION_TOTAL_SIZE_THRESHOLD,
            COMPACTION_INCREMENTAL_SIZE_THRESHOLD,
            COMPACTION_FORCE_REWRITE_ALL_FILES,
            FULL_COMPACTION_DELTA_COMMITS,
            COMMIT_FORCE_COMPACT,
            WRITE_ONLY,
            RECORD_LEVEL_EXPIRE_TIME,
            RECORD_LEVEL_TIME_FIELD,
        ),
    ),
    ("Commit", (COMMIT_MAX_RETRIES, COMMIT_MIN_RETRY_WAIT, COMMIT_MAX_RETRY_WAIT, COMMIT_TIMEOUT)),
    (
        "Expiry of snapshots, changelogs and consumers",
        (
            SNAPSHOT_NUM_RETAINED_MIN,
            SNAPSHOT_NUM_RETAINED_MAX,
            SNAPSHOT_TIME_RETAINED,
            SNAPSHOT_EXPIRE_LIMIT,
            SNAPSHOT_EXPIRE_EXECUTION_MODE,
            SNAPSHOT_CLEAN_EMPTY_DIRECTORIES,
            CHANGELOG_NUM_RETAINED_MIN,
            CHANGELOG_NUM_RETAINED_MAX,
            CHANGELOG_TIME_RETAINED,
            CONSUMER_EXPIRATION_TIME,
        ),
    ),
    (
        "Partitions",
        (
            PARTITION_DEFAULT_NAME,
            PARTITION_EXPIRATION_TIME,
            PARTITION_EXPIRATION_CHECK_INTERVAL,
            PARTITION_TIMESTAMP_FORMATTER,
            PARTITION_TIMESTAMP_PATTERN,
        ),
    ),
    ("Tags", (TAG_AUTOMATIC_CREATION, TAG_CREATION_PERIOD, TAG_NUM_RETAINED_MAX, TAG_DEFAULT_TIME_RETAINED)),
    ("Deletion vectors", (DELETION_VECTORS_ENABLED, DELETION_VECTORS_BITMAP64)),
    ("Reading", (READ_BATCH_SIZE,)),
    ("Table metadata", (PATH, OWNER, COMMENT)),
)
OPTIONS: tuple[ConfigOption, ...] = tuple(o for _title, options in SECTIONS for o in options)
#: every accepted name (fallback keys included) -> its declaration
BY_KEY: dict[str, ConfigOption] = {k: o for o in OPTIONS for k in o.keys}

# -- per-column options, fields.<name>.<suffix> ------------------------------------------------------
FIELD_AGGREGATE_FUNCTION = FieldOption(
    suffix="aggregate-function", description="aggregation / partial-update: the column's aggregate function."
)
FIELD_IGNORE_RETRACT = FieldOption(
    suffix="ignore-retract", description="`true`: the column's aggregate ignores -U/-D rows."
)
FIELD_SEQUENCE_GROUP = FieldOption(
    suffix="sequence-group",
    description="partial-update: the columns (comma-separated) that `<name>` (one or more sequence columns, "
    "comma-separated) orders.",
)
FIELD_LIST_AGG_DELIMITER = FieldOption(suffix="list-agg-delimiter", description="`listagg`: the delimiter.")
FIELD_DISTINCT = FieldOption(suffix="distinct", description="`listagg` / `collect`: `true` drops repeated values.")
FIELD_NESTED_KEY = FieldOption(
    suffix="nested-key", description="`nested_update`: the key columns (comma-separated) of the nested rows."
)
FIELD_COUNT_LIMIT = FieldOption(suffix="count-limit", description="`nested_update`: the most nested rows kept.")
FIELD_STATS_MODE = FieldOption(suffix="stats-mode", description="The column's `metadata.stats-mode`.")
FIELD_DEFAULT_VALUE = FieldOption(
    suffix="default-value",
    support=IGNORED,
    description="Paimon's default value of the column; lake_core does not apply it.",
)
FIELD_OPTIONS: tuple[FieldOption, ...] = (
    FIELD_AGGREGATE_FUNCTION,
    FIELD_IGNORE_RETRACT,
    FIELD_SEQUENCE_GROUP,
    FIELD_LIST_AGG_DELIMITER,
    FIELD_DISTINCT,
    FIELD_NESTED_KEY,
    FIELD_COUNT_LIMIT,
    FIELD_STATS_MODE,
    FIELD_DEFAULT_VALUE,
)

#: Paimon options lake_core does not implement yet: refused as such, when a table is created or opened
REFUSED_PREFIXES = (
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


def _choices(option: ConfigOption[str]) -> tuple[str, ...]:
    """The values of an option declared with a :class:`Choice` type."""
    if not isinstance(option.type, Choice):
        raise TypeError(f"option '{option.key}' is not a choice")
    return option.type.choices


MERGE_ENGINES = _choices(MERGE_ENGINE)
CHANGELOG_PRODUCERS = _choices(CHANGELOG_PRODUCER)
FILE_FORMATS = _choices(FILE_FORMAT)
