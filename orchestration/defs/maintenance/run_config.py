"""The run config of the step-process maintenance assets: every field None means "the table's
``maintenance:`` policy", and the policy with a run's overrides is validated by the policy's own
model, so an error names the table, the operation and the field."""

from typing import Any, Literal

import dagster as dg
from pydantic import BaseModel, Field, ValidationError

from lake_core import LakeError
from orchestration.config import TableConfig


class MaintenanceConfigError(LakeError, ValueError):
    """A maintenance run's config is invalid; the message names the table, the asset and the field."""


class ManifestCompactionConfig(dg.Config):
    mode: Literal["minor", "full"] = Field(
        "full", description="full: fold every manifest; minor: merge runs of small ones"
    )
    dry_run: bool = False


class SnapshotExpiryConfig(dg.Config):
    retain_min: int | None = Field(None, description="default: the policy's snapshot_expiry.retain_min")
    retain_max: int | None = None
    time_retained: str | None = Field(None, description="a duration such as '1 h'; default: the policy's")
    max_deletes: int | None = Field(None, description="at most this many snapshots per run (snapshot.expire.limit)")
    dry_run: bool = False


class PartitionExpiryConfig(dg.Config):
    expiration_time: str | None = Field(None, description="a duration such as '30 d'; default: the policy's")
    dry_run: bool = False


class OrphanCleanupConfig(dg.Config):
    older_than: str | None = Field(None, description="only files older than this (at least 1 h); default: the policy's")
    dry_run: bool | None = Field(
        None, description="default: the policy's orphan_cleanup.dry_run (true unless set false)"
    )


class TagsConfig(dg.Config):
    dry_run: bool = False


def effective_policy(table: TableConfig, operation: str, policy: BaseModel, **overrides: Any) -> Any:
    """``policy`` with the run's non-None ``overrides``, validated by the policy's own model."""
    updates = {k: v for k, v in overrides.items() if v is not None}
    try:
        return type(policy).model_validate({**policy.model_dump(), **updates})
    except ValidationError as e:
        problems = "; ".join(
            f"field {'.'.join(map(str, err['loc'])) or '?'!r}: {err['msg'].removeprefix('Value error, ')}"
            for err in e.errors()
        )
        raise MaintenanceConfigError(f"table {table.name!r}: {operation} run config: {problems}") from None
