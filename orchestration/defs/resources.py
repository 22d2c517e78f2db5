"""Typed Dagster resources: the lake catalog and the Spark settings, built from ``tables.yaml``.

Secrets arrive as ``dg.EnvVar`` values, resolved by Dagster when a run or sensor starts; nothing
here reads the environment at import time. The resource also keeps the *names* of those
environment variables, so a storage error can say where the credentials came from.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import dagster as dg
from pydantic import Field

from lake_core import Catalog
from orchestration.config import TablesConfig, WarehouseConfig
from orchestration.defs.storage import check_storage_access

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class LakeCatalogResource(dg.ConfigurableResource):
    """Where the tables live: a warehouse URI plus S3/MinIO connection settings."""

    warehouse: str = Field(description="file:///abs/path or s3://bucket/prefix")
    endpoint_url: str | None = Field(None, description="S3-compatible endpoint (MinIO); None for AWS")
    access_key: str | None = None
    secret_key: str | None = None
    region: str = "us-east-1"
    path_style: bool = Field(True, description="path-style addressing, as MinIO needs")
    # Names only (never values): quoted by storage errors.
    endpoint_url_env: str | None = Field(None, description="environment variable the endpoint came from")
    access_key_env: str | None = Field(None, description="environment variable the access key came from")
    secret_key_env: str | None = Field(None, description="environment variable the secret key came from")

    @property
    def is_s3(self) -> bool:
        return self.warehouse.startswith(("s3://", "s3a://"))

    def storage_options(self) -> dict[str, Any]:
        """fsspec/s3fs options for lake_core's FileIO (empty for a local warehouse)."""
        if not self.is_s3:
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

    def catalog(self) -> Catalog:
        return Catalog(self.warehouse, storage_options=self.storage_options())

    def check_access(self) -> None:
        """Fail fast, before Spark starts, with a :class:`StorageAccessError` naming the bucket,
        the endpoint and the environment variables behind the credentials."""
        check_storage_access(
            self.warehouse,
            self.storage_options(),
            env={
                "endpoint": self.endpoint_url_env,
                "access key": self.access_key_env,
                "secret key": self.secret_key_env,
            },
        )


class SparkResource(dg.ConfigurableResource):
    """How jobs get a Spark session (local mode by default; any master URL works)."""

    master: str = "local[2]"
    app_name: str = "lake"
    driver_memory: str = "2g"
    shuffle_partitions: int = Field(2, ge=1)
    conf: dict[str, str] = Field(default_factory=dict, description="extra spark.* settings")

    @contextmanager
    def session(self) -> Iterator[SparkSession]:
        """A session for one step. If this call started it, it is stopped afterwards so a Dagster
        run process does not leave a JVM behind; a session that already existed (a test's, or
        a notebook's) is reused and left running."""
        from pyspark.sql import SparkSession  # noqa: PLC0415 - pyspark stays out of loading the definitions (Dagster's webserver and daemon)

        from jobs.spark import spark_session  # noqa: PLC0415 - pyspark stays out of loading the definitions (Dagster's webserver and daemon)

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


def lake_resource(warehouse: WarehouseConfig) -> LakeCatalogResource:
    """The catalog resource; S3 credentials stay ``EnvVar`` references until a run starts."""
    s3 = warehouse.s3
    if s3 is None:
        return LakeCatalogResource(warehouse=warehouse.uri)
    return LakeCatalogResource(
        warehouse=warehouse.uri,
        endpoint_url=dg.EnvVar(s3.endpoint_url_env) if s3.endpoint_url_env else None,
        access_key=dg.EnvVar(s3.access_key_env),
        secret_key=dg.EnvVar(s3.secret_key_env),
        region=s3.region,
        path_style=s3.path_style,
        endpoint_url_env=s3.endpoint_url_env,
        access_key_env=s3.access_key_env,
        secret_key_env=s3.secret_key_env,
    )


def spark_resource(config: TablesConfig) -> SparkResource:
    spark = config.spark
    return SparkResource(
        master=spark.master,
        driver_memory=spark.driver_memory,
        shuffle_partitions=spark.shuffle_partitions,
        conf=dict(spark.conf),
    )


def resource_definitions(config: TablesConfig) -> dg.Definitions:
    """The resources every asset, check and sensor of the code location uses: ``lake`` and ``spark``."""
    return dg.Definitions(resources={"lake": lake_resource(config.warehouse), "spark": spark_resource(config)})
