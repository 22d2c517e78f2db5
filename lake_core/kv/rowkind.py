"""Paimon row kinds (stored in ``_VALUE_KIND``) and the ``rowkind.field`` option."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_core.errors import InvalidDataError

INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE = 0, 1, 2, 3
SHORT_STRINGS = ("+I", "-U", "+U", "-D")


def is_retract(kinds: np.ndarray) -> np.ndarray:
    """-U and -D rows retract a previous value (Java RowKind.isRetract)."""
    return (kinds == UPDATE_BEFORE) | (kinds == DELETE)


def kinds_from_column(column: pa.ChunkedArray | pa.Array, field_name: str) -> np.ndarray:
    """Vectorized parse of a ``rowkind.field`` column holding '+I', '-U', '+U', '-D'."""
    values = pa.array(SHORT_STRINGS)
    idx = pc.index_in(column, value_set=values)
    if idx.null_count:
        bad_mask = pc.is_null(idx)
        bad = pc.filter(column, bad_mask)
        sample = bad.slice(0, 3).to_pylist()
        raise InvalidDataError(
            f"rowkind.field column '{field_name}' holds invalid row kind(s) {sample}"
            f" ({pc.sum(bad_mask).as_py()} rows);"
            " allowed values are +I, -U, +U, -D"
        )
    return idx.to_numpy(zero_copy_only=False).astype(np.int8)
