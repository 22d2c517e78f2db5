"""Dynamic options of one dedicated compaction, as the ``options`` argument of Paimon's ``compact``
procedure: they override the table's options for this job only (no schema change: nothing is
committed to the table's schema).

Only options that steer *planning* are accepted (which buckets, which files, which records expire):
the units carry everything their execution needs, so a unit runs the same in any worker.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from lake_core.definition import validate_table_definition
from lake_core.errors import InvalidOptionError
from lake_core.options import validate_table_options

if TYPE_CHECKING:
    from lake_core.store import FileStore

PLANNING_OPTIONS = (
    "num-sorted-run.compaction-trigger",
    "compaction.max-size-amplification-percent",
    "compaction.size-ratio",
    "record-level.expire-time",
    "record-level.time-field",
)


def with_planning_options(store: FileStore, options: Mapping[str, str] | None) -> FileStore:
    """``store`` seen with ``options`` on top of its own (the same store when there are none)."""
    if not options:
        return store

    opts = {str(k): str(v) for k, v in options.items()}
    bad = sorted(k for k in opts if k not in PLANNING_OPTIONS)
    if bad:
        raise InvalidOptionError(
            f"compact of {store.identifier}: option(s) {bad} cannot be given to one compaction; "
            f"allowed: {list(PLANNING_OPTIONS)} (set others on the table)"
        )
    merged = {**store.schema.options, **opts}
    # num-levels defaults to trigger + 1: pin it, so a lower trigger never puts existing files
    # above the top level
    merged.setdefault("num-levels", str(store.options.num_levels))
    schema = store.schema.with_options(merged)
    validate_table_definition(
        store.identifier, schema, validate_table_options(merged, has_primary_key=bool(schema.primary_keys))
    )
    return store.with_schema(schema)
