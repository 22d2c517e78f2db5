"""Table options: Paimon's names and defaults, declared once and parsed strictly.

- :mod:`.table_options`: every option lake_core knows, one :class:`ConfigOption` each;
- :mod:`.core_options`: :class:`CoreOptions`, typed access derived from them;
- :mod:`.validation`: the checks a table's options pass when it is created, altered or opened;
- :mod:`.reference`: the reference page ``docs/reference/options.md`` (``python -m lake_core.options``).
"""

from __future__ import annotations

# The value parsers live below format/, which reads the writer options with them too.
from lake_core.option_values import parse_duration_ms, parse_memory_size
from lake_core.options.config_option import ConfigOption, FieldOption, Support
from lake_core.options.core_options import MATERIALIZED_READ_ROWS, READ_BATCH_ROWS, CoreOptions
from lake_core.options.table_options import BY_KEY, CHANGELOG_PRODUCERS, FILE_FORMATS, MERGE_ENGINES
from lake_core.options.validation import check_supported, validate_option_names, validate_table_options

__all__ = [
    "BY_KEY",
    "CHANGELOG_PRODUCERS",
    "FILE_FORMATS",
    "MATERIALIZED_READ_ROWS",
    "MERGE_ENGINES",
    "READ_BATCH_ROWS",
    "ConfigOption",
    "CoreOptions",
    "FieldOption",
    "Support",
    "check_supported",
    "parse_duration_ms",
    "parse_memory_size",
    "validate_option_names",
    "validate_table_options",
]
