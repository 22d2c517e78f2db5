"""The import direction between the three packages and between lake_core's stages, enforced by
import-linter and the import graph (grimp).

``lake_core`` never imports ``orchestration`` or ``jobs``; ``jobs`` never imports
``orchestration``; ``jobs`` and ``orchestration`` use lake_core's public API only (the package and
``lake_core.errors``), never its internal modules. The contracts live in ``pyproject.toml``
(``[tool.importlinter]``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

REPO_ROOT = Path(__file__).resolve().parents[2]


def _lint_imports(cwd: Path, config: Path) -> subprocess.CompletedProcess:
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    assert exe, "lint-imports not found: install the dev extra (pip install -e '.[dev]' -c constraints.txt)"
    env = dict(os.environ)
    # Analyse the packages in ``cwd``, never an installed copy.
    env["PYTHONPATH"] = str(cwd)
    return subprocess.run(
        [exe, "--config", str(config), "--no-cache"], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def _config_without_layers(dest: Path) -> Path:
    """pyproject.toml minus lake_core's layers contract, for throw-away trees without its stages."""
    text = (REPO_ROOT / "pyproject.toml").read_text()
    start = text.index("# The stages of the data flow")
    end = text.index("[[tool.importlinter.contracts]]", start)
    head = text[:start].rstrip()
    assert head.endswith("[[tool.importlinter.contracts]]")
    dest.write_text(head[: -len("[[tool.importlinter.contracts]]")] + text[end:])
    return dest


def _importlinter() -> dict:
    return tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]


def _contracts() -> list[dict]:
    return _importlinter()["contracts"]


def test_contracts_state_the_architecture():
    forbidden = {
        (src, dst)
        for c in _contracts()
        if c["type"] == "forbidden"
        for src in c["source_modules"]
        for dst in c["forbidden_modules"]
    }
    assert {("lake_core", "orchestration"), ("lake_core", "jobs"), ("jobs", "orchestration")} <= forbidden
    [protected] = [c for c in _contracts() if c["type"] == "protected"]
    assert protected["protected_modules"] == ["lake_core.*"] and protected["allowed_importers"] == ["lake_core"]
    # The only public modules besides the package itself:
    assert {i.split(" -> ")[1] for i in protected["ignore_imports"]} == {"lake_core.errors"}
    # Annotations are imports; only maintenance, the table's facade, may name the table above it.
    assert _importlinter()["exclude_type_checking_imports"] is False
    [layers] = [c for c in _contracts() if c["type"] == "layers"]
    assert layers["ignore_imports"] == ["lake_core.maintenance.** -> lake_core.table"]


def test_the_code_keeps_the_import_contracts():
    result = _lint_imports(REPO_ROOT, REPO_ROOT / "pyproject.toml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "broken" in result.stdout and " 0 broken" in result.stdout


@pytest.mark.parametrize(
    "offender, line",
    [
        ("lake_core/table.py", "import orchestration.assets"),
        ("lake_core/table.py", "from jobs import compact"),
        ("jobs/compact.py", "from orchestration.assets import x"),
        ("jobs/compact.py", "from lake_core.hashing import assign_buckets"),
        ("orchestration/assets.py", "import lake_core.catalog"),
        ("lake_cli/main.py", "import orchestration.assets"),
        ("lake_cli/main.py", "from lake_core.hashing import x"),
        ("jobs/compact.py", "import lake_cli.main"),
        ("orchestration/assets.py", "from lake_cli import main"),
    ],
)
def test_the_contracts_catch_a_violation(tmp_path, offender, line):
    """Same contracts, a throw-away tree with one forbidden import: lint-imports must fail."""
    for pkg in ("lake_core", "orchestration", "jobs", "lake_cli"):
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "__init__.py").write_text("")
    for internal in ("hashing", "catalog", "errors"):
        (tmp_path / "lake_core" / f"{internal}.py").write_text("x = 1\n")
    (tmp_path / "lake_core" / "__init__.py").write_text("from .hashing import x\nfrom .catalog import x\n")
    (tmp_path / "orchestration" / "assets.py").write_text("x = 1\n")
    (tmp_path / "jobs" / "compact.py").write_text("import lake_core\n")
    (tmp_path / "lake_cli" / "main.py").write_text("import lake_core\n")
    (tmp_path / offender).write_text(
        textwrap.dedent(f"""\
        import lake_core
        {line}
    """)
    )
    _config_without_layers(tmp_path / "pyproject.toml")

    result = _lint_imports(tmp_path, tmp_path / "pyproject.toml")
    assert result.returncode != 0, result.stdout + result.stderr
    assert "BROKEN" in result.stdout, result.stdout + result.stderr
    assert offender.replace("/", ".").removesuffix(".py") in result.stdout


def test_the_public_api_passes(tmp_path):
    """The same tree importing only ``lake_core`` and ``lake_core.errors`` keeps every contract."""
    for pkg in ("lake_core", "orchestration", "jobs", "lake_cli"):
        (tmp_path / pkg).mkdir()
    for internal in ("hashing", "catalog", "errors"):
        (tmp_path / "lake_core" / f"{internal}.py").write_text("x = 1\n")
    (tmp_path / "lake_core" / "__init__.py").write_text("from .hashing import x\nfrom .catalog import x\n")
    for pkg in ("orchestration", "jobs", "lake_cli"):
        (tmp_path / pkg / "__init__.py").write_text("")
    (tmp_path / "lake_cli" / "main.py").write_text(
        "import jobs.write\nfrom lake_core import x\nfrom lake_core.errors import x\n"
    )
    (tmp_path / "orchestration" / "assets.py").write_text("import lake_core\nfrom lake_core.errors import x\n")
    (tmp_path / "jobs" / "write.py").write_text("from lake_core import x\nimport lake_core.errors\n")
    _config_without_layers(tmp_path / "pyproject.toml")
    result = _lint_imports(tmp_path, tmp_path / "pyproject.toml")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    "module, line, refusal",
    [
        # lazily, inside a function
        (
            "commit/messages.py",
            "def _late():\n    from lake_core.compaction import job",
            "lake_core.commit is not allowed to import lake_core.compaction",
        ),
        # an annotation: the stages below the table take the FileStore and never name the table
        (
            "compaction/plan.py",
            "if TYPE_CHECKING:\n    from lake_core.table import FileStoreTable",
            "lake_core.compaction is not allowed to import lake_core.table",
        ),
        (
            "write/table_write.py",
            "if TYPE_CHECKING:\n    from lake_core.table import FileStoreTable",
            "lake_core.write is not allowed to import lake_core.table",
        ),
        # a reader never imports the commit package
        (
            "read/scan.py",
            "from lake_core.commit.messages import CommitMessage",
            "lake_core.read is not allowed to import lake_core.commit",
        ),
    ],
)
def test_the_layers_contract_catches_an_upward_import(tmp_path, module, line, refusal):
    """A copy of lake_core with one forbidden import added: refused."""
    shutil.copytree(REPO_ROOT / "lake_core", tmp_path / "lake_core", ignore=shutil.ignore_patterns("__pycache__"))
    for pkg in ("orchestration", "jobs", "lake_cli"):
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "__init__.py").write_text("")
    target = tmp_path / "lake_core" / module
    target.write_text(target.read_text() + f"\n\nfrom typing import TYPE_CHECKING\n{line}\n")
    shutil.copy(REPO_ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    result = _lint_imports(tmp_path, tmp_path / "pyproject.toml")
    assert result.returncode != 0
    assert refusal in result.stdout, result.stdout


def test_maintenance_names_the_table_in_annotations_only():
    """The layers contract lets maintenance import the table (its facade annotates it); at run
    time that import would put maintenance under the table it serves."""
    import grimp

    graph = grimp.build_graph("lake_core", include_external_packages=False, exclude_type_checking_imports=True)
    assert not [
        m
        for m in graph.modules
        if m.startswith("lake_core.maintenance") and graph.direct_import_exists(importer=m, imported="lake_core.table")
    ]


def _runtime_import_cycles() -> list[list[str]]:
    """Strongly connected components of lake_core's module graph (lazy imports included,
    ``if TYPE_CHECKING:`` annotations excluded)."""
    import grimp

    graph = grimp.build_graph("lake_core", include_external_packages=False, exclude_type_checking_imports=True)
    edges = {m: graph.find_modules_directly_imported_by(m) for m in graph.modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for m in sorted(edges):
        if m not in index:
            visit(m)
    return cycles


def test_lake_core_has_no_import_cycles():
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    assert _runtime_import_cycles() == []


def test_merge_engines_are_asked_not_named():
    """Outside lake_core/merge, code asks the engine for a capability (hides_level0,
    merged_row_is_stored, ...) instead of comparing merge-engine names."""
    import re

    names = re.compile(
        r"""(==|!=|\bin\b|\bnot in\b)\s*\(?\s*["'](deduplicate|first-row|partial-update|aggregation)["']"""
    )
    offenders = []
    for path in sorted((REPO_ROOT / "lake_core").rglob("*.py")):
        rel = path.relative_to(REPO_ROOT).as_posix()
        if rel.startswith(("lake_core/merge/", "lake_core/options/")):  # the registry and option parsing
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if names.search(line) or re.search(r"merge_engine\s*(==|!=|in\b|not in\b)", line):
                offenders.append(f"{rel}:{n}: {line.strip()}")
    assert offenders == []


# What sits above the stages: the table, its catalog and the package's exports, and maintenance
# (the table's facade). Everything else takes the FileStore value, not the table (Java's
# KeyValueFileStore).
ABOVE_THE_STAGES = (
    "lake_core/__init__.py",
    "lake_core/catalog.py",
    "lake_core/system/",  # the system tables, between the catalog and the table
    "lake_core/table.py",
    "lake_core/maintenance/",
)


def test_lower_stages_take_the_file_store_not_the_table():
    """Not even by name: a string annotation needs no import, so the contracts cannot see it."""
    offenders = [
        rel
        for p in sorted((REPO_ROOT / "lake_core").rglob("*.py"))
        if not (rel := p.relative_to(REPO_ROOT).as_posix()).startswith(ABOVE_THE_STAGES)
        and "FileStoreTable" in p.read_text()
    ]
    assert offenders == []


def test_file_store_is_a_frozen_picklable_value(tmp_path):
    import dataclasses
    import pickle

    import pyarrow as pa

    from lake_core import Catalog

    cat = Catalog(f"file://{tmp_path}")
    cat.create_database("db")
    t = cat.create_table(
        "db.t",
        schema=pa.schema([("id", pa.int64()), ("v", pa.int64())]),
        primary_keys=["id"],
        options={"bucket": "2", "merge-engine": "first-row"},
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.store.schema = None
    back = pickle.loads(pickle.dumps(t.store))
    assert (back.identifier, back.paths.root, back.schema) == (t.identifier, t.paths.root, t.schema)
    assert back.merge_engine().hides_level0 and back.bucket_mode == "fixed" and back.level0_hidden


def test_storage_details_stay_in_fileio_and_paths():
    """Outside lake_core/io, code uses FileIO's public operations (no ``_p()``, ``fs`` or
    ``is_local`` branches), and table paths come from lake_core/paths.py (no joining of
    snapshot/bucket/branch paths by hand)."""
    import ast
    import re

    fileio_internals = {"_p", "fs", "is_local"}
    hand_joined = re.compile(
        r"""(["'/]\.?(snapshot|bucket|branch|manifest|schema|tag|changelog)-?["{/]"""
        r"""|\.expire-lock|\}/\{)"""
    )
    offenders = []
    for root in ("lake_core", "jobs", "orchestration"):
        for path in sorted((REPO_ROOT / root).rglob("*.py")):
            rel = path.relative_to(REPO_ROOT).as_posix()
            if rel.startswith("lake_core/io/"):
                continue
            source = path.read_text()
            for node in ast.walk(ast.parse(source)):
                if isinstance(node, ast.Attribute) and node.attr in fileio_internals:
                    offenders.append(f"{rel}:{node.lineno}: .{node.attr}")
                if rel != "lake_core/paths.py" and isinstance(node, ast.JoinedStr):
                    text = ast.get_source_segment(source, node) or ""
                    if hand_joined.search(text) and ("path" in text or "root" in text or "dir" in text):
                        offenders.append(f"{rel}:{node.lineno}: {text}")
    assert offenders == []
