"""Merge engines: one package for write-time folding, compaction and merge-on-read."""

from __future__ import annotations

from lake_core.errors import InvalidOptionError
from lake_core.merge.aggregation import AggregationEngine
from lake_core.merge.base import MergeContext, MergeEngine
from lake_core.merge.deduplicate import DeduplicateEngine
from lake_core.merge.first_row import FirstRowEngine
from lake_core.merge.partial_update import PartialUpdateEngine
from lake_core.options import CoreOptions
from lake_core.schema.table_schema import TableSchema

# Paimon's CoreOptions.MergeEngine values. Every engine is imported eagerly: a broken engine module
# must fail the import of lake_core, not turn into "not supported" at table creation.
_ENGINES: dict[str, type[MergeEngine]] = {
    "deduplicate": DeduplicateEngine,
    "partial-update": PartialUpdateEngine,
    "aggregation": AggregationEngine,
    "first-row": FirstRowEngine,
}


def create_merge_engine(schema: TableSchema, options: CoreOptions | None = None) -> MergeEngine:
    ctx = MergeContext.of(schema, options)
    name = ctx.options.merge_engine
    cls = _ENGINES.get(name)
    if cls is None:
        raise InvalidOptionError(f"option 'merge-engine' = {name!r} is not supported by lake_core yet")
    return cls(ctx)


__all__ = ["MergeContext", "MergeEngine", "create_merge_engine"]
