"""What Dagster shows of one maintenance operation of one table: the asset and its blocking check.

Every maintenance asset is keyed ``[db, table, operation]``, depends on the table's asset, sits in
the table's group and in its maintenance pool (one maintainer per table at a time; writers are not
in it), and shows ``table`` and ``operation`` as its definition metadata.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

import dagster as dg

from orchestration.config import TableConfig
from orchestration.defs.automation import scheduled_condition
from orchestration.defs.naming import maintenance_asset_key, maintenance_pool, table_asset_key, table_group


@dataclasses.dataclass(frozen=True, kw_only=True)
class BlockingCheck:
    """An asset check that verifies what the operation wrote; blocking, so nothing downstream of
    the asset runs on a bad rewrite. A run that wrote nothing passes it."""

    name: str
    description: str
    nothing_done: str  # how the passing result of a skipped run begins: "nothing compacted"

    def skipped(self, why: str) -> dg.AssetCheckResult:
        return dg.AssetCheckResult(check_name=self.name, passed=True, description=f"{self.nothing_done}: {why}")


@dataclasses.dataclass(frozen=True, kw_only=True)
class MaintenanceAsset:
    """One maintenance operation of one table, as an asset."""

    table: TableConfig
    operation: str  # the asset key's last part and the ledger's ``operation``
    description: str
    on_spark: bool = False  # the operation runs a Spark job (else in the step process)
    check: BlockingCheck | None = None
    metadata: Mapping[str, str] = dataclasses.field(default_factory=dict)  # shown besides table and operation
    partitions_def: dg.PartitionsDefinition | None = None
    backfill_policy: dg.BackfillPolicy | None = None

    @property
    def key(self) -> dg.AssetKey:
        return maintenance_asset_key(self.table.name, self.operation)

    def define(self) -> Callable[[Callable[..., dg.MaterializeResult]], dg.AssetsDefinition]:
        """The ``@dg.asset`` decorator of this asset."""
        partitioned = {
            "partitions_def": self.partitions_def,
            "backfill_policy": self.backfill_policy,
            "automation_condition": scheduled_condition(self.table, self.operation),
        }
        return dg.asset(
            key=self.key,
            deps=[table_asset_key(self.table.name)],
            group_name=table_group(self.table.name),
            pool=maintenance_pool(self.table.name),
            kinds={"spark", "paimon"} if self.on_spark else {"paimon"},
            description=self.description,
            metadata={"table": self.table.name, "operation": self.operation, **self.metadata},
            check_specs=None
            if self.check is None
            else [
                dg.AssetCheckSpec(self.check.name, asset=self.key, blocking=True, description=self.check.description)
            ],
            # only when set: Dagster warns that backfill_policy is a beta parameter whenever it is passed
            **{name: value for name, value in partitioned.items() if value is not None},
        )
