"""Shared fixtures for the whole test suite.

Fixtures
--------
``warehouse`` (function)
    ``str``: a ``file://`` URI of a fresh, empty local warehouse directory (absolute path).
``warehouse_path`` (function)
    ``pathlib.Path`` of that same directory.
``s3_server`` (session)
    :class:`fixtures.s3.S3Server`: moto's S3 HTTP server on ``127.0.0.1`` and a free port
    (``.endpoint_url``, ``.create_bucket()``, ``.boto3_client()``, ``.storage_options()``).
``s3_warehouse`` (function)
    :class:`fixtures.s3.S3Warehouse` in a fresh random bucket: ``.uri`` (``s3://bucket/wh``),
    ``.storage_options`` (for s3fs/fsspec), ``.pypaimon_options``, ``.filesystem()``.
``pypaimon`` (session)
    :class:`fixtures.pypaimon_env.PypaimonDriver`: ``create_table``, ``write``, ``read``,
    ``snapshot_ids``, ``latest_snapshot_id``, ``run``. Creates ``.venv-pypaimon`` on first
    use if ``setup.sh`` has not (a minute or so).
``java_paimon`` (session)
    :class:`fixtures.java_paimon.JavaPaimon`: Java Paimon 1.0 in one JVM for the session
    (``create_table``, ``write``, ``read``, ``changes_between``, ``compact``,
    ``expire_snapshots``, ``files``, ``snapshots``, ``schema``). Prepares ``.java-paimon/`` on
    first use if ``setup.sh`` has not. Every test using it gets the ``java`` marker.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

_TESTS_DIR = str(Path(__file__).resolve().parent)
if sys.path[:1] != [_TESTS_DIR]:
    sys.path.insert(0, _TESTS_DIR)

from fixtures.java_paimon import JavaPaimon  # noqa: E402
from fixtures.pypaimon_env import PypaimonDriver, ensure_pypaimon_python  # noqa: E402
from fixtures.s3 import S3Server, S3Warehouse, new_s3_warehouse, start_s3_server  # noqa: E402


@pytest.fixture
def warehouse_path(tmp_path: Path) -> Path:
    path = (tmp_path / "warehouse").resolve()
    path.mkdir()
    return path


@pytest.fixture
def warehouse(warehouse_path: Path) -> str:
    """``file:///abs/path/to/warehouse`` of a fresh, empty directory."""
    return warehouse_path.as_uri()


@pytest.fixture(scope="session")
def s3_server():
    server: S3Server = start_s3_server()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def s3_warehouse(s3_server: S3Server) -> S3Warehouse:
    """A warehouse at ``s3://<fresh random bucket>/wh`` on the session's moto server."""
    return new_s3_warehouse(s3_server)


@pytest.fixture(scope="session")
def pypaimon(tmp_path_factory):
    python = ensure_pypaimon_python()
    driver = PypaimonDriver(python, workdir=tmp_path_factory.mktemp("pypaimon-driver"))
    try:
        driver.ping()  # start the worker now so a broken venv fails here, clearly
        yield driver
    finally:
        driver.close()


@pytest.fixture(scope="session")
def java_paimon(tmp_path_factory):
    driver = JavaPaimon(workdir=tmp_path_factory.mktemp("java-paimon-driver"))
    try:
        driver.ping()  # start the JVM now so a broken set-up fails here, clearly
        yield driver
    finally:
        driver.close()


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "java_paimon" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.java)
