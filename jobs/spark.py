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
from jobs.tasks import is_connect

# The directory holding lake_core/ and jobs/: Python workers must import both.
_PROJECT_ROOT = str(Path(__file__).resolve().parents[1])


def prepare_environment() -> None:
    """Must run before the first session in a process: the JVM and its Python workers inherit it.

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
    master: str = "local[2]",
    app_name: str = "lake",
    driver_memory: str = "2g",
    shuffle_partitions: int = 2,
    conf: Mapping[str, str] | None = None,
    log_level: str = "ERROR",
) -> SparkSession:
    """Get or create the session, with the `paimon` data source registered.

    ``getOrCreate`` returns an already-running session unchanged (driver memory can only be set
    before the JVM starts), which is what lets one test session or one Dagster step reuse it.
    """
    prepare_environment()
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.driver.memory", driver_memory)
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.ui.enabled", "false")  # no extra server/port per run
        .config("spark.ui.showConsoleProgress", "false")  # progress bars garble logs and demo output
        .config("spark.sql.session.timeZone", "UTC")  # timestamps round-trip unchanged
        # Arrow batches in both directions (createDataFrame from Arrow, applyInArrow).
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
    )
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    if not is_connect(spark):  # a Connect session has no SparkContext (its server keeps its own log level)
        spark.sparkContext.setLogLevel(log_level)

    register(spark)
    return spark
