"""Typed Dagster resources: the lake catalog and the Spark settings, built from ``tables.yaml``.

Secrets are environment variable *names*, read when a step needs storage (nothing here reads the
environment at import time), so a storage error can say where the credentials were looked for.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import dagster as dg
from pydantic import Field

from jobs.spark_target import SparkTarget, check_warehouse_reachable, resolve_target
from jobs.storage import s3_options_from_env
from lake_core import Catalog
from orchestration.config import TablesConfig, WarehouseConfig
from orchestration.defs.storage import check_storage_access

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class LakeCatalogResource(dg.ConfigurableResource):
    """Where the tables live: a warehouse URI plus S3/MinIO connection settings.

    Credentials are given as values (``access_key``/``secret_key``) or, as ``tables.yaml`` does, as
    the NAMES of environment variables read in the process that runs the step (the Spark driver):
    values never appear in Dagster's config or UI, and the resolved options travel with the Spark
    tasks, so executors need no credentials of their own."""

    warehouse: str = Field(description="file:///abs/path or s3://bucket/prefix")
    endpoint_url: str | None = Field(None, description="S3-compatible endpoint (MinIO); None for AWS")
    access_key: str | None = None
    secret_key: str | None = None
    region: str = "us-east-1"
    path_style: bool = Field(True, description="path-style addressing, as MinIO needs")
    # Names only (never values): read when a step needs storage, and quoted by storage errors.
    endpoint_url_env: str | None = Field(None, description="environment variable holding the endpoint")
    access_key_env: str | None = Field(None, description="environment variable holding the access key")
    secret_key_env: str | None = Field(None, description="environment variable holding the secret key")

    @property
    def is_s3(self) -> bool:
        return self.warehouse.startswith(("s3://", "s3a://"))

    def storage_options(self) -> dict[str, Any]:
        """fsspec/s3fs options for lake_core's FileIO (empty for a local warehouse). Raises
        :class:`~jobs.storage.StorageCredentialsError` (naming the bucket, the endpoint and the
        variables looked at) for an S3 warehouse without a key and secret."""
        if not self.is_s3:
            return {}
        return s3_options_from_env(
            self.warehouse,
            environ=os.environ,
            endpoint_env=self.endpoint_url_env,
            key_env=self.access_key_env,
            secret_env=self.secret_key_env,
            endpoint_url=self.endpoint_url,
            key=self.access_key,
            secret=self.secret_key,
            region=self.region,
            path_style=self.path_style,
        )

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
    """How jobs reach Spark: embedded (``local*``, the default), a cluster ``master``, or a Spark
    Connect ``remote``; ``$LAKE_SPARK_REMOTE`` / ``$LAKE_SPARK_MASTER`` override them when a step
    runs. Lazy: nothing starts or attaches until a step enters :meth:`session`, so a run that finds
    nothing to do never touches Spark."""

    remote: str | None = Field(None, description="sc://host:port of a Spark Connect server")
    master: str | None = Field(None, description="spark.master; default local[2] (embedded)")
    app_name: str = "lake"
    driver_memory: str = "2g"
    shuffle_partitions: int = Field(2, ge=1)
    conf: dict[str, str] = Field(default_factory=dict, description="extra spark.* settings")
    shared_filesystem: bool = Field(False, description="a local warehouse path is shared with every executor")

    def target(self) -> SparkTarget:
        """Where this step's Spark runs: the environment's override, else the config."""
        return resolve_target(remote=self.remote, master=self.master, environ=os.environ)

    @contextmanager
    def session(self, *, warehouse: str) -> Iterator[SparkSession]:
        """A session for one step on ``warehouse`` (refused, before anything starts, when a local
        warehouse would be written by executors elsewhere). If this call started it, it is stopped
        afterwards so a Dagster run process does not leave a JVM (or a server-side Connect session)
        behind; a session that already existed (a test's, a notebook's, the demo's) is reused and
        left running."""
        from jobs.spark import session_running, spark_session  # noqa: PLC0415 - pyspark stays out of loading the definitions (Dagster's webserver and daemon)

        target = self.target()
        check_warehouse_reachable(warehouse, target, shared_filesystem=self.shared_filesystem)
        existed = session_running(remote=target.remote is not None)
        spark = spark_session(
            remote=target.remote,
            master=target.master,
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
    """The catalog resource; S3 credentials stay environment variable names until a step needs storage."""
    s3 = warehouse.s3
    if s3 is None:
        return LakeCatalogResource(warehouse=warehouse.uri)
    return LakeCatalogResource(
        warehouse=warehouse.uri,
        region=s3.region,
        path_style=s3.path_style,
        endpoint_url_env=s3.endpoint_url_env,
        access_key_env=s3.access_key_env,
        secret_key_env=s3.secret_key_env,
    )


def spark_resource(config: TablesConfig) -> SparkResource:
    spark = config.spark
    return SparkResource(
        remote=spark.remote,
        master=spark.master,
        driver_memory=spark.driver_memory,
        shuffle_partitions=spark.shuffle_partitions,
        conf=dict(spark.conf),
        shared_filesystem=spark.shared_filesystem,
    )


def resource_definitions(config: TablesConfig) -> dg.Definitions:
    """The resources every asset, check and sensor of the code location uses: ``lake`` and ``spark``."""
    return dg.Definitions(resources={"lake": lake_resource(config.warehouse), "spark": spark_resource(config)})
