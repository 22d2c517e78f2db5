"""The options reference page (``docs/reference/options.md``), rendered from the declarations as Paimon's
docs generator renders its ``ConfigOption`` fields."""

from __future__ import annotations

from lake_core.options import table_options as o
from lake_core.options.config_option import ConfigOption, Support

PAGE = "docs/reference/options.md"

_INTRO = """\
# Table options

<!-- Generated from lake_core/options/table_options.py by `python -m lake_core.options`; do not edit. -->

Options are strings, given to `create_table(options=...)` or `SchemaChange.set_option` under Paimon's
names and stored in the table's schema, so Java Paimon reads the same table. lake_core refuses what
Paimon would silently ignore: an unknown name, a Paimon option it does not implement yet, or a value
outside what the option allows. Each error names the option, the value and what is allowed.
*Ignored* options are accepted and checked, for Java's sake, but change nothing in lake_core.
"""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _default(option: ConfigOption) -> str:
    if option.default is not None:
        return f"`{option.default}`" if option.default else "(empty)"
    return f"unset: {option.unset}" if option.unset else "unset"


def _notes(option: ConfigOption) -> str:
    notes = []
    if option.fallback_keys:
        notes.append("also named " + ", ".join(f"`{k}`" for k in option.fallback_keys))
    if option.primary_key_only:
        notes.append("primary-key tables only")
    if option.immutable:
        notes.append("cannot change once the table has a snapshot")
    if option.support is Support.IGNORED:
        notes.append("**ignored by lake_core**")
    return f" *({'; '.join(notes)})*" if notes else ""


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


def render() -> str:
    """The page, from the declarations."""
    lines = [_INTRO]
    for title, options in o.SECTIONS:
        lines += [f"## {title}", ""]
        lines += _table(
            ("option", "value", "default", "what it does"),
            [(f"`{opt.key}`", opt.type.describe(), _default(opt), opt.description + _notes(opt)) for opt in options],
        )
        lines.append("")
    lines += [
        "## Per-column options",
        "",
        "`<name>` is a column of the table; an option naming another column is refused.",
        "",
    ]
    lines += _table(
        ("option", "what it does"),
        [
            (
                f"`{f.pattern}`",
                f.description + (" *(**ignored by lake_core**)*" if f.support is Support.IGNORED else ""),
            )
            for f in o.FIELD_OPTIONS
        ],
    )
    lines += [
        "",
        "## Refused",
        "",
        "Paimon options lake_core does not implement yet are refused by name when a table is created "
        "or opened (a table another engine wrote with one would read wrong), except the options above: "
        "names starting with " + ", ".join(f"`{p}`" for p in o.REFUSED_PREFIXES) + ".",
        "",
        "Values refused the same way: `bucket` = `-2` (postpone bucket mode), and "
        "`deletion-vectors.enabled` = `true` with `merge-engine` = `first-row`.",
        "",
    ]
    return "\n".join(lines)
