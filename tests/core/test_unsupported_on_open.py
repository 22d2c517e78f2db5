"""A table whose stored options lake_core does not implement is refused when opened, not only when
created: another engine may have written it (or altered it) with such an option."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from lake_core import Catalog
from lake_core.errors import UnsupportedOptionError

SCHEMA = pa.schema([pa.field("k", pa.int32(), nullable=False), ("v", pa.string())])


def _table_with_stored_options(warehouse_path: Path, options: dict) -> Catalog:
    catalog = Catalog(str(warehouse_path))
    catalog.create_database("db")
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    table.write_arrow(pa.table({"k": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    schema_file = warehouse_path / "db.db" / "t" / "schema" / "schema-0"
    stored = json.loads(schema_file.read_text())
    stored["options"].update(options)
    schema_file.write_text(json.dumps(stored))  # as another engine's writer would have
    return catalog


@pytest.mark.parametrize(
    "options, named",
    [
        ({"deletion-vectors.enabled": "true", "merge-engine": "first-row"}, "deletion-vectors.enabled"),
        ({"bucket": "-2"}, "bucket"),
        ({"lookup.cache-max-memory-size": "1 gb"}, "lookup.cache-max-memory-size"),
        ({"an-option-from-the-future": "x"}, "an-option-from-the-future"),
    ],
)
def test_open_refuses_unsupported_stored_options(warehouse_path, options, named):
    catalog = _table_with_stored_options(warehouse_path, options)
    with pytest.raises(UnsupportedOptionError, match=rf"table db\.t: .*'{named}'.*refuses to read or write it"):
        catalog.get_table("db.t")


def test_open_accepts_supported_stored_options(warehouse_path):
    catalog = _table_with_stored_options(
        warehouse_path, {"deletion-vectors.enabled": "false", "snapshot.num-retained.min": "3"}
    )
    assert catalog.get_table("db.t").to_arrow().num_rows == 2
