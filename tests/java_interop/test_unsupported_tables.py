"""Tables Java writes with features lake_core does not implement are refused when opened, for
reading and writing alike: never rows that may be wrong."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pyarrow as pa
import pytest

from lake_core import Catalog
from lake_core.errors import UnsupportedOptionError

SCHEMA = pa.schema([pa.field("k", pa.int32(), nullable=False), ("v", pa.string())])


def _tree_digest(root: str) -> str:
    h = hashlib.sha256()
    for p in sorted(Path(root).rglob("*")):
        h.update(str(p.relative_to(root)).encode())
        if p.is_file():
            h.update(p.read_bytes())
    return h.hexdigest()


@pytest.mark.parametrize(
    "options, named",
    [
        ({"file-index.bloom-filter.columns": "v"}, "file-index.bloom-filter.columns"),
        ({"some-future.option": "x"}, "some-future.option"),
    ],
)
def test_java_table_with_unsupported_option_is_refused(java_paimon, warehouse, options, named):
    path = java_paimon.create_table(warehouse, "db.t", SCHEMA, primary_keys=["k"], options={"bucket": "2", **options})
    java_paimon.write(path, pa.table({"k": list(range(251)), "v": [f"v{i}" for i in range(251)]}, schema=SCHEMA))
    # Deletes: with deletion vectors Java marks rows deleted in a side file instead of merging.
    java_paimon.write(path, pa.table({"k": list(range(13)), "v": [None] * 13}, schema=SCHEMA), kinds=["-D"] * 13)
    java_paimon.compact(path, full=False)
    assert java_paimon.read(path).num_rows == 238  # Java's own answer
    before = _tree_digest(path)

    catalog = Catalog(warehouse)
    with pytest.raises(UnsupportedOptionError, match=r"table db\.t: .*" + named.replace(".", r"\.")):
        catalog.get_table("db.t")
    assert catalog.table_exists("db.t")  # still a table, just not opened
    assert _tree_digest(path) == before
