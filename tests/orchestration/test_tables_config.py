"""tables.yaml: the shipped file loads; invalid entries fail at load naming the table and field."""
from __future__ import annotations

import copy
import subprocess
import sys
import textwrap
from pathlib import Path

import dagster as dg
import pytest
import yaml

from fixtures.tables_config import demo_orders_by_day, demo_orders_table
from orchestration.config import TablesConfigError, load_tables_config, parse_tables_config, parse_type
from orchestration.definitions import DEFAULT_CONFIG, build_definitions, lake_resource

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
    assert str(parse_type("TIMESTAMP_LTZ(6)")) == "timestamp[us, tz=UTC]"


@pytest.mark.parametrize(
    "mutate, table, field",
    [
        (lambda r: r["tables"][0].update(maintenance={"snapshot_expiry": {"retain_min": 0}}),
         "demo.orders", "maintenance.snapshot_expiry.retain_min"),
        (lambda r: r["tables"][1].update(maintenance={"compaction": {"max_sorted_run": 3}}),
         "shop.users", "maintenance.compaction.max_sorted_run"),
        (lambda r: r["tables"][1].update(maintenance={"orphan_cleanup": {"older_than": "5 min"}}),
         "shop.users", "maintenance.orphan_cleanup.older_than"),
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
        (lambda r: r["tables"][1].update(options={"bucket": "zero"}), "shop.users", "options.bucket"),
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
        lambda r: r["downstream"][0].update(transform="x"))
    assert "repeated: ['demo.orders']" in _errors(lambda r: r["tables"].append(copy.deepcopy(r["tables"][0])))
    assert "needs a bucket" in _errors(lambda r: r.update(warehouse={"uri": "s3://"}))
    assert "field 'warehouse'" in _errors(lambda r: r.pop("warehouse"))


def test_s3_credentials_are_environment_variable_names(monkeypatch):
    raw = copy.deepcopy(BASE)
    raw["warehouse"] = {"uri": "s3://bucket/wh", "s3": {"endpoint_url_env": "MY_S3_URL",
                                                         "access_key_env": "MY_KEY", "secret_key_env": "MY_SECRET"}}
    config = parse_tables_config(raw)
    resource = lake_resource(config.warehouse)
    # Kept as EnvVar references: resolved only when a run or sensor starts.
    assert resource.endpoint_url == dg.EnvVar("MY_S3_URL") and resource.secret_key == dg.EnvVar("MY_SECRET")
    monkeypatch.setenv("MY_S3_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("MY_KEY", "k")
    monkeypatch.setenv("MY_SECRET", "s")
    with dg.build_resources({"lake": resource}) as resources:
        opts = resources.lake.storage_options()
    assert opts["endpoint_url"] == "http://127.0.0.1:9" and (opts["key"], opts["secret"]) == ("k", "s")
    assert opts["config_kwargs"] == {"s3": {"addressing_style": "path"}}
    build_definitions(config)  # assembling needs no credentials


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
    out = subprocess.run([sys.executable, "-c", script, str(missing)], cwd=REPO_ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "TablesConfigError" in out.stdout and str(missing) in out.stdout


def test_a_table_without_source_is_an_external_asset_with_a_sensor(tmp_path):
    raw = copy.deepcopy(BASE)
    raw["downstream"] = []
    definitions = build_definitions(parse_tables_config(raw, base_dir=tmp_path))
    keys = set(definitions.resolve_all_asset_keys())
    assert keys == {dg.AssetKey(["demo", "orders"]), dg.AssetKey(["shop", "users"])}
    users = definitions.resolve_asset_graph().get(dg.AssetKey(["shop", "users"]))
    assert not users.is_materializable  # written outside Dagster
    assert not definitions.sensors  # no downstream table: nothing for a sensor to request
