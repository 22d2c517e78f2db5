"""A table's definition: creating one and altering it (the next ``schema-N``), each validated as
Java's ``SchemaValidation`` does before anything is written."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from lake_core.bucket.dynamic import DynamicBucketOptions
from lake_core.errors import CommitFailedError, InvalidOptionError, LakeError, SchemaError, TableNotFoundError
from lake_core.format.file_format import choose_codec
from lake_core.format.stats import parse_stats_mode
from lake_core.merge import create_merge_engine
from lake_core.options import CoreOptions, validate_table_options
from lake_core.options.table_options import RECORD_LEVEL_EXPIRE_TIME, RECORD_LEVEL_TIME_FIELD, SEQUENCE_FIELD
from lake_core.schema.change import SchemaChange, apply_schema_changes
from lake_core.schema.table_schema import TableSchema


def define_table(
    identifier: str,
    schema: pa.Schema,
    primary_keys: Sequence[str],
    partition_keys: Sequence[str],
    options: Mapping[str, Any] | None,
    comment: str | None,
) -> TableSchema:
    """Every check of a new table's definition (options, keys, merge engine), before anything is written."""
    if not isinstance(schema, pa.Schema):
        raise SchemaError(f"create_table({identifier!r}) expects a pyarrow.Schema, got {type(schema).__name__}")
    opts = {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in (options or {}).items()}
    core = validate_table_options(opts, has_primary_key=bool(primary_keys))
    table_schema = TableSchema.create(
        schema, partition_keys=tuple(partition_keys), primary_keys=tuple(primary_keys), options=opts, comment=comment
    )
    validate_table_definition(identifier, table_schema, core)
    return table_schema


def validate_table_definition(identifier: str, schema: TableSchema, core: CoreOptions) -> None:
    """Every check of a table definition (Java ``SchemaValidation``), new or altered: options against
    the columns and keys, bucket mode, record expiry, and the merge engine's own checks."""
    names = [f.name for f in schema.fields]
    bucket = core.bucket
    if schema.primary_keys:
        missing_parts = [p for p in schema.partition_keys if p not in schema.primary_keys]
        if bucket >= 1 and missing_parts:
            raise InvalidOptionError(
                f"table {identifier}: primary key {list(schema.primary_keys)} omits partition column(s) "
                f"{missing_parts}, so one key could live in several partitions, which a fixed 'bucket' cannot "
                f"handle. Either (1) add {missing_parts} to the primary key, so a key is unique per partition and "
                f"the fixed bucket count works; or (2) remove the 'bucket' option (or set it to -1) to use "
                "cross-partition upsert in dynamic bucket mode, where a key lives in one partition and moves when "
                "its partition value changes (slower writes: every write indexes the table's keys)"
            )
        if bucket == -1:
            mode = "cross-partition upsert" if missing_parts else "dynamic bucket"
            if core.bucket_key:
                raise InvalidOptionError(
                    f"table {identifier}: 'bucket-key' cannot be used in {mode} mode ('bucket' = -1, the default "
                    "for primary-key tables); remove 'bucket-key', or set a fixed positive 'bucket'"
                )
            if missing_parts and core.sequence_fields:
                raise InvalidOptionError(
                    f"table {identifier}: 'sequence.field' cannot be used with cross-partition upsert (primary key "
                    f"{list(schema.primary_keys)} omits partition column(s) {missing_parts}), as in Paimon; remove "
                    "it or add the partition columns to the primary key"
                )
            DynamicBucketOptions.of(core)
    else:
        if bucket >= 1 and not core.bucket_key:
            raise InvalidOptionError(
                f"table {identifier}: an append table with fixed 'bucket' = {bucket} needs the option "
                "'bucket-key' (comma-separated columns), or use 'bucket' = '-1'"
            )
    for key, v in (("bucket-key", core.bucket_key), ("sequence.field", core.text(SEQUENCE_FIELD))):
        if v:
            for col in (c.strip() for c in v.split(",")):
                if col not in names:
                    raise InvalidOptionError(
                        f"option '{key}' names column '{col}', which is not in table {identifier}; columns: {names}"
                    )
    if schema.primary_keys and core.bucket_key:
        bad = [c for c in core.bucket_key.split(",") if c.strip() not in schema.primary_keys]
        if bad:
            raise InvalidOptionError(
                f"option 'bucket-key' of {identifier} must be a subset of the primary key "
                f"{list(schema.primary_keys)}; {bad} are not key columns"
            )
    validate_expiry_options(identifier, core)
    rk = core.rowkind_field
    if rk:
        if rk not in names:
            raise InvalidOptionError(f"option 'rowkind.field' names column '{rk}', which is not in table {identifier}")
        if not pa.types.is_string(schema.field(rk).type) and not pa.types.is_large_string(schema.field(rk).type):
            raise InvalidOptionError(f"option 'rowkind.field' column '{rk}' of {identifier} must be a STRING column")
    _validate_column_options(identifier, schema, core)
    _check_codecs(core)
    create_merge_engine(schema, core)  # engine checks: aggregate types, sequence groups, ...


def _check_codecs(opts: CoreOptions) -> None:
    """Compression and stats modes are checked by the modules that use them."""
    choose_codec(opts.file_format, opts.file_compression, opts.raw)
    parse_stats_mode(opts.stats_mode)
    for key, value in opts.raw.items():
        if key.startswith("fields.") and key.endswith(".stats-mode"):
            parse_stats_mode(value, key)


def _validate_column_options(identifier: str, schema: TableSchema, core) -> None:
    """Options that name a column must name one of this table, of a type the option can use."""
    names = [f.name for f in schema.fields]
    for key in core.raw:
        if key.startswith("fields.") and key.count(".") >= 2:
            col, suffix = key[len("fields.") :].rsplit(".", 1)
            # 'fields.g1,g2.sequence-group' names several sequence fields at once
            for c in col.split(",") if suffix == "sequence-group" else [col]:
                if c not in names:  # a typo would otherwise leave the column silently unconfigured
                    raise InvalidOptionError(
                        f"option '{key}' names column '{c}', which is not in table {identifier}; columns: {names}"
                    )
    tf = core.record_level_time_field
    if tf:
        if tf not in names:
            raise InvalidOptionError(
                f"option 'record-level.time-field' names column '{tf}', which is not in table "
                f"{identifier}; columns: {names}"
            )
        t = schema.field(tf).type
        if not (pa.types.is_int32(t) or pa.types.is_int64(t) or pa.types.is_timestamp(t)):
            # Paimon's SchemaValidation: INT or BIGINT seconds/millis, or TIMESTAMP
            raise InvalidOptionError(
                f"option 'record-level.time-field' column '{tf}' of {identifier} has type {t}; "
                "it must be INT, BIGINT or TIMESTAMP"
            )


def validate_expiry_options(identifier: str, core: CoreOptions) -> None:
    """Both options or none, and an expire time of at least a second."""
    expire, field = core.text(RECORD_LEVEL_EXPIRE_TIME), core.text(RECORD_LEVEL_TIME_FIELD)
    if expire is None and field is None:
        return
    if expire is None or field is None:
        have, need = (
            ("record-level.expire-time", "record-level.time-field")
            if expire is not None
            else ("record-level.time-field", "record-level.expire-time")
        )
        raise InvalidOptionError(f"table {identifier}: option '{have}' needs '{need}' as well")
    if (core.record_level_expire_time_ms or 0) < 1000:  # '' reads as unset
        raise InvalidOptionError(
            f"table {identifier}: option 'record-level.expire-time' = {expire!r} must be at least one second"
        )
    # the column itself (exists, INT/BIGINT/TIMESTAMP) is checked with the other column options


_MAX_ATTEMPTS = 20


def commit_schema_changes(table, changes: Sequence[SchemaChange]) -> TableSchema:
    """Apply ``changes`` to the latest schema of ``table`` and create the next ``schema-N``
    exclusively (Java ``SchemaManager.commitChanges``). If another alter creates that file first,
    the changes are applied again on top of it (and refused if they no longer fit, e.g. the column
    is gone): two alters never overwrite each other. Returns the new schema."""

    identifier = table.identifier
    manager = table.schema_manager
    for _ in range(_MAX_ATTEMPTS):
        old = manager.latest()
        if old is None:
            raise TableNotFoundError(f"table {identifier} does not exist")
        has_snapshots = table.snapshot_manager.latest_id() is not None
        new = apply_schema_changes(old, changes, identifier=identifier, has_snapshots=has_snapshots)
        # Validate the result exactly like a new table definition.
        try:
            core = validate_table_options(new.options, has_primary_key=bool(new.primary_keys))
            new.bucket_keys()
            validate_table_definition(identifier, new, core)
        except LakeError as e:
            if identifier in str(e):
                raise
            raise type(e)(f"cannot alter table {identifier}: {e}") from e
        if manager.try_commit(new):
            return new
    raise CommitFailedError(
        f"alter_table of {identifier} lost the race for the next schema file "
        f"{_MAX_ATTEMPTS} times to concurrent alters; nothing was changed — retry"
    )
