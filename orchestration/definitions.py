"""The Dagster code location: assembles assets, jobs, sensors and resources from tables.yaml.

Nothing is built at import time: ``defs`` is loaded lazily by Dagster (``@dg.definitions``), so
importing this module reads no file and no environment variable. The config file is
``$LAKE_TABLES_CONFIG`` if set when the definitions load, else ``tables.yaml`` in the checkout.
"""
from __future__ import annotations

import os
from pathlib import Path

from typing import TYPE_CHECKING

import dagster as dg

from orchestration.assets import build_downstream_asset, build_table_asset, table_asset_key
from orchestration.config import TablesConfig, WarehouseConfig, load_tables_config
from orchestration.resources import LakeCatalogResource, SparkResource
from orchestration.sensors import build_snapshot_sensor

if TYPE_CHECKING:
    from dagster._core.definitions.unresolved_asset_job_definition import UnresolvedAssetJobDefinition

CONFIG_ENV = "LAKE_TABLES_CONFIG"
DEFAULT_CONFIG = Path(__file__).resolve().parents[1] / "tables.yaml"


def config_path() -> Path:
    return Path(os.environ.get(CONFIG_ENV) or DEFAULT_CONFIG)


def lake_resource(warehouse: WarehouseConfig) -> LakeCatalogResource:
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
    )


def build_definitions(config: TablesConfig) -> dg.Definitions:
    assets: list[dg.AssetsDefinition | dg.AssetSpec] = [build_table_asset(t) for t in config.tables]
    assets += [build_downstream_asset(d) for d in config.downstream]
    jobs: list[UnresolvedAssetJobDefinition] = []
    sensors: list[dg.SensorDefinition] = []
    for table in config.tables:
        consumers = [d for d in config.downstream if d.source_table == table.name]
        if not consumers:
            continue  # nothing to trigger: a sensor needs a downstream job to request
        job = dg.define_asset_job(
            name=f"{table.name.replace('.', '__')}__downstream",
            selection=dg.AssetSelection.assets(*[table_asset_key(d.name) for d in consumers]),
            description=f"Rebuild the tables derived from {table.name} at one snapshot.",
            tags={"lake/table": table.name},
        )
        jobs.append(job)
        sensors.append(build_snapshot_sensor(table, job, consumers))
    spark = config.spark
    return dg.Definitions(
        assets=assets,
        jobs=jobs,
        sensors=sensors,
        resources={
            "lake": lake_resource(config.warehouse),
            "spark": SparkResource(
                master=spark.master,
                driver_memory=spark.driver_memory,
                shuffle_partitions=spark.shuffle_partitions,
                conf=dict(spark.conf),
            ),
        },
    )


@dg.definitions
def defs() -> dg.Definitions:
    return build_definitions(load_tables_config(config_path()))
