"""What Dagster shows of one maintenance operation of one table: the asset and its blocking check.

Every maintenance asset is keyed ``[db, table, operation]``, depends on the table's asset, sits in
the table's group and in the maintenance pool (``lake_maintenance``: one maintainer at a time;
writers are not in it), and shows ``table`` and ``operation`` as its definition metadata.

**One op per operation, not per table.** An operation's assets of every table are the specs of one
``multi_asset`` (``lake_maintenance__<operation>``, ``can_subset``): the UI shows one asset per table
and operation, in the table's group, materializes one of them alone (the op runs for the selected
tables only), or backfills an operation over many tables in one run (the op visits them one after
the other; a table that fails does not stop the others, and the run fails after the last with the
first error). Building a spec costs microseconds where a decorated asset per table costs
milliseconds in Dagster's introspection, so the code location loads in time that barely grows with
the tables (docs/service/many-tables.md).

An asset with partitions (a partitioned table's ``rescale``: its own dynamic partitions) stays an
asset of its own, subsettable too: a run that selects only its check ("Execute" on the check in the
UI) evaluates the check on the operation's last committed run and maintains nothing.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Iterator, Mapping, Sequence, Set
from typing import Any

import dagster as dg

from orchestration.config import TableConfig
from orchestration.defs.automation import scheduled_condition
from orchestration.defs.cheap_assets import table_asset
from orchestration.defs.naming import (
    maintenance_asset_key,
    maintenance_op_name,
    maintenance_pool,
    table_asset_key,
    table_group,
)


@dataclasses.dataclass(frozen=True, kw_only=True)
class BlockingCheck:
    """An asset check that verifies what the operation wrote; blocking, so nothing downstream of
    the asset runs on a bad rewrite. A run that wrote nothing passes it."""

    name: str
    description: str
    nothing_done: str  # how the passing result of a skipped run begins: "nothing compacted"
    # the check executed on its own (no run of the operation with it: "Execute" in the UI):
    # ``(lake, table) -> result`` on the table as it is now; None: it runs only with the operation
    alone: Callable[[Any, TableConfig], dg.AssetCheckResult] | None = None

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

    @property
    def kinds(self) -> set[str]:
        return {"spark", "paimon"} if self.on_spark else {"paimon"}

    @property
    def definition_metadata(self) -> dict[str, str]:
        return {"table": self.table.name, "operation": self.operation, **self.metadata}

    def spec(self) -> dg.AssetSpec:
        return dg.AssetSpec(
            key=self.key,
            deps=[table_asset_key(self.table.name)],
            group_name=table_group(self.table.name),
            kinds=self.kinds,
            description=self.description,
            metadata=self.definition_metadata,
            automation_condition=scheduled_condition(self.table, self.operation),
            skippable=True,
        )

    def check_specs(self) -> list[dg.AssetCheckSpec]:
        if self.check is None:
            return []
        return [dg.AssetCheckSpec(self.check.name, asset=self.key, blocking=True, description=self.check.description)]

    def define(self) -> Callable[[Callable[..., dg.MaterializeResult]], dg.AssetsDefinition | TableOperation]:
        """The decorator of this asset's function: a :class:`TableOperation` that
        :func:`combine` joins with the other tables' (one op per operation), or, for an asset with
        partitions, the asset itself (subsettable: its check also runs alone)."""
        if self.partitions_def is None:
            return lambda fn: TableOperation(asset=self, fn=fn)
        decorate = table_asset(  # dg.multi_asset of one spec, or a copy of the first table's (cheap_assets)
            key=self.key,
            deps=[table_asset_key(self.table.name)],
            group_name=table_group(self.table.name),
            pool=maintenance_pool(self.table.name),
            kinds=self.kinds,
            description=self.description,
            metadata=self.definition_metadata,
            check_specs=self.check_specs(),
            automation_condition=scheduled_condition(self.table, self.operation),
            partitions_def=self.partitions_def,
            backfill_policy=self.backfill_policy,
            can_subset=True,
        )
        return lambda fn: decorate(_run_one(TableOperation(asset=self, fn=fn)))


@dataclasses.dataclass(frozen=True)
class TableOperation:
    """One table's maintenance asset before it joins the other tables' in one op: its spec and
    the function that runs it (``(context, config?, resources...) -> MaterializeResult``)."""

    asset: MaintenanceAsset
    fn: Callable[..., dg.MaterializeResult]


def _keyed(result: dg.MaterializeResult, key: dg.AssetKey, checks: Set[dg.AssetCheckKey]) -> dg.MaterializeResult:
    """A table's result, addressed to its asset (and its check results to their check), with the
    results of the checks the run selected (``checks``) only: Dagster rejects the others."""
    results = [
        dg.AssetCheckResult(
            asset_key=key,
            check_name=c.check_name,
            passed=c.passed,
            severity=c.severity,
            metadata=c.metadata,
            description=c.description,
        )
        for c in result.check_results or ()
        if dg.AssetCheckKey(key, c.check_name) in checks
    ]
    return dg.MaterializeResult(asset_key=key, metadata=result.metadata, check_results=results or None)


def _checks_alone(
    context: dg.AssetExecutionContext, by_key: Mapping[dg.AssetKey, TableOperation], lake: Any
) -> Iterator[dg.AssetCheckResult]:
    """The selected checks whose asset the run does not materialize (a check-only run, "Execute"
    in the UI): each evaluated on its table as it is now (a maintenance check: on the operation's
    last committed run, from the ledger), nothing maintained."""
    for check_key in sorted(context.selected_asset_check_keys, key=lambda k: k.to_user_string()):
        if check_key.asset_key in context.selected_asset_keys:
            continue  # the operation's run yields it
        item = by_key[check_key.asset_key]
        check = item.asset.check
        if check is None or check.alone is None:
            continue
        result = check.alone(lake, item.asset.table)
        yield dg.AssetCheckResult(
            asset_key=check_key.asset_key,
            check_name=check_key.name,
            passed=result.passed,
            severity=result.severity,
            metadata=result.metadata,
            description=result.description,
        )


def _signed(wrapper: Callable[..., Any], like: Callable[..., Any], name: str) -> Callable[..., Any]:
    """``wrapper`` with the parameters of ``like`` (Dagster reads the config and resources it
    takes from them) and no return annotation (it yields results)."""
    signature = inspect.signature(like, eval_str=True)
    wrapper.__signature__ = signature.replace(return_annotation=inspect.Signature.empty)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {
        n: p.annotation for n, p in signature.parameters.items() if p.annotation is not inspect.Parameter.empty
    }
    wrapper.__name__ = name
    wrapper.__wrapped__ = like  # type: ignore[attr-defined] # what cheap_assets tells templates apart by
    return wrapper


def _run_one(item: TableOperation) -> Callable[..., Iterator[dg.MaterializeResult | dg.AssetCheckResult]]:
    """An asset of its own (with partitions): the operation when the run selected the asset, and
    only its check, on the last committed run, when the run selected the check alone."""
    key = item.asset.key

    def run_one(context: dg.AssetExecutionContext, **kwargs: Any) -> Iterator[Any]:
        yield from _checks_alone(context, {key: item}, kwargs.get("lake"))
        if key in context.selected_asset_keys:
            yield _keyed(item.fn(context, **kwargs), key, context.selected_asset_check_keys)

    return _signed(run_one, item.fn, item.fn.__name__)


def combine(operation: str, items: Sequence[TableOperation]) -> dg.AssetsDefinition:
    """One ``multi_asset`` running ``operation`` for the selected tables, one after the other."""
    by_key = {item.asset.key: item for item in items}
    order = {key: i for i, key in enumerate(by_key)}

    def run_selected(
        context: dg.AssetExecutionContext, **kwargs: Any
    ) -> Iterator[dg.MaterializeResult | dg.AssetCheckResult]:
        errors: list[BaseException] = []
        yield from _checks_alone(context, by_key, kwargs.get("lake"))
        for key in sorted(context.selected_asset_keys, key=order.__getitem__):
            try:
                result = by_key[key].fn(context, **kwargs)
            except Exception as error:  # noqa: BLE001 - the other tables still run; raised below
                if len(context.selected_asset_keys) == 1:
                    raise
                context.log.error(f"{operation} of {by_key[key].asset.table.name} failed: {error}")
                errors.append(error)
                continue
            yield _keyed(result, key, context.selected_asset_check_keys)
        if errors:
            raise errors[0]

    # the same parameters for every table of an operation
    _signed(run_selected, items[0].fn, maintenance_op_name(operation))
    first = items[0].asset
    return dg.multi_asset(
        name=maintenance_op_name(operation),
        specs=[item.asset.spec() for item in items],
        check_specs=[spec for item in items for spec in item.asset.check_specs()] or None,
        can_subset=True,
        pool=maintenance_pool(first.table.name),
        description=f"{operation} of the selected tables, one after the other.",
    )(run_selected)
