"""Build the Spark session every job runs in.

Spark is only a parallel task runner for lake_core code: its JVM never opens a table path,
so no Hadoop S3 connector is configured or needed.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from pyspark.sql import SparkSession

from jobs.datasource import register
from jobs.spark_target import DEFAULT_MASTER, SparkConfigError, SparkTarget

# The directory holding lake_core/ and jobs/: Python workers must import both.
_PROJECT_ROOT = str(Path(__file__).resolve().parents[1])


_COMMON = {
    "spark.ui.enabled": "false",  # no extra server/port per run
    "spark.ui.showConsoleProgress": "false",  # progress bars garble logs and demo output
    "spark.sql.session.timeZone": "UTC",  # timestamps round-trip unchanged
    # Arrow batches in both directions (createDataFrame from Arrow, applyInArrow).
    "spark.sql.execution.arrow.pyspark.enabled": "true",
}


def prepare_environment() -> None:
    """Must run before the first local session in a process: the JVM and its Python workers inherit it.

    PYSPARK_PYTHON pins workers to this interpreter (same packages as the driver);
    SPARK_LOCAL_IP keeps Spark on loopback (the only network here); PYTHONPATH lets workers import
    lake_core/jobs even when the project is not pip-installed (e.g. running from a checkout).
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    if _PROJECT_ROOT not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([_PROJECT_ROOT, *[p for p in paths if p]])


def spark_session(
    *,
    remote: str | None = None,
    master: str | None = None,
    app_name: str = "lake",
    driver_memory: str = "2g",
    shuffle_partitions: int = 2,
    conf: Mapping[str, str] | None = None,
    log_level: str = "ERROR",
) -> SparkSession:
    """Get or create the session, with the `paimon` data source registered, for any of the three
    ways to reach Spark (:mod:`jobs.spark_target`): ``remote`` (``sc://host:port``, Spark Connect:
    attach only), ``master`` (any ``spark.master``), or neither (the embedded ``local[2]``).

    ``getOrCreate`` returns an already-running session unchanged (driver memory can only be set
    before the JVM starts), which is what lets one test session or one Dagster step reuse it; a
    running session of another master is refused rather than silently used.
    """
    target = SparkTarget(remote=remote, master=master)
    if target.remote is not None:
        return _connect_session(target.remote, app_name, shuffle_partitions, conf)
    effective = target.effective_master or DEFAULT_MASTER
    running = SparkSession._instantiatedSession
    if running is not None and running.sparkContext.master != effective:
        raise SparkConfigError(
            f"a Spark session with master {running.sparkContext.master} already runs in this process; "
            f"cannot start one with master {effective} (one SparkContext per process)"
        )
    builder = SparkSession.builder.master(effective).appName(app_name).config("spark.driver.memory", driver_memory)
    if target.local_executors:
        # Executors are threads of this JVM (or its children): loopback and this interpreter are
        # right. On a cluster they would not be: the driver must be reachable and the executors'
        # Python is theirs (spark.pyspark.python in `conf`).
        prepare_environment()
        builder = builder.config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
    elif (conf or {}).get("spark.pyspark.python"):
        # The executors' interpreter: pyspark takes it from $PYSPARK_PYTHON when its context starts
        # (Spark itself maps the setting to the variable only under spark-submit).
        os.environ["PYSPARK_PYTHON"] = (conf or {})["spark.pyspark.python"]
    for key, value in {**_COMMON, "spark.sql.shuffle.partitions": str(shuffle_partitions), **(conf or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(log_level)
    register(spark)
    return spark


def session_running(*, remote: bool) -> bool:
    """Whether this process already holds a session of that kind (one that ``spark_session`` would return)."""
    if remote:
        from pyspark.sql.connect.session import SparkSession as ConnectSession  # noqa: PLC0415 - the Connect client's gRPC modules only when Connect is used

        return ConnectSession._get_default_session() is not None
    # _instantiatedSession is the process-wide session (getActiveSession is per thread).
    return SparkSession._instantiatedSession is not None or SparkSession.getActiveSession() is not None


def _connect_session(
    remote: str, app_name: str, shuffle_partitions: int, conf: Mapping[str, str] | None
) -> SparkSession:
    """Attach to a Spark Connect server: no JVM here. Only session (``spark.sql.*``) settings apply;
    the server's own were fixed when it started, and the log level is the server's (Connect has no
    ``sparkContext.setLogLevel``)."""
    builder = SparkSession.builder.remote(remote).appName(app_name)
    settings = {k: v for k, v in _COMMON.items() if k.startswith("spark.sql.")}
    for key, value in {**settings, "spark.sql.shuffle.partitions": str(shuffle_partitions), **(conf or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    register(spark)
    return spark
