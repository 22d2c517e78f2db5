"""tables.yaml: the shipped file loads; invalid entries fail at load naming the table and field."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import dagster as dg
import pytest
import yaml

from fixtures.tables_config import demo_orders_by_day, demo_orders_table
from jobs.spark_target import SparkConfigError
from jobs.storage import StorageCredentialsError
from lake_core import Catalog, LakeError, from_paimon_type, parse_duration_ms
from orchestration.config import TablesConfigError, duration_seconds, load_tables_config, parse_tables_config
from orchestration.definitions import DEFAULT_CONFIG, build_definitions
from orchestration.defs.resources import lake_resource, spark_resource

pytestmark = pytest.mark.dagster

REPO_ROOT = Path(__file__).resolve().parents[2]

BASE = {
    "warehouse": {"uri": "wh"},
    "tables": [
        demo_orders_table(),
        {
            "name": "shop.users",
            "schema": {"id": "BIGINT", "name": "STRING", "balance": "DECIMAL(10, 2)", "seen": "TIMESTAMP(3)"},
            "primary_keys": ["id"],
            "options": {"bucket": 1},
        },
    ],
    "downstream": [demo_orders_by_day()],
}


def _errors(mutate) -> str:
    raw = copy.deepcopy(BASE)
    mutate(raw)
    with pytest.raises(TablesConfigError) as info:
        parse_tables_config(raw, source="tables.yaml")
    return str(info.value)


def test_the_shipped_tables_yaml_loads():
    config = load_tables_config(DEFAULT_CONFIG)
    assert [t.name for t in config.tables] == ["demo.orders"]
    assert config.warehouse.uri.startswith("file://") and config.warehouse.uri.endswith("/.demo/lake")
    orders = config.table("demo.orders")
    assert orders.options == {"bucket": "2", "rowkind.field": "op"}
    assert orders.maintenance.snapshot_expiry.retain_min >= 1
    assert "op" in orders.arrow_schema().names


def test_inline_schema_and_relative_warehouse(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(BASE))
    config = load_tables_config(path)
    assert config.warehouse.uri == (tmp_path / "wh").as_uri()
    schema = config.table("shop.users").arrow_schema()
    assert str(schema.field("balance").type) == "decimal128(10, 2)"
    assert not schema.field("id").nullable and schema.field("name").nullable


# Types the first parser of tables.yaml got wrong or refused; lake_core's own parser is the oracle,
# and a table created from the config's schema must read back exactly these types.
PAIMON_TYPES = [
    "TIMESTAMP(0)",
    "TIMESTAMP(3)",
    "TIMESTAMP_LTZ(6)",
    "TIMESTAMP(9) WITH LOCAL TIME ZONE",
    "CHAR(3)",
    "VARCHAR(20)",
    "TIME",
    "ARRAY<INT>",
    "MAP<STRING, BIGINT>",
    "DECIMAL(38, 10)",
    "BINARY(4)",
    "DOUBLE PRECISION",
    "INT NOT NULL",
]


def test_inline_schema_types_are_lake_cores(tmp_path):
    raw = copy.deepcopy(BASE)
    raw["tables"][1]["schema"] = {"id": "BIGINT", **{f"c{i}": t for i, t in enumerate(PAIMON_TYPES)}}
    config = parse_tables_config(raw, base_dir=tmp_path)
    schema = config.table("shop.users").arrow_schema()
    for i, text in enumerate(PAIMON_TYPES):
        kind, nullable = from_paimon_type(text)
        assert (schema.field(f"c{i}").type, schema.field(f"c{i}").nullable) == (kind, nullable), text
    assert str(schema.field("c0").type) == "timestamp[s]"  # TIMESTAMP(0) is seconds, not ms
    catalog = Catalog((tmp_path / "wh").as_uri())
    catalog.create_database("shop")
    created = catalog.create_table("shop.users", schema=schema, primary_keys=["id"], options={"bucket": "1"})
    assert created.arrow_schema().types == schema.types


@pytest.mark.parametrize(
    "options, words",
    [
        ({"bucket": 4, "merge-engine": "partial-updat"}, "option 'merge-engine' = 'partial-updat' is invalid"),
        ({"bucket": 2, "bucket-keyy": "id"}, "unknown table option 'bucket-keyy'"),
        ({"bucket": 2, "sequence.field": "nope"}, "option 'sequence.field' names column 'nope'"),
        ({"bucket": 2, "target-file-size": "lots"}, "option 'target-file-size' = 'lots' is not a memory size"),
    ],
)
def test_options_are_validated_at_load_as_create_table_would(tmp_path, options, words):
    message = _errors(lambda r: r["tables"][1].update(options=options))
    assert "table 'shop.users': field 'options'" in message and words in message, message
    # The oracle: lake_core refuses the same definition when creating the table.
    catalog = Catalog((tmp_path / "wh").as_uri())
    catalog.create_database("shop")
    schema = parse_tables_config(BASE).table("shop.users").arrow_schema()
    with pytest.raises(LakeError, match=words.split(" = ")[0].split(" names")[0]):
        catalog.create_table("shop.users", schema=schema, primary_keys=["id"], options=options)


@pytest.mark.parametrize("text", ["1 h", "1 hour", "30 min", "1d", "90 s", "2 days", "500 ms"])
def test_paimon_durations_are_accepted_everywhere(text):
    raw = copy.deepcopy(BASE)
    raw["tables"][1]["schema"]["seen"] = "TIMESTAMP(3)"
    raw["tables"][1]["maintenance"] = {
        "snapshot_expiry": {"time_retained": text},
        "record_expiry": {"field": "seen", "retention": text},
    }
    raw["tables"][0]["maintenance"] = {"partition_expiry": {"expiration_time": text}}
    config = parse_tables_config(raw)
    assert config.table("shop.users").maintenance.snapshot_expiry.time_retained == text
    assert duration_seconds(text) == parse_duration_ms("snapshot.time-retained", text) / 1000


@pytest.mark.parametrize(
    "mutate, field, words",
    [
        (
            lambda r: r["tables"][1].update(maintenance={"cron": "every tuesday please"}),
            "maintenance.cron",
            "'every tuesday please' is not a cron schedule",
        ),
        (
            lambda r: r["tables"][1].update(
                maintenance={"record_expiry": {"field": "no_such_column", "retention": "1 d"}}
            ),
            "maintenance.record_expiry.field",
            "'no_such_column' is not a column",
        ),
        (
            lambda r: r["tables"][1].update(maintenance={"record_expiry": {"field": "name", "retention": "1 d"}}),
            "maintenance.record_expiry.field",
            "'name' is string; it must be a TIMESTAMP",
        ),
        (
            lambda r: r["tables"][1].update(maintenance={"snapshot_expiry": {"time_retained": "one hour"}}),
            "maintenance.snapshot_expiry.time_retained",
            "'one hour' is not a duration",
        ),
        (
            lambda r: r["tables"][1].update(maintenance={"partition_expiry": {"expiration_time": "7 d"}}),
            "maintenance.partition_expiry.expiration_time",
            "no partition_keys",
        ),
    ],
)
def test_maintenance_fields_are_validated(mutate, field, words):
    message = _errors(mutate)
    assert "table 'shop.users'" in message and f"field '{field}'" in message and words in message, message


def test_a_valid_cron_is_kept():
    raw = copy.deepcopy(BASE)
    raw["tables"][1]["maintenance"] = {"cron": "0 3 * * 2"}
    assert parse_tables_config(raw).table("shop.users").maintenance.cron == "0 3 * * 2"


@pytest.mark.parametrize(
    "mutate, table, field",
    [
        (
            lambda r: r["tables"][0].update(maintenance={"snapshot_expiry": {"retain_min": 0}}),
            "demo.orders",
            "maintenance.snapshot_expiry.retain_min",
        ),
        (
            lambda r: r["tables"][1].update(maintenance={"compaction": {"max_sorted_run": 3}}),
            "shop.users",
            "maintenance.compaction.max_sorted_run",
        ),
        (
            lambda r: r["tables"][1].update(maintenance={"orphan_cleanup": {"older_than": "5 min"}}),
            "shop.users",
            "maintenance.orphan_cleanup.older_than",
        ),
        (lambda r: r["tables"][1]["schema"].update(name="VARCHAR2"), "shop.users", "schema"),
        (lambda r: r["tables"][1].update(name="no_database"), "no_database", "name"),
        (lambda r: r["tables"][0].update(primary_keys="order_id"), "demo.orders", "primary_keys"),
    ],
)
def test_invalid_fields_name_the_table_and_field(mutate, table, field):
    message = _errors(mutate)
    assert f"table '{table}'" in message and f"field '{field}'" in message, message


@pytest.mark.parametrize(
    "mutate, table, words",
    [
        (lambda r: r["tables"][0].update(primary_keys=["order_id", "nope"]), "demo.orders", "primary_keys ['nope']"),
        (lambda r: r["tables"][0].update(primary_keys=["order_id"]), "demo.orders", "must include the partition keys"),
        (lambda r: r["tables"][1].update(options={"bucket": "zero"}), "shop.users", "option 'bucket' = 'zero'"),
        (lambda r: r["tables"][1].pop("schema"), "shop.users", "schema source"),
        (lambda r: r["tables"][0].update(source="no.such.module:orders"), "demo.orders", "cannot be loaded"),
    ],
)
def test_invalid_tables_name_the_table_and_problem(mutate, table, words):
    message = _errors(mutate)
    assert f"table '{table}'" in message and words in message, message


def test_references_and_warehouse_errors():
    assert "source_table 'demo.nope'" in _errors(lambda r: r["downstream"][0].update(source_table="demo.nope"))
    assert "field 'downstream.0.transform'" not in _errors(lambda r: r["downstream"][0].update(transform="x"))
    assert "downstream table 'demo.orders_by_day': field 'transform'" in _errors(
        lambda r: r["downstream"][0].update(transform="x")
    )
    assert "repeated: ['demo.orders']" in _errors(lambda r: r["tables"].append(copy.deepcopy(r["tables"][0])))
    assert "needs a bucket" in _errors(lambda r: r.update(warehouse={"uri": "s3://"}))
    assert "field 'warehouse'" in _errors(lambda r: r.pop("warehouse"))


def test_s3_credentials_are_environment_variable_names(monkeypatch):
    raw = copy.deepcopy(BASE)
    raw["warehouse"] = {
        "uri": "s3://bucket/wh",
        "s3": {"endpoint_url_env": "MY_S3_URL", "access_key_env": "MY_KEY", "secret_key_env": "MY_SECRET"},
    }
    config = parse_tables_config(raw)
    resource = lake_resource(config.warehouse)
    # Names only: read when a step needs storage; values never enter Dagster's config.
    assert (resource.endpoint_url_env, resource.access_key_env, resource.secret_key_env) == (
        "MY_S3_URL",
        "MY_KEY",
        "MY_SECRET",
    )
    assert resource.access_key is None and resource.secret_key is None
    build_definitions(config)  # assembling needs no credentials
    monkeypatch.setenv("MY_S3_URL", "http://127.0.0.1:9")
    monkeypatch.delenv("MY_KEY", raising=False)
    monkeypatch.setenv("MY_SECRET", "s")
    with dg.build_resources({"lake": resource}) as resources:
        # a missing credential: our error, naming the bucket, the endpoint and the variables looked at
        with pytest.raises(StorageCredentialsError) as info:
            resources.lake.storage_options()
        message = str(info.value)
        assert all(w in message for w in ("'bucket'", "http://127.0.0.1:9", "$MY_KEY", "$MY_SECRET")), message
        assert isinstance(info.value, LakeError)
        monkeypatch.setenv("MY_KEY", "k")
        opts = resources.lake.storage_options()
    assert opts["endpoint_url"] == "http://127.0.0.1:9" and (opts["key"], opts["secret"]) == ("k", "s")
    assert opts["config_kwargs"] == {"s3": {"addressing_style": "path"}}


def _spark_errors(spark: dict, uri: str = "s3://bucket/wh") -> str:
    return _errors(lambda r: r.update(warehouse={"uri": uri}, spark=spark))


def test_spark_block_selects_one_of_three_modes():
    def target(spark: dict, uri: str = "s3://bucket/wh"):
        raw = copy.deepcopy(BASE)
        raw.update(warehouse={"uri": uri}, spark=spark)
        return parse_tables_config(raw).spark.target()

    assert (target({}).mode, target({}).effective_master) == ("embedded", "local[2]")
    assert target({"master": "local[*]"}, uri="wh").mode == "embedded"  # a local warehouse is fine locally
    assert target({"master": "spark://10.0.0.5:7077"}).mode == "cluster"
    assert target({"remote": "sc://spark-connect:15002"}).mode == "connect"
    # YAML booleans in conf are Spark's lowercase strings
    raw = copy.deepcopy(BASE)
    raw["spark"] = {"conf": {"spark.authenticate": True, "spark.executor.cores": 2}}
    assert parse_tables_config(raw).spark.conf == {"spark.authenticate": "true", "spark.executor.cores": "2"}


@pytest.mark.parametrize(
    "settings, uri, words",
    [
        ({"remote": "sc://h:15002", "master": "spark://h:7077"}, "s3://b/wh", "both remote"),
        ({"remote": "http://h:15002"}, "s3://b/wh", "not a Spark Connect URL"),
        ({"remote": "sc://h"}, "s3://b/wh", "not a Spark Connect URL"),
        ({"master": "spark:/h:7077"}, "s3://b/wh", "not a Spark master URL"),
        ({"master": "locale[2]"}, "s3://b/wh", "not a Spark master URL"),
        ({"master": "spark://h:7077"}, "wh", "on a local filesystem but Spark runs elsewhere"),
        ({"remote": "sc://h:15002"}, "file:///data/wh", "shared_filesystem: true"),
        ({"shared": True}, "s3://b/wh", "field 'spark.shared'"),
    ],
)
def test_spark_block_errors_name_the_problem(settings, uri, words):
    message = _spark_errors(settings, uri)
    assert words in message and "spark" in message, message


def test_shared_filesystem_allows_a_local_warehouse_on_a_cluster():
    raw = copy.deepcopy(BASE)
    raw["spark"] = {"master": "spark://nfs-cluster:7077", "shared_filesystem": True}
    assert parse_tables_config(raw).spark.shared_filesystem


def test_environment_overrides_the_spark_block(monkeypatch):
    raw = copy.deepcopy(BASE)
    raw.update(warehouse={"uri": "s3://bucket/wh"}, spark={"master": "spark://h:7077"})
    resource = spark_resource(parse_tables_config(raw))
    assert resource.target().master == "spark://h:7077"
    monkeypatch.setenv("LAKE_SPARK_REMOTE", "sc://connect:15002")
    assert (resource.target().remote, resource.target().master) == ("sc://connect:15002", None)
    monkeypatch.setenv("LAKE_SPARK_MASTER", "local[1]")
    with pytest.raises(SparkConfigError, match="both \\$LAKE_SPARK_REMOTE and \\$LAKE_SPARK_MASTER"):
        resource.target()
    monkeypatch.delenv("LAKE_SPARK_REMOTE")
    assert resource.target().master == "local[1]"
    monkeypatch.setenv("LAKE_SPARK_MASTER", "nonsense")
    with pytest.raises(SparkConfigError, match="LAKE_SPARK_MASTER 'nonsense' is not a Spark master URL"):
        resource.target()


def test_a_local_warehouse_is_refused_at_run_time_when_the_environment_points_elsewhere(monkeypatch, tmp_path):
    raw = copy.deepcopy(BASE)
    raw["warehouse"] = {"uri": str(tmp_path)}
    resource = spark_resource(parse_tables_config(raw))
    monkeypatch.setenv("LAKE_SPARK_REMOTE", "sc://connect:15002")
    with pytest.raises(SparkConfigError, match="executors would write data files to their own disks"):
        with resource.session(warehouse=tmp_path.as_uri()):
            pass  # never reached: refused before anything starts or attaches


def test_importing_the_code_location_reads_no_file_and_no_environment(tmp_path):
    """Import is side-effect free; the config is read when Dagster loads ``defs``."""
    script = textwrap.dedent(
        """
        import os, sys
        os.environ["LAKE_TABLES_CONFIG"] = sys.argv[1]
        import orchestration.definitions as d          # must not touch the missing file
        try:
            d.defs()
        except Exception as e:
            print(type(e).__name__, e)
        """
    )
    missing = tmp_path / "missing.yaml"
    out = subprocess.run(
        [sys.executable, "-c", script, str(missing)], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert "TablesConfigError" in out.stdout and str(missing) in out.stdout


def test_a_table_without_source_is_an_external_asset_with_a_sensor(tmp_path):
    raw = copy.deepcopy(BASE)
    raw["downstream"] = []
    definitions = build_definitions(parse_tables_config(raw, base_dir=tmp_path))
    keys = {k for k in definitions.resolve_all_asset_keys() if len(k.path) == 2 and k.path[0] != "lake"}  # tables
    assert keys == {dg.AssetKey(["demo", "orders"]), dg.AssetKey(["shop", "users"])}
    users = definitions.resolve_asset_graph().get(dg.AssetKey(["shop", "users"]))
    assert not users.is_materializable  # written outside Dagster; its maintenance still applies
    assert definitions.resolve_asset_graph().get(dg.AssetKey(["shop", "users", "rescale"])).partitions_def is None
    # No downstream table: no snapshot sensor. One partitions sensor (demo.orders is partitioned) and
    # one health sensor for both tables.
    assert {s.name for s in definitions.sensors} == {"lake__partitions_sensor", "lake__health_sensor"}


def test_the_demo_cli_reads_LAKE_TABLES_CONFIG_and_prints_a_config_error_alone(tmp_path):
    raw = copy.deepcopy(BASE)
    raw["tables"][1]["options"] = {"bucket": 4, "merge-engine": "partial-updat"}
    path = tmp_path / "tables.yaml"
    path.write_text(yaml.safe_dump(raw))
    env = {**os.environ, "LAKE_TABLES_CONFIG": str(path), "PYTHONPATH": str(REPO_ROOT)}
    out = subprocess.run(
        [sys.executable, "-m", "orchestration.demo"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 2, out.stdout + out.stderr
    assert "Traceback" not in out.stderr and not out.stdout
    assert out.stderr.splitlines() == [
        "demo: invalid tables config:",
        f"  {path}: table 'shop.users': field 'options': option 'merge-engine' = 'partial-updat' is invalid; "
        "choose one of deduplicate, partial-update, aggregation, first-row",
    ]


def test_the_s3_example_is_the_shipped_config_on_s3(monkeypatch):
    """docs/getting-started/s3.md: examples/s3-tables.yaml is tables.yaml but for the warehouse, and
    the `lake` command finds the same warehouse through $LAKE_TABLES_CONFIG."""
    from lake_cli.main import build_parser
    from lake_cli.settings import resolve_location

    example = REPO_ROOT / "examples" / "s3-tables.yaml"
    shipped, on_s3 = (yaml.safe_load(p.read_text()) for p in (DEFAULT_CONFIG, example))
    assert on_s3["warehouse"]["uri"] == "s3://lake/warehouse" and on_s3["warehouse"]["s3"]["path_style"] is True
    assert {k: v for k, v in on_s3.items() if k != "warehouse"} == {
        k: v for k, v in shipped.items() if k != "warehouse"
    }
    config = load_tables_config(example)
    assert [t.name for t in config.tables] == [t.name for t in load_tables_config(DEFAULT_CONFIG).tables]
    environ = {
        "LAKE_TABLES_CONFIG": str(example),
        "LAKE_S3_ENDPOINT": "http://127.0.0.1:9000",
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "testtest",
    }
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    args = build_parser().parse_args(["tables"])
    warehouse, options = resolve_location(args, environ)
    assert warehouse == "s3://lake/warehouse"
    assert "http://127.0.0.1:9000" in str(options)
