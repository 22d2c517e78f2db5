"""A warehouse on local disk or on the S3 test server, with the space around it visible.

``store`` is parametrized over ``local`` and ``s3``: the warehouse sits in ``<base>/warehouse``
(local) or ``s3://<bucket>/wh``, and ``store.tree()`` lists *everything* under the base (the
warehouse and the space next to it), so a test can assert that nothing outside was created,
changed or deleted.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from lake_core import Catalog


@dataclass
class Store:
    kind: str
    warehouse: str  # what Catalog() is given
    storage_options: dict
    outside: str  # URI of a directory next to the warehouse
    _tree: Callable[[], dict]
    _put: Callable[[str, bytes], None]

    def catalog(self) -> Catalog:
        return Catalog(self.warehouse, self.storage_options)

    def tree(self) -> dict[str, bytes]:
        """Every file (and, locally, directory) under the base, with its content (S3: its ETag)."""
        return self._tree()

    def put(self, uri: str, data: bytes) -> None:
        """Create or replace a file by URI, bypassing lake_core."""
        self._put(uri, data)


def _local_store(base: Path) -> Store:
    wh = base / "warehouse"
    wh.mkdir()

    def tree():
        out = {}
        for root, dirs, files in os.walk(base):
            for d in dirs:
                out[os.path.join(root, d) + "/"] = b"<dir>"
            for f in files:
                p = os.path.join(root, f)
                out[p] = Path(p).read_bytes()
        return out

    def put(uri, data):
        p = Path(uri[len("file://") :] if uri.startswith("file://") else uri)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)

    return Store("local", wh.as_uri(), {}, (base / "outside").as_uri(), tree, put)


def _s3_store(s3_warehouse) -> Store:
    client = s3_warehouse.server.boto3_client()
    bucket = s3_warehouse.bucket

    def tree():  # the ETag is the MD5 of the content: a changed file shows up without reading it
        out = {}
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
            for obj in page.get("Contents", []):
                out[obj["Key"]] = obj["ETag"].encode()
        return out

    def put(uri, data):
        b, _, key = uri[len("s3://") :].partition("/")
        client.put_object(Bucket=b, Key=key, Body=data)

    return Store("s3", s3_warehouse.uri, s3_warehouse.storage_options, f"s3://{bucket}/outside", tree, put)


@pytest.fixture(params=["local", pytest.param("s3", marks=pytest.mark.s3)])
def store(request, tmp_path) -> Store:
    if request.param == "local":
        return _local_store(tmp_path.resolve())
    return _s3_store(request.getfixturevalue("s3_warehouse"))


@pytest.fixture
def local_store(tmp_path) -> Store:
    return _local_store(tmp_path.resolve())
