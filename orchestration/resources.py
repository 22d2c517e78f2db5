"""Typed Dagster resources: the lake catalog and the Spark settings (ARCHITECTURE D6).

Secrets arrive as ``dg.EnvVar`` values, resolved by Dagster when a run or sensor starts; nothing
here reads the environment at import time.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator

import dagster as dg
from pydantic import Field

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from lake_core import Catalog


class LakeCatalogResource(dg.ConfigurableResource):
    """Where the tables live: a warehouse URI plus S3/MinIO connection settings."""

    warehouse: str = Field(description="file:///abs/path or s3://bucket/prefix")
    endpoint_url: str | None = Field(None, description="S3-compatible endpoint (MinIO); None for AWS")
    access_key: str | None = None
    secret_key: str | None = None
    region: str = "us-east-1"
    path_style: bool = Field(True, description="path-style addressing, as MinIO needs")

    def storage_options(self) -> dict[str, Any]:
        """fsspec/s3fs options for lake_core's FileIO (empty for a local warehouse)."""
        if not self.warehouse.startswith(("s3://", "s3a://")):
            return {}
        options: dict[str, Any] = {"client_kwargs": {"region_name": self.region}}
        if self.endpoint_url:
            options["endpoint_url"] = self.endpoint_url
        if self.access_key is not None:
            options["key"] = self.access_key
        if self.secret_key is not None:
            options["secret"] = self.secret_key
        if self.path_style:
            options["config_kwargs"] = {"s3": {"addressing_style": "path"}}
        return options

    def catalog(self) -> "Catalog":
        from lake_core import Catalog

        return Catalog(self.warehouse, storage_options=self.storage_options())


class SparkResource(dg.ConfigurableResource):
    """How jobs get a Spark session (local mode by default; any master URL works)."""

    master: str = "local[2]"
    app_name: str = "lake"
    driver_memory: str = "2g"
    shuffle_partitions: int = Field(2, ge=1)
    conf: dict[str, str] = Field(default_factory=dict, description="extra spark.* settings")

    @contextmanager
    def session(self) -> Iterator["SparkSession"]:
        """A session for one step. If this call started it, it is stopped afterwards so a Dagster
        run process does not leave a JVM behind; a session that already existed (a test's, or
        a notebook's) is reused and left running."""
        from pyspark.sql import SparkSession

        from jobs.spark import spark_session

        # _instantiatedSession is the process-wide session (getActiveSession is per thread).
        existed = SparkSession._instantiatedSession is not None or SparkSession.getActiveSession() is not None
        spark = spark_session(
            master=self.master,
            app_name=self.app_name,
            driver_memory=self.driver_memory,
            shuffle_partitions=self.shuffle_partitions,
            conf=self.conf,
        )
        try:
            yield spark
        finally:
            if not existed:
                spark.stop()
