"""Dynamic options of one dedicated compaction, as the ``options`` argument of Paimon's ``compact``
procedure: they override the table's options for this job only (no schema change: nothing is
committed to the table's schema).

Only options that steer *planning* are accepted (which buckets, which files, which records expire):
the units carry everything their execution needs, so a unit runs the same in any worker.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

from lake_core.definition import validate_table_definition
from lake_core.errors import InvalidOptionError
from lake_core.options import validate_table_options

if TYPE_CHECKING:
    from lake_core.table import FileStoreTable

PLANNING_OPTIONS = (
    "num-sorted-run.compaction-trigger",
    "compaction.max-size-amplification-percent",
    "compaction.size-ratio",
    "record-level.expire-time",
    "record-level.time-field",
)


def with_planning_options(table: "FileStoreTable", options: Mapping[str, str] | None) -> "FileStoreTable":
    """``table`` seen with ``options`` on top of its own (the same table when there are none)."""
    if not options:
        return table

    opts = {str(k): str(v) for k, v in options.items()}
    bad = sorted(k for k in opts if k not in PLANNING_OPTIONS)
    if bad:
        raise InvalidOptionError(f"compact of {table.identifier}: option(s) {bad} cannot be given to one compaction; "
                                 f"allowed: {list(PLANNING_OPTIONS)} (set others on the table)")
    merged = {**table.schema.options, **opts}
    # num-levels defaults to trigger + 1: pin it, so a lower trigger never puts existing files
    # above the top level
    merged.setdefault("num-levels", str(table.options.num_levels))
    schema = table.schema.with_options(merged)
    validate_table_definition(table.identifier, schema,
                               validate_table_options(merged, has_primary_key=bool(schema.primary_keys)))
    return table.with_schema(schema)
