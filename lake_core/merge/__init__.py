"""Merge engines: one package for write-time folding, compaction and merge-on-read."""
from __future__ import annotations

from lake_core.errors import InvalidOptionError
from lake_core.options import CoreOptions
from lake_core.schema.table_schema import TableSchema
from lake_core.merge.base import MergeContext, MergeEngine
from lake_core.merge.deduplicate import DeduplicateEngine

_ENGINES: dict[str, type[MergeEngine]] = {"deduplicate": DeduplicateEngine}


def register_engine(name: str, cls: type[MergeEngine]) -> None:
    _ENGINES[name] = cls


def _load_optional_engines() -> None:
    # Engines live in their own modules; import them lazily so a missing one names itself.
    for mod in ("partial_update", "aggregation", "first_row"):
        try:
            __import__(f"{__name__}.{mod}")
        except ModuleNotFoundError as e:
            if e.name != f"{__name__}.{mod}":
                raise


def create_merge_engine(schema: TableSchema, options: CoreOptions | None = None) -> MergeEngine:
    ctx = MergeContext.of(schema, options)
    name = ctx.options.merge_engine
    if name not in _ENGINES:
        _load_optional_engines()
    cls = _ENGINES.get(name)
    if cls is None:
        raise InvalidOptionError(f"option 'merge-engine' = {name!r} is not supported by lake_core yet")
    return cls(ctx)


__all__ = ["MergeContext", "MergeEngine", "create_merge_engine", "register_engine"]
