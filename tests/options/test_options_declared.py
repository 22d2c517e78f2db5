"""Table options are declared once (lake_core/options/table_options.py): the names accepted, the
typed attributes of CoreOptions, the checks and the reference page all come from the declarations."""

from __future__ import annotations

from pathlib import Path

import pytest

from lake_core.errors import InvalidOptionError
from lake_core.options import CoreOptions, table_options
from lake_core.options.__main__ import main
from lake_core.options.config_option import ConfigOption
from lake_core.options.core_options import _Typed
from lake_core.options.reference import PAGE, render

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_the_reference_page_is_up_to_date():
    page = REPO_ROOT / PAGE
    assert page.read_text(encoding="utf-8") == render(), (
        f"{PAGE} differs from the declarations: run `python -m lake_core.options` and commit it"
    )
    assert main(["--check", "--root", str(REPO_ROOT)]) == 0


def test_the_check_command_fails_on_a_stale_page(tmp_path, capsys):
    assert PAGE == "docs/reference/options.md"  # the docs site's Reference section (mkdocs.yml)
    (tmp_path / PAGE).parent.mkdir(parents=True)
    (tmp_path / PAGE).write_text(render().replace("Buckets", "Bukets"), encoding="utf-8")
    assert main(["--check", "--root", str(tmp_path)]) == 1
    assert "out of date" in capsys.readouterr().err
    assert main(["--root", str(tmp_path)]) == 0 and main(["--check", "--root", str(tmp_path)]) == 0


def test_every_declaration_is_on_the_page_once():
    declared = [v for v in vars(table_options).values() if isinstance(v, ConfigOption)]
    assert sorted(o.key for o in declared) == sorted(o.key for o in table_options.OPTIONS)
    names = [k for o in table_options.OPTIONS for k in o.keys]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("option", table_options.OPTIONS, ids=lambda o: o.key)
def test_each_default_passes_its_own_check(option):
    if option.default is not None:
        option.type.check(option.key, option.default)
    assert option.description.strip() and option.type.describe()


def test_every_typed_attribute_reads_its_default_and_caches_it():
    typed = {name for name, v in vars(CoreOptions).items() if isinstance(v, _Typed)}
    assert {v.option.key for name, v in vars(CoreOptions).items() if name in typed} <= set(table_options.BY_KEY)
    opts = CoreOptions({})
    for name in typed:
        getattr(opts, name)
    assert typed <= set(vars(opts))  # parsed once per handle: later reads are plain attribute reads
    assert opts.bucket == -1 and opts.merge_engine == "deduplicate" and opts.num_levels == 6
    assert opts.snapshot_time_retained_ms == 3_600_000 and opts.changelog_num_retained_min is None


def test_typed_attributes_parse_as_the_option_is_declared():
    opts = CoreOptions(
        {
            "bucket": "+3",
            "file.format": "ORC",
            "target-file-size": "64 kib",
            "first-row.ignore-delete": "TRUE",
            "consumer.expiration-time": "",
            "dynamic-bucket.target-row-num": str(1 << 40),
        }
    )
    assert (opts.bucket, opts.file_format, opts.target_file_size) == (3, "orc", 64 * 1024)
    assert opts.ignore_delete and opts.consumer_expiration_time_ms is None  # '' of an option without default
    assert opts.dynamic_bucket_target_row_num == 1 << 40  # a long, as Paimon declares it
    with pytest.raises(InvalidOptionError, match="'bucket' = '2 '"):
        _ = CoreOptions({"bucket": "2 "}).bucket
