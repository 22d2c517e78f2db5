"""A table's own asset, built cheaply: ``table_asset(...)`` is ``dg.asset(...)`` for the first table
of a kind and a copy of that one for the next tables.

Dagster's ``@asset`` introspects the function (signature, config class, resources, output types)
every time: about 2.5 ms per asset, 2.5 s per 1,000 tables for each per-table asset (the write
asset, the derived table, a partitioned table's rescale). Every table's function of one kind is the
same code with another closure, so the introspection's result is the same: the first table's
definition is the template, and the next tables get a copy (op and asset definitions built
directly, about 0.5 ms) with their own function, name, keys, dependencies, group, pool, partitions
and descriptions. The copy is what ``@asset`` would have built: the tests run both kinds.

``can_subset``: the asset's checks can run without it (a run of the checks only, "Execute" in the
UI). ``@asset`` cannot say so, so the template is then a one-spec ``multi_asset`` whose function
yields only what the run selected.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import dagster as dg
from dagster._core.definitions.assets.definition.assets_definition import stringify_asset_key_to_input_name
from dagster._core.definitions.decorators.op_decorator import DecoratedOpFunction
from dagster._core.definitions.op_definition import OpDefinition

_TEMPLATES: dict[tuple, dg.AssetsDefinition] = {}


def table_asset(
    *,
    key: dg.AssetKey,
    group_name: str,
    pool: str,
    kinds: set[str],
    description: str,
    metadata: Mapping[str, Any],
    deps: Sequence[dg.AssetKey] = (),
    check_specs: Sequence[dg.AssetCheckSpec] = (),
    partitions_def: dg.PartitionsDefinition | None = None,
    backfill_policy: dg.BackfillPolicy | None = None,
    automation_condition: dg.AutomationCondition | None = None,
    can_subset: bool = False,
) -> Callable[[Callable[..., Any]], dg.AssetsDefinition]:
    """``dg.asset`` with these arguments (a one-spec ``dg.multi_asset`` when ``can_subset``), built
    as a copy when a template of the same kind exists."""

    def decorate(fn: Callable[..., Any]) -> dg.AssetsDefinition:
        shape = (
            inspect.unwrap(fn).__code__,  # a wrapper's (maintenance.asset._run_one): the code it wraps
            len(deps),
            tuple(c.name for c in check_specs),
            partitions_def is None,
            tuple(sorted(kinds)),
            can_subset,
        )
        template = _TEMPLATES.get(shape)
        if template is None and can_subset:
            built = _subsettable(
                fn,
                spec=dg.AssetSpec(
                    key=key,
                    deps=list(deps),
                    group_name=group_name,
                    kinds=kinds,
                    description=description,
                    metadata=dict(metadata),
                    automation_condition=automation_condition,
                ),
                pool=pool,
                check_specs=check_specs,
                partitions_def=partitions_def,
                backfill_policy=backfill_policy,
            )
            _TEMPLATES[shape] = built
            return built
        if template is None:
            optional = {"partitions_def": partitions_def, "backfill_policy": backfill_policy}
            built = dg.asset(
                key=key,
                deps=list(deps),
                group_name=group_name,
                pool=pool,
                kinds=kinds,
                description=description,
                metadata=dict(metadata),
                check_specs=list(check_specs) or None,
                automation_condition=automation_condition,
                # only when set: Dagster warns that backfill_policy is a beta parameter whenever it is passed
                **{name: value for name, value in optional.items() if value is not None},
            )(fn)
            _TEMPLATES[shape] = built
            return built
        return _copy(
            template,
            fn,
            key=key,
            deps=deps,
            group_name=group_name,
            pool=pool,
            description=description,
            metadata=metadata,
            check_specs=check_specs,
            partitions_def=partitions_def,
            backfill_policy=backfill_policy,
            automation_condition=automation_condition,
        )

    return decorate


def _subsettable(
    fn: Callable[..., Any],
    *,
    spec: dg.AssetSpec,
    pool: str,
    check_specs: Sequence[dg.AssetCheckSpec],
    partitions_def: dg.PartitionsDefinition | None,
    backfill_policy: dg.BackfillPolicy | None,
) -> dg.AssetsDefinition:
    """The template of a subsettable asset: a ``multi_asset`` of one spec, its op named as
    ``@asset`` names it (the key as an identifier)."""
    optional = {"partitions_def": partitions_def, "backfill_policy": backfill_policy}
    return dg.multi_asset(
        name=spec.key.to_python_identifier(),
        specs=[spec],
        check_specs=list(check_specs) or None,
        can_subset=True,
        pool=pool,
        description=spec.description,
        # only when set: Dagster warns that backfill_policy is a beta parameter whenever it is passed
        **{name: value for name, value in optional.items() if value is not None},
    )(fn)


def _copy(
    template: dg.AssetsDefinition,
    fn: Callable[..., Any],
    *,
    key: dg.AssetKey,
    deps: Sequence[dg.AssetKey],
    group_name: str,
    pool: str,
    description: str,
    metadata: Mapping[str, Any],
    check_specs: Sequence[dg.AssetCheckSpec],
    partitions_def: dg.PartitionsDefinition | None,
    backfill_policy: dg.BackfillPolicy | None,
    automation_condition: dg.AutomationCondition | None,
) -> dg.AssetsDefinition:
    op = template.op
    template_result = next(iter(template.keys_by_output_name))
    # @asset names its output "result", a multi_asset (the subsettable template) after the key
    result_name = key.to_python_identifier() if template.can_subset else template_result
    template_checks = dict(template.check_specs_by_output_name)
    checks_by_output = {spec.get_python_identifier(): spec for spec in check_specs}
    outs = {result_name: dg.Out.from_definition(op.output_dict[template_result])}
    check_out = next(iter(op.output_dict[name] for name in template_checks), None)
    for name in checks_by_output:
        assert check_out is not None
        outs[name] = dg.Out.from_definition(check_out)
    inputs = {stringify_asset_key_to_input_name(dep): dep for dep in deps}
    node = OpDefinition.dagster_internal_init(
        name=key.to_python_identifier(),
        ins={name: dg.In(dagster_type=dg.Nothing) for name in inputs},
        outs=outs,
        compute_fn=DecoratedOpFunction(decorated_fn=fn),
        config_schema=op.config_schema,
        description=description,
        tags=op.tags,
        required_resource_keys=op.required_resource_keys,
        code_version=None,
        retry_policy=op.retry_policy,
        version=None,
        pool=pool,
    )
    spec = template.get_asset_spec().replace_attributes(
        key=key,
        deps=list(deps),
        group_name=group_name,
        description=description,
        metadata=dict(metadata),
        partitions_def=partitions_def,
        automation_condition=automation_condition,
    )
    return dg.AssetsDefinition.dagster_internal_init(
        keys_by_input_name=inputs,
        keys_by_output_name={result_name: key},
        node_def=node,
        selected_asset_keys={key},
        can_subset=template.can_subset,
        resource_defs=None,
        backfill_policy=backfill_policy,
        check_specs_by_output_name=checks_by_output or None,
        selected_asset_check_keys={spec.key for spec in check_specs} or None,
        is_subset=False,
        specs=[spec],
        execution_type=None,
        hook_defs=None,
    )
