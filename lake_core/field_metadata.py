"""Paimon field metadata carried on arrow fields: the field id (which pyarrow also writes as the
Parquet field id) and the field description (Java ``DataField.id`` / ``description``)."""

from __future__ import annotations

import pyarrow as pa

__all__ = ["FIELD_ID_KEY", "DESCRIPTION_KEY", "field_id_of"]

#: Arrow field-metadata key holding a Paimon field id (pyarrow also writes it as the Parquet
#: field id).
FIELD_ID_KEY = b"PARQUET:field_id"
DESCRIPTION_KEY = b"description"


def field_id_of(f: pa.Field) -> int | None:
    """The Paimon/Parquet field id stored in an arrow field's metadata, or None."""
    md = f.metadata
    if md and FIELD_ID_KEY in md:
        try:
            return int(md[FIELD_ID_KEY])
        except ValueError:
            return None
    return None
