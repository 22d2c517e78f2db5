"""The tables config file (``tables.yaml``): which warehouse, which tables, their maintenance policy.

Validated with pydantic when loaded; any error is raised as :class:`TablesConfigError` whose
message names the file, the table and the field (``table 'demo.orders': field
'maintenance.snapshot_expiry.retain_min': ...``). Nothing here reads the environment: S3
credentials are given as environment variable *names*, resolved by Dagster's ``EnvVar`` at run
time.

Types, options and durations are checked by lake_core itself (``from_paimon_type``,
``validate_options``, ``parse_duration_ms``), so a definition that loads here is one
``Catalog.create_table`` accepts; cron strings are checked with Dagster's own cron validator.
"""

from __future__ import annotations

import functools
import importlib
from pathlib import Path
from typing import Annotated, Any, Literal

import pyarrow as pa
import yaml
from dagster._utils.schedules import is_valid_cron_string  # what ScheduleDefinition itself checks
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from jobs.spark_target import SparkConfigError, SparkTarget, check_warehouse_reachable
from lake_core import LakeError, check_tag_name_format, from_paimon_type, parse_duration_ms, validate_options

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"


class TablesConfigError(LakeError, ValueError):
    """The tables config file is invalid; the message names the table and field."""


def duration_seconds(text: str) -> float:
    """Paimon-style durations ('90 s', '30 min', '1 h', '1 hour', '7 d', '1d') → seconds, with
    lake_core's own duration parser (the one table options such as ``snapshot.time-retained`` use)."""
    try:
        return parse_duration_ms("duration", text) / 1000
    except LakeError:
        raise ValueError(f"{text!r} is not a duration; use e.g. '90 s', '30 min', '1 h', '1 hour' or '7 d'") from None


def _check_duration(v: str) -> str:
    duration_seconds(v)
    return v


Duration = Annotated[str, AfterValidator(_check_duration)]  # a Paimon-style duration, checked at load


class _Strict(BaseModel):
    # A typo in a policy field must fail loudly rather than silently use a default.
    model_config = ConfigDict(extra="forbid", frozen=True)


class S3Settings(_Strict):
    """S3/MinIO connection; credentials are environment variable NAMES, never values."""

    endpoint_url_env: str | None = Field(None, description="env var holding the endpoint URL (MinIO)")
    access_key_env: str = "AWS_ACCESS_KEY_ID"
    secret_key_env: str = "AWS_SECRET_ACCESS_KEY"
    region: str = "us-east-1"
    path_style: bool = True


class WarehouseConfig(_Strict):
    uri: str = Field(description="local path (relative to the config file), file:// URI or s3://bucket/prefix")
    s3: S3Settings | None = None

    @model_validator(mode="after")
    def _s3_only_for_s3(self) -> WarehouseConfig:
        if self.is_s3 and not self.uri.removeprefix("s3://").strip("/"):
            raise ValueError(f"uri {self.uri!r} needs a bucket: s3://bucket/prefix")
        if self.s3 is not None and not self.is_s3:
            raise ValueError("s3 settings given but uri is not an s3:// URI")
        return self

    @property
    def is_s3(self) -> bool:
        return self.uri.startswith(("s3://", "s3a://"))


# -- maintenance policy: stored and validated now, used by the maintenance issues --------------
class CompactionPolicy(_Strict):
    enabled: bool = True
    max_sorted_runs: int = Field(5, ge=1, description="compact a bucket once it has more sorted runs")
    small_file_mb: int = Field(16, ge=1)


class ManifestCompactionPolicy(_Strict):
    enabled: bool = True
    max_manifests: int = Field(30, ge=2)


class SnapshotExpiryPolicy(_Strict):
    enabled: bool = True
    retain_min: int = Field(10, ge=1)  # as Paimon's snapshot.num-retained.min: at least 1
    retain_max: int = Field(100, ge=1)
    time_retained: str = "1 h"

    @field_validator("time_retained")
    @classmethod
    def _duration(cls, v: str) -> str:
        duration_seconds(v)
        return v

    @model_validator(mode="after")
    def _min_le_max(self) -> SnapshotExpiryPolicy:
        if self.retain_min > self.retain_max:
            raise ValueError(f"retain_min ({self.retain_min}) must be <= retain_max ({self.retain_max})")
        return self


class PartitionExpiryPolicy(_Strict):
    expiration_time: str | None = None  # e.g. '30 d'; None keeps every partition
    timestamp_formatter: str = "yyyy-MM-dd"

    @field_validator("expiration_time")
    @classmethod
    def _duration(cls, v: str | None) -> str | None:
        if v is not None:
            duration_seconds(v)
        return v


class RecordExpiryPolicy(_Strict):
    field: str | None = None  # a timestamp column; rows older than `retention` are dropped
    retention: str | None = None

    @model_validator(mode="after")
    def _both_or_none(self) -> RecordExpiryPolicy:
        if (self.field is None) != (self.retention is None):
            raise ValueError("record expiry needs both 'field' and 'retention' (or neither)")
        if self.retention is not None:
            duration_seconds(self.retention)
        return self


class OrphanCleanupPolicy(_Strict):
    enabled: bool = True
    older_than: str = "1 d"
    # True: runs (from the UI, a schedule or a sensor) only report what they would delete; set
    # false to delete. A run's own `dry_run` config wins.
    dry_run: bool = True

    @field_validator("older_than")
    @classmethod
    def _floor(cls, v: str) -> str:
        if duration_seconds(v) < 3600:  # an age floor (Paimon's remove_orphan_files older_than) spares in-flight writes
            raise ValueError(f"older_than {v!r} is below the 1 h safety floor")
        return v


class TagsPolicy(_Strict):
    """Restore points made by the `tags` asset: the latest snapshot tagged by the run time (UTC)."""

    name_format: str | None = Field(None, description="strftime pattern, e.g. 'daily-%Y-%m-%d'; None: no tags asset")
    num_retained: int | None = Field(None, ge=1, description="keep the newest N tags of this pattern")
    time_retained: str | None = None  # each tag's own expiry (Paimon's tagTimeRetained)

    @field_validator("name_format")
    @classmethod
    def _pattern(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                check_tag_name_format(v)
            except LakeError as e:
                raise ValueError(str(e)) from None
        return v

    @field_validator("time_retained")
    @classmethod
    def _duration(cls, v: str | None) -> str | None:
        if v is not None:
            duration_seconds(v)
        return v


class RescalePolicy(_Strict):
    target_buckets: int | None = Field(None, ge=1)
    # How a backfill over several partitions runs: one Spark job and one commit for all of them, or
    # one run (and commit) per partition.
    backfill: Literal["single_run", "per_partition"] = "single_run"


class HealthPolicy(_Strict):
    """Thresholds of the health checks and sensor that the operations' own sections do not give."""

    max_small_files: int = Field(20, ge=1, description="compact a bucket once it has more files below small_file_mb")
    max_ttl_lag: Duration = Field(
        "1 h", description="run record expiry once the oldest record is this far past its retention"
    )
    max_bucket_skew: float = Field(
        2.0, gt=1, description="warn when a bucket holds more than this many times its partition's mean rows per bucket"
    )


class MaintenancePolicy(_Strict):
    compaction: CompactionPolicy = CompactionPolicy()
    manifest_compaction: ManifestCompactionPolicy = ManifestCompactionPolicy()
    snapshot_expiry: SnapshotExpiryPolicy = SnapshotExpiryPolicy()
    partition_expiry: PartitionExpiryPolicy = PartitionExpiryPolicy()
    record_expiry: RecordExpiryPolicy = RecordExpiryPolicy()
    orphan_cleanup: OrphanCleanupPolicy = OrphanCleanupPolicy()
    rescale: RescalePolicy = RescalePolicy()
    tags: TagsPolicy = TagsPolicy()
    cron: str | None = Field(None, description="cron schedule for maintenance runs")
    health: HealthPolicy = HealthPolicy()

    @field_validator("cron")
    @classmethod
    def _cron(cls, v: str | None) -> str | None:
        if v is not None and not is_valid_cron_string(v):
            raise ValueError(
                f"{v!r} is not a cron schedule; use five fields, e.g. '0 3 * * *' (03:00 daily), or '@daily'"
            )
        return v


class SensorPolicy(_Strict):
    enabled: bool = True
    minimum_interval_seconds: int = Field(30, ge=1)
    max_requests_per_tick: int = Field(10, ge=1)
    # A requested run's snapshot is leased until the run finishes; past this TTL (a safety net for
    # leases nothing released) snapshot expiry ignores the lease.
    lease_ttl: Duration = "12 h"
    # A health-sensor run that failed is requested again for the same table state, up to this many
    # times, waiting retry_backoff after the first failure and twice as long after each next one.
    failed_run_retries: int = Field(2, ge=0)
    retry_backoff: Duration = "5 min"


# -- schemas ------------------------------------------------------------------------------------
def load_source(spec: str) -> Any:
    """Resolve 'package.module:callable' to the object the callable returns (a change source)."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ValueError(f"source {spec!r} must look like 'package.module:callable'")
    try:
        target = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as e:
        raise ValueError(f"source {spec!r} cannot be loaded: {e}") from e
    return target() if callable(target) else target


@functools.cache
def _source_schema(spec: str) -> pa.Schema:
    # Validation asks for the schema several times; build the source once per spec.
    return load_source(spec).schema


# (options, schema, primary keys, partition keys) that validate_options accepted (the check does not
# depend on the table's name; its error message does, and errors are not kept)
_VALID_OPTIONS: set[tuple] = set()


class TableConfig(_Strict):
    name: str = Field(pattern=rf"^{_NAME}\.{_NAME}$", description="database.table")
    source: str | None = Field(None, description="'module:callable' returning a change source (.schema, .batch(i))")
    schema_: dict[str, str] | None = Field(None, alias="schema", description="column → Paimon type")
    primary_keys: list[str] = []
    partition_keys: list[str] = []
    options: dict[str, str] = {}
    sensor: SensorPolicy = SensorPolicy()
    maintenance: MaintenancePolicy = MaintenancePolicy()

    @field_validator("options", mode="before")
    @classmethod
    def _options_as_strings(cls, v: Any) -> Any:
        # Paimon options are strings; YAML turns `bucket: 4` into an int, which is what people write.
        if isinstance(v, dict):
            return {str(k): str(val).lower() if isinstance(val, bool) else str(val) for k, val in v.items()}
        return v

    @field_validator("schema_")
    @classmethod
    def _types_parse(cls, v: dict[str, str] | None) -> dict[str, str] | None:
        for column, type_text in (v or {}).items():
            try:
                from_paimon_type(type_text, column)
            except LakeError as e:
                raise ValueError(str(e)) from None
        return v

    @model_validator(mode="after")
    def _keys_in_schema(self) -> TableConfig:
        if self.source is None and self.schema_ is None:
            raise ValueError("give a schema source: 'source' (module:callable) or 'schema' (column: type)")
        columns = self.arrow_schema().names
        for what in ("primary_keys", "partition_keys"):
            missing = [k for k in getattr(self, what) if k not in columns]
            if missing:
                raise ValueError(f"{what} {missing} are not columns of the schema {columns}")
        if self.primary_keys and not set(self.partition_keys) <= set(self.primary_keys):
            raise ValueError(f"primary_keys {self.primary_keys} must include the partition keys {self.partition_keys}")
        schema = self.arrow_schema()
        checked = (tuple(sorted(self.options.items())), schema, tuple(self.primary_keys), tuple(self.partition_keys))
        if checked not in _VALID_OPTIONS:  # many tables share a schema and options: checked once
            try:  # exactly the checks Catalog.create_table makes, so a bad option fails here, not in a Spark run
                validate_options(
                    self.options,
                    schema=schema,
                    primary_keys=self.primary_keys,
                    partition_keys=self.partition_keys,
                    table=self.name,
                )
            except LakeError as e:
                raise ValueError(f"field 'options': {e}") from None
            _VALID_OPTIONS.add(checked)
        self._check_maintenance_columns(columns)
        return self

    def _check_maintenance_columns(self, columns: list[str]) -> None:
        expiry = self.maintenance.record_expiry
        if expiry.field is not None:
            if expiry.field not in columns:
                raise ValueError(
                    f"field 'maintenance.record_expiry.field': {expiry.field!r} is not a column of the schema {columns}"
                )
            kind = self.arrow_schema().field(expiry.field).type
            if not (pa.types.is_timestamp(kind) or kind in (pa.int32(), pa.int64())):
                # Paimon's record-level.time-field: TIMESTAMP, or INT/BIGINT epoch seconds
                raise ValueError(
                    f"field 'maintenance.record_expiry.field': {expiry.field!r} is {kind}; it must be a "
                    "TIMESTAMP, INT or BIGINT (epoch seconds) column"
                )
        if self.maintenance.partition_expiry.expiration_time is not None and not self.partition_keys:
            raise ValueError(
                "field 'maintenance.partition_expiry.expiration_time': set, but the table has no partition_keys"
            )

    def arrow_schema(self) -> pa.Schema:
        """Schema from the inline column list, else from the source."""
        if self.schema_ is not None:
            keys = set(self.primary_keys)
            fields = []
            for column, type_text in self.schema_.items():
                kind, nullable = from_paimon_type(type_text, column)
                fields.append(pa.field(column, kind, nullable=nullable and column not in keys))
            return pa.schema(fields)
        return _source_schema(self.source or "")

    def make_source(self) -> Any:
        if self.source is None:
            raise ValueError(f"table {self.name!r} has no 'source' to ingest from")
        return load_source(self.source)

    @property
    def database(self) -> str:
        return self.name.split(".")[0]

    @property
    def table(self) -> str:
        return self.name.split(".")[1]


class DownstreamConfig(_Strict):
    name: str = Field(pattern=rf"^{_NAME}\.{_NAME}$", description="database.table of the derived table")
    source_table: str = Field(description="a table of this file whose snapshots feed it")
    transform: Literal["orders_by_day"] = Field(description="a transform of jobs.downstream.TRANSFORMS")


class SparkSettings(_Strict):
    """How Spark jobs run: embedded (default), a cluster ``master`` or a Spark Connect ``remote``.
    ``$LAKE_SPARK_REMOTE`` / ``$LAKE_SPARK_MASTER`` override ``remote``/``master`` at run time."""

    remote: str | None = Field(None, description="sc://host:port: attach to a Spark Connect server")
    master: str | None = Field(None, description="spark.master (default local[2]): a driver per run")
    driver_memory: str = Field("2g", pattern=r"^\d+[kmgt]?$")
    shuffle_partitions: int = Field(2, ge=1)
    conf: dict[str, str] = {}
    shared_filesystem: bool = Field(
        False, description="a local warehouse path is the same shared filesystem on every executor"
    )

    @field_validator("conf", mode="before")
    @classmethod
    def _conf_as_strings(cls, v: Any) -> Any:
        # Spark settings are strings; YAML makes `spark.authenticate: true` a bool.
        if isinstance(v, dict):
            return {str(k): str(val).lower() if isinstance(val, bool) else str(val) for k, val in v.items()}
        return v

    @model_validator(mode="after")
    def _one_target(self) -> SparkSettings:
        try:
            self.target()
        except SparkConfigError as e:
            raise ValueError(str(e)) from None
        return self

    def target(self) -> SparkTarget:
        """The configured target (before any environment override)."""
        return SparkTarget(remote=self.remote, master=self.master)


class ControlSettings(_Strict):
    """The lake-wide sensors (one snapshot sensor, one health sensor, one partitions sensor for all
    tables): how long one tick may take, and how often an unchanged table's health is read again."""

    tick_budget: Duration = Field(
        "20 s", description="a tick stops visiting tables after this long; the rest are carried to the next tick"
    )
    health_recheck: Duration = Field(
        "10 min",
        description="an unchanged table (same latest snapshot) is evaluated again by the health sensor after this "
        "long (record TTL lag and snapshot age grow with time alone)",
    )


class TablesConfig(_Strict):
    warehouse: WarehouseConfig
    spark: SparkSettings = SparkSettings()
    control: ControlSettings = ControlSettings()
    tables: list[TableConfig] = Field(min_length=1)
    downstream: list[DownstreamConfig] = []

    @model_validator(mode="after")
    def _references(self) -> TablesConfig:
        try:  # checked again at run time, when $LAKE_SPARK_* may have changed the target
            check_warehouse_reachable(
                self.warehouse.uri, self.spark.target(), shared_filesystem=self.spark.shared_filesystem
            )
        except SparkConfigError as e:
            raise ValueError(f"spark: {e}") from None
        names = [t.name for t in self.tables] + [d.name for d in self.downstream]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"table names must be unique; repeated: {dupes}")
        known = {t.name for t in self.tables}
        for d in self.downstream:
            if d.source_table not in known:
                raise ValueError(
                    f"downstream {d.name!r}: source_table {d.source_table!r} is not a configured table {sorted(known)}"
                )
        return self

    def table(self, name: str) -> TableConfig:
        return next(t for t in self.tables if t.name == name)


def resolve_warehouse_uri(uri: str, base_dir: Path) -> str:
    """A relative local path is relative to the config file; the result is a URI."""
    if "://" in uri:
        return uri
    path = Path(uri).expanduser()
    return (path if path.is_absolute() else (base_dir / path)).resolve().as_uri()


def _describe(loc: tuple[Any, ...], raw: Any) -> str:
    """('tables', 0, 'maintenance', 'x') → "table 'demo.orders': field 'maintenance.x'"."""
    parts = [p for p in loc if not (isinstance(p, str) and p.startswith(("function-", "model-")))]
    if len(parts) >= 2 and parts[0] in ("tables", "downstream") and isinstance(parts[1], int):
        entries = raw.get(parts[0]) if isinstance(raw, dict) else None
        entry = entries[parts[1]] if isinstance(entries, list) and parts[1] < len(entries) else None
        name = entry.get("name") if isinstance(entry, dict) else None
        who = f"{'table' if parts[0] == 'tables' else 'downstream table'} {name or f'#{parts[1] + 1}'!r}"
        field = ".".join(str(p) for p in parts[2:])
        return f"{who}: field {field!r}" if field else who
    field = ".".join(str(p) for p in parts)
    return f"field {field!r}" if field else "top level"


def parse_tables_config(raw: Any, *, source: str = "<config>", base_dir: Path | None = None) -> TablesConfig:
    if not isinstance(raw, dict):
        raise TablesConfigError(f"{source}: expected a mapping with 'warehouse' and 'tables'")
    try:
        config = TablesConfig.model_validate(raw)
    except ValidationError as e:
        lines = [
            f"{source}: {_describe(err['loc'], raw)}: {err['msg'].removeprefix('Value error, ')}" for err in e.errors()
        ]
        raise TablesConfigError("invalid tables config:\n  " + "\n  ".join(lines)) from None
    if base_dir is not None and not config.warehouse.is_s3:
        config = config.model_copy(
            update={
                "warehouse": config.warehouse.model_copy(
                    update={"uri": resolve_warehouse_uri(config.warehouse.uri, base_dir)}
                )
            }
        )
    return config


# libyaml's safe loader when PyYAML has it (5-10x faster: 500 tables parse in 0.2 s, not 1.2 s)
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_tables_config(path: str | Path) -> TablesConfig:
    path = Path(path)
    try:
        raw = yaml.load(path.read_text(), Loader=_SAFE_LOADER)
    except (OSError, yaml.YAMLError) as e:
        raise TablesConfigError(f"cannot read tables config {path}: {e}") from e
    return parse_tables_config(raw, source=str(path), base_dir=path.parent.resolve())
