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
``storage`` (function, parametrized)
    ``(uri, storage_options)``: the test runs on a local warehouse and on ``s3_warehouse``
    (that run carries the ``s3`` marker).
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
    ``expire_snapshots``, ``files``, ``snapshots``, ``schema``, ``system_table``). Prepares ``.java-paimon/`` on
    first use if ``setup.sh`` has not. Every test using it gets the ``java`` marker.
``spark`` (session)
    The one local Spark session every Spark test of a worker process shares (start-up costs 6–15 s;
    one JVM per process: one by default, two with ``-n 2``).
``spark_cluster`` (session)
    :class:`fixtures.spark_standalone.StandaloneCluster`: a Spark standalone master and two
    one-core workers on loopback, from the pyspark package's ``sbin`` (``.master_url``,
    ``.status()``, ``.logs()``); about 20 s to start, so few tests use it.
``spark_connect_server`` (session)
    :class:`jobs.connect_server.LocalConnectServer`: the pyspark wheel's Spark Connect server on
    ``127.0.0.1`` and a free port (``--master local[2]``, workers on this interpreter with the
    checkout importable); ``.url`` is ``sc://127.0.0.1:<port>``.
``spark_connect`` (session)
    A Spark Connect session to that server (no SparkContext, no RDDs: what the jobs must run on).

Markers: a test using ``spark`` or ``spark_cluster`` must be marked ``spark``, ``spark_connect`` (or its server) both
``spark`` and ``spark_connect``, ``s3_server``/``s3_warehouse`` ``s3``,
``pypaimon`` ``interop``, ``dagster_dev`` ``browser``, and a test module importing Dagster
``dagster``; collection fails naming any test that is not (so ``-m "not spark"`` and the like
select exactly what they say). ``--strict-markers`` rejects unknown markers.

Autouse: ``fresh_manifest_cache`` empties lake_core's process-wide manifest cache before each test,
so a test sees only what it read itself.

Hypothesis profiles: ``dev`` (default) and ``ci`` (selected when the ``CI`` environment variable
is set: derandomized, so a CI failure reproduces, and no deadline on a loaded machine). Tests'
own ``@settings`` (e.g. ``max_examples``) still apply on top.
"""

from __future__ import annotations

import os
import sys
import types
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

_TESTS_DIR = str(Path(__file__).resolve().parent)
if sys.path[:1] != [_TESTS_DIR]:
    sys.path.insert(0, _TESTS_DIR)

from fixtures.java_paimon import JavaPaimon  # noqa: E402
from fixtures.pypaimon_env import PypaimonDriver, ensure_pypaimon_python  # noqa: E402
from fixtures.s3 import S3Server, S3Warehouse, new_s3_warehouse, start_s3_server  # noqa: E402
from fixtures.spark_standalone import spark_cluster  # noqa: E402, F401 - a session fixture, defined with its cluster
from jobs.connect_server import LocalConnectServer, start_local_connect_server  # noqa: E402

settings.register_profile("dev", deadline=None)
settings.register_profile(
    "ci", deadline=None, derandomize=True, print_blob=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

# fixture → the markers every test using it must carry
_FIXTURE_MARKERS = {
    "spark": ("spark",),
    "spark_cluster": ("spark",),
    "spark_connect_server": ("spark", "spark_connect"),
    "spark_connect": ("spark", "spark_connect"),
    "s3_server": ("s3",),
    "s3_warehouse": ("s3",),
    "pypaimon": ("interop",),
    "dagster_dev": ("browser",),
}


def _imports_dagster(module: types.ModuleType | None) -> bool:
    return any(
        isinstance(v, types.ModuleType) and v.__name__.split(".")[0] == "dagster"
        for v in vars(module or types.ModuleType("none")).values()
    )


def pytest_collection_modifyitems(config, items):
    unmarked = []
    for item in items:
        if "java_paimon" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.java)
        marks = {m.name for m in item.iter_markers()}
        fixtures = getattr(item, "fixturenames", ())
        need = {mark for fixture, needed in _FIXTURE_MARKERS.items() if fixture in fixtures for mark in needed}
        if _imports_dagster(getattr(item, "module", None)):
            need.add("dagster")
        if need - marks:
            unmarked.append(f"{item.nodeid}: needs @pytest.mark.{', @pytest.mark.'.join(sorted(need - marks))}")
    if unmarked:
        raise pytest.UsageError("tests without the markers of what they need:\n  " + "\n  ".join(unmarked))
    _heaviest_files_first(items)


def _heaviest_files_first(items) -> None:
    """Files with slow Spark runs under Dagster (minutes each) run first, then those that drive the
    browser, then other Spark tests under Dagster, then files with Spark, slow or reliability
    tests, then the rest, each group in its collected order. With ``-n 2 --dist loadfile
    --no-loadscope-reorder`` the two worker processes take whole files in this order, so the long
    ones do not run alone at the end."""

    def rank(marks: set[str]) -> int:
        if {"spark", "dagster", "slow"} <= marks:
            return 0
        if "browser" in marks:
            return 1
        if {"spark", "dagster"} <= marks:
            return 2
        return 3 if marks & {"spark", "slow", "reliability"} else 4

    by_file: dict[str, int] = {}
    for item in items:
        marks = {m.name for m in item.iter_markers()}
        path = item.nodeid.split("::", 1)[0]
        by_file[path] = min(by_file.get(path, 4), rank(marks))
    items.sort(key=lambda item: by_file[item.nodeid.split("::", 1)[0]])  # stable: keeps the order within


@pytest.fixture(autouse=True)
def fresh_manifest_cache() -> None:
    from lake_core import clear_manifest_cache  # noqa: PLC0415 - after sys.path is set up above

    clear_manifest_cache()


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


@pytest.fixture(params=["local", pytest.param("s3", marks=pytest.mark.s3)])
def storage(request, warehouse) -> tuple[str, dict]:
    """``(warehouse uri, storage options)``: a test runs twice, on local disk and on the S3 test
    server (the second carries the ``s3`` marker)."""
    if request.param == "local":
        return warehouse, {}
    s3 = request.getfixturevalue("s3_warehouse")
    return s3.uri, s3.storage_options


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


@pytest.fixture(scope="session")
def spark():
    """The session every Spark test shares. ``jobs.spark.spark_session`` is getOrCreate, so the
    Dagster resources running inside a test reuse it rather than starting a second JVM."""
    from jobs.spark import spark_session

    session = spark_session(master="local[2]", app_name="lake-tests", driver_memory="2g", shuffle_partitions=2)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def spark_connect_server(tmp_path_factory):
    server = start_local_connect_server(workdir=tmp_path_factory.mktemp("spark-connect"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def spark_connect(spark_connect_server: LocalConnectServer):
    """A Connect session. Built with the Connect builder itself: ``SparkSession.builder.remote``
    would flag the whole process as Connect (``SPARK_CONNECT_MODE_ENABLED``), and the classic
    ``spark`` session's ``pyspark.sql.functions`` would then build Connect columns."""
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    from jobs.datasource import register

    session = ConnectSession.builder.remote(spark_connect_server.url).create()
    register(session)
    yield session
    session.stop()
