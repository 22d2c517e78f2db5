"""The columns a read names (projection and filter), checked against the schema it reads in.

A read of the latest snapshot names the table's current columns; a time-travel read names the
columns of the snapshot's own schema, the names its result has. A name that schema lacks, or a
filter literal its column's type cannot hold, is an error naming the column, the snapshot and
the schema, never a column of NULLs or a filter on another column that carries the name today.
"""

from __future__ import annotations

from collections.abc import Sequence

from lake_core.errors import PredicateError
from lake_core.read.predicate import Predicate, literal_misfit
from lake_core.schema.table_schema import TableSchema


def check_read_columns(
    identifier: str,
    schema: TableSchema,
    projection: Sequence[str] | None,
    predicate: Predicate | None,
    *,
    snapshot_id: int | None = None,
) -> None:
    """Raise ``PredicateError`` unless every column of ``projection`` and ``predicate`` is in
    ``schema`` and every filter literal fits its column; ``snapshot_id``: a time-travel read of
    that snapshot, whose schema ``schema`` is."""
    names = [f.name for f in schema.fields]
    types = {f.name: f.type for f in schema.fields}
    where = f"{identifier}" if snapshot_id is None else f"{identifier} at snapshot {snapshot_id}"
    for c in projection or ():
        if c not in types:
            raise PredicateError(_missing(f"column '{c}' requested from {where}", schema, names, snapshot_id))
    for leaf in predicate.leaves() if predicate is not None else ():
        if leaf.field not in types:
            raise PredicateError(
                _missing(f"column '{leaf.field}' named by the filter of a read of {where}", schema, names, snapshot_id)
            )
        why = literal_misfit(leaf.field, types[leaf.field], leaf.literals)
        if why:
            schema_id = "" if snapshot_id is None else f" (schema {schema.id})"
            raise PredicateError(f"{why}, in a read of {where}{schema_id}{_hint(snapshot_id)}")


def _missing(what: str, schema: TableSchema, names: list[str], snapshot_id: int | None) -> str:
    if snapshot_id is None:
        return f"{what} does not exist; columns: {names}"
    return f"{what} is not in that snapshot's schema (schema {schema.id}, columns {names}){_hint(snapshot_id)}"


def _hint(snapshot_id: int | None) -> str:
    if snapshot_id is None:
        return ""
    return (
        f": time travel reads a snapshot with the columns it was written with, so name those "
        f"(table.predicate_builder(snapshot_id={snapshot_id}) checks a filter against them)"
    )
