"""Fixtures for the Spark job tests: one local Spark session for the whole test run."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark():
    """The session every Spark test shares (start-up costs 6–15 s; two cores, so one JVM).

    jobs.spark.spark_session is getOrCreate: tests/orchestration's fixture gets this same session.
    """
    from jobs.spark import spark_session

    session = spark_session(master="local[2]", app_name="lake-tests", driver_memory="2g", shuffle_partitions=2)
    yield session
    session.stop()
