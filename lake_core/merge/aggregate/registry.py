"""The aggregate functions by name (Paimon's ``fields.<f>.aggregate-function`` values), the
``create_function`` factory checking the column type, and ``fields.<f>.ignore-retract``."""

from __future__ import annotations

import pyarrow as pa

from lake_core.errors import InvalidOptionError, SchemaError
from lake_core.merge.aggregate.base import AggFunction
from lake_core.merge.aggregate.boolean import BoolAndAgg, BoolOrAgg
from lake_core.merge.aggregate.collections import CollectAgg, MergeMapAgg, NestedUpdateAgg
from lake_core.merge.aggregate.extremes import MaxAgg, MinAgg
from lake_core.merge.aggregate.listagg import ListaggAgg
from lake_core.merge.aggregate.numeric import CountAgg, ProductAgg, SumAgg
from lake_core.merge.aggregate.pick import FirstNonNullValueAgg, FirstValueAgg, LastNonNullValueAgg, LastValueAgg
from lake_core.merge.aggregate.sketches import HllSketchAgg, Rbm32Agg, Rbm64Agg, ThetaSketchAgg
from lake_core.options import CoreOptions

FUNCTIONS: dict[str, type[AggFunction]] = {
    c.name: c
    for c in (
        SumAgg,
        ProductAgg,
        CountAgg,
        MaxAgg,
        MinAgg,
        LastValueAgg,
        LastNonNullValueAgg,
        FirstValueAgg,
        FirstNonNullValueAgg,
        ListaggAgg,
        BoolAndAgg,
        BoolOrAgg,
        CollectAgg,
        MergeMapAgg,
        NestedUpdateAgg,
        Rbm32Agg,
        Rbm64Agg,
        HllSketchAgg,
        ThetaSketchAgg,
    )
}
ALIASES = {"first_not_null_value": "first_non_null_value"}


def create_function(
    column: str, dtype: pa.DataType, name: str, options: CoreOptions, type_sql: str | None = None
) -> AggFunction:
    """The aggregate for ``column``; raises naming the column and the function when the function
    is unknown or does not accept the column's type (checked at table creation)."""
    key = ALIASES.get(name.strip().lower(), name.strip().lower())
    cls = FUNCTIONS.get(key)
    if cls is None:
        raise InvalidOptionError(
            f"column '{column}': unknown aggregate function {name!r} (option "
            f"'fields.{column}.aggregate-function' or 'fields.default-aggregate-function'); supported: "
            + ", ".join(sorted(FUNCTIONS))
        )
    if not cls.accepts(dtype):
        raise SchemaError(
            f"column '{column}' of type {type_sql or dtype} cannot use aggregate function '{key}': "
            f"'{key}' accepts {cls.accepted_types}"
        )
    return cls(column, dtype, options)


def ignore_retract(options: CoreOptions, column: str) -> bool:
    return options.ignore_retract(column)
