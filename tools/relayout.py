"""Rewrite imports of lake_core's old flat module paths to the stage subpackages (issue 10).

    python tools/relayout.py FILE...        # rewrite in place
    python tools/relayout.py --all          # every .py file under lake_core, orchestration, jobs,
                                            # tests, benchmarks, tools

Relative imports inside lake_core become absolute. A relative import in a file that moved is
resolved against its new location first, and against its old location when that names no module.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: old dotted module → new dotted module
MOVES = {
    "lake_core.fileio": "lake_core.io.fileio",
    "lake_core.binary_row": "lake_core.format.binary_row",
    "lake_core.data_file_format": "lake_core.format.data_file",
    "lake_core.stats": "lake_core.format.stats",
    "lake_core.float_order": "lake_core.format.float_order",
    "lake_core.fileformat.parquet_int96": "lake_core.format.parquet_int96",
    "lake_core.fileformat": "lake_core.format",
    "lake_core.integrity": "lake_core.format.integrity",
    "lake_core.metadata": "lake_core.manifest.metadata",
    "lake_core.manifest_io": "lake_core.manifest.manifest_io",
    "lake_core.manifest_store": "lake_core.manifest.store",
    "lake_core.manifest_merge": "lake_core.manifest.merger",
    "lake_core.snapshot": "lake_core.snapshot.snapshot",
    "lake_core.snapshot_manager": "lake_core.snapshot.snapshot_manager",
    "lake_core.changelog_manager": "lake_core.snapshot.changelog_manager",
    "lake_core.schema": "lake_core.schema.table_schema",
    "lake_core.schema_manager": "lake_core.schema.schema_manager",
    "lake_core.schema_change": "lake_core.schema.change",
    "lake_core.schema_evolution": "lake_core.read.evolution",
    "lake_core.rowkind": "lake_core.kv.rowkind",
    "lake_core.bucket": "lake_core.bucket.assign",
    "lake_core.dynamic_bucket": "lake_core.bucket.dynamic",
    "lake_core.cross_partition": "lake_core.write.cross_partition",
    "lake_core.hash_index": "lake_core.bucket.hash_index",
    "lake_core.write": "lake_core.write.table_write",
    "lake_core.file_writer": "lake_core.write.file_writer",
    "lake_core.read": "lake_core.read.split_read",
    "lake_core.scan": "lake_core.read.scan",
    "lake_core.predicate": "lake_core.read.predicate",
    "lake_core.commit": "lake_core.commit.file_store_commit",
    "lake_core.messages": "lake_core.commit.messages",
    "lake_core.compact": "lake_core.compaction.bucket_compact",
    # second step: modules that moved again to break import cycles
    "lake_core.bucket.cross_partition": "lake_core.write.cross_partition",
    "lake_core.compaction.levels": "lake_core.lsm.levels",
    "lake_core.maintenance.errors": "lake_core.errors",
    "lake_core.manifest.minor_compaction": "lake_core.manifest.merger",
    "lake_core.maintenance.result": "lake_core.result",
    "lake_core.maintenance.checksum": "lake_core.format.checksum",
    # third step: names that say which (issue 24)
    "lake_core.compaction.dynamic": "lake_core.compaction.planning_options",
    "lake_core.compaction.expire": "lake_core.compaction.record_expiry",
}
#: modules that stay where they were (base layer and the table/catalog tops)
STAYS = {
    "lake_core.errors",
    "lake_core.options",
    "lake_core.paths",
    "lake_core.types",
    "lake_core.names",
    "lake_core.catalog",
    "lake_core.table",
}


def _exists(mod: str, root: Path = ROOT) -> bool:
    p = root.joinpath(*mod.split("."))
    return p.with_suffix(".py").exists() or (p / "__init__.py").exists()


def new_name(mod: str) -> str:
    """The new dotted path of an old one (longest matching old prefix), unchanged when not moved."""
    if mod in MOVES:
        return MOVES[mod]
    if _exists(mod):
        return mod
    best = None
    for old in MOVES:
        if mod.startswith(old + ".") and (best is None or len(old) > len(best)):
            best = old
    if best is None:
        return mod
    rest = mod[len(best) :]
    # lake_core.snapshot.X where X is an attribute (monkeypatch strings): map the module part only
    return MOVES[best] + rest


_OLD_OF = {v: k for k, v in MOVES.items()}


def _package_of(path: Path) -> str:
    rel = path.resolve().relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
        return ".".join(parts)
    return ".".join(parts[:-1])


def _resolve_relative(level: int, name: str, package: str) -> str:
    base = package.split(".")
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


_FROM_REL = re.compile(r"^(\s*)from (\.+)([\w.]*) import ", re.M)
_FROM_MODULE = re.compile(r"^(\s*)from (\.*)((?:lake_core)?[\w.]*) import (\w+)( as \w+)?\s*$", re.M)
_ABS = re.compile(r"\blake_core(?:\.\w+)+")


def rewrite(text: str, path: Path) -> str:
    module = ".".join(path.resolve().relative_to(ROOT).with_suffix("").parts)
    package = _package_of(path)
    old_module = _OLD_OF.get(module.removesuffix(".__init__"))
    old_package = old_module.rsplit(".", 1)[0] if old_module else None

    def rel(m: re.Match) -> str:
        indent, dots, name = m.group(1), m.group(2), m.group(3)
        if not package.startswith("lake_core"):
            return m.group(0)
        target = _resolve_relative(len(dots), name, package)
        if _exists(target):  # names a module of today's layout: keep it
            return f"{indent}from {target} import "
        if old_package is not None:
            target = _resolve_relative(len(dots), name, old_package)
        return f"{indent}from {new_name(target)} import "

    def module_import(m: re.Match) -> str:
        # "from . import rowkind" / "from lake_core import manifest_io as mio": a module, not a name
        indent, dots, pkg, name, alias = m.group(1), m.group(2), m.group(3), m.group(4), m.group(5) or ""
        if dots:
            if not package.startswith("lake_core"):
                return m.group(0)
            bases = [package] + ([old_package] if old_package else [])
            candidates = [_resolve_relative(len(dots), pkg, b) for b in bases]
        else:
            candidates = [pkg]
        for c in candidates:
            old = f"{c}.{name}"
            if old in MOVES and not _exists(old):
                parent, leaf = MOVES[old].rsplit(".", 1)
                alias = alias or (f" as {name}" if leaf != name else "")
                return f"{indent}from {parent} import {leaf}{alias}"
        return m.group(0)

    text = _FROM_MODULE.sub(module_import, text)
    text = _FROM_REL.sub(rel, text)

    def absolute(m: re.Match) -> str:
        dotted = m.group(0)
        # longest prefix that is an old module name (module paths, also inside strings)
        parts = dotted.split(".")
        for n in range(len(parts), 1, -1):
            head = ".".join(parts[:n])
            if head in MOVES:
                return MOVES[head] + dotted[len(head) :]
            if head in STAYS or _exists(head):
                return dotted
        return dotted

    return _ABS.sub(absolute, text)


def main(argv: list[str]) -> int:
    if argv == ["--all"]:
        files = [
            p for d in ("lake_core", "orchestration", "jobs", "tests", "benchmarks") for p in (ROOT / d).rglob("*.py")
        ]
    else:
        files = [Path(a) for a in argv]
    changed = 0
    for f in files:
        src = f.read_text()
        out = rewrite(src, f)
        if out != src:
            f.write_text(out)
            changed += 1
    print(f"relayout: rewrote {changed} of {len(files)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
