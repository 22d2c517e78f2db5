"""The import direction between the three packages, enforced by import-linter.

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

REPO_ROOT = Path(__file__).resolve().parents[1]


def _lint_imports(cwd: Path, config: Path) -> subprocess.CompletedProcess:
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    assert exe, "lint-imports not found: install the dev extra (pip install -e '.[dev]' -c constraints.txt)"
    env = dict(os.environ)
    # Analyse the packages in ``cwd``, never an installed copy.
    env["PYTHONPATH"] = str(cwd)
    return subprocess.run([exe, "--config", str(config), "--no-cache"], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def _contracts() -> list[dict]:
    config = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    return config["tool"]["importlinter"]["contracts"]


def test_contracts_state_the_architecture():
    forbidden = {
        (src, dst)
        for c in _contracts() if c["type"] == "forbidden"
        for src in c["source_modules"] for dst in c["forbidden_modules"]
    }
    assert {("lake_core", "orchestration"), ("lake_core", "jobs"), ("jobs", "orchestration")} <= forbidden
    [protected] = [c for c in _contracts() if c["type"] == "protected"]
    assert protected["protected_modules"] == ["lake_core.*"] and protected["allowed_importers"] == ["lake_core"]
    # The only public modules besides the package itself:
    assert {i.split(" -> ")[1] for i in protected["ignore_imports"]} == {"lake_core.errors"}


def test_the_code_keeps_the_import_contracts():
    result = _lint_imports(REPO_ROOT, REPO_ROOT / "pyproject.toml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "broken" in result.stdout and " 0 broken" in result.stdout


@pytest.mark.parametrize("offender, line", [
    ("lake_core/table.py", "import orchestration.assets"),
    ("lake_core/table.py", "from jobs import compact"),
    ("jobs/compact.py", "from orchestration.assets import x"),
    ("jobs/compact.py", "from lake_core.hashing import assign_buckets"),
    ("orchestration/assets.py", "import lake_core.catalog"),
])
def test_the_contracts_catch_a_violation(tmp_path, offender, line):
    """Same contracts, a throw-away tree with one forbidden import: lint-imports must fail."""
    for pkg in ("lake_core", "orchestration", "jobs"):
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "__init__.py").write_text("")
    for internal in ("hashing", "catalog", "errors"):
        (tmp_path / "lake_core" / f"{internal}.py").write_text("x = 1\n")
    (tmp_path / "lake_core" / "__init__.py").write_text("from .hashing import x\nfrom .catalog import x\n")
    (tmp_path / "orchestration" / "assets.py").write_text("x = 1\n")
    (tmp_path / "jobs" / "compact.py").write_text("import lake_core\n")
    (tmp_path / offender).write_text(textwrap.dedent(f"""\
        import lake_core
        {line}
    """))
    shutil.copy(REPO_ROOT / "pyproject.toml", tmp_path / "pyproject.toml")

    result = _lint_imports(tmp_path, tmp_path / "pyproject.toml")
    assert result.returncode != 0, result.stdout + result.stderr
    assert "BROKEN" in result.stdout, result.stdout + result.stderr
    assert offender.replace("/", ".").removesuffix(".py") in result.stdout


def test_the_public_api_passes(tmp_path):
    """The same tree importing only ``lake_core`` and ``lake_core.errors`` keeps every contract."""
    for pkg in ("lake_core", "orchestration", "jobs"):
        (tmp_path / pkg).mkdir()
    for internal in ("hashing", "catalog", "errors"):
        (tmp_path / "lake_core" / f"{internal}.py").write_text("x = 1\n")
    (tmp_path / "lake_core" / "__init__.py").write_text("from .hashing import x\nfrom .catalog import x\n")
    for pkg in ("orchestration", "jobs"):
        (tmp_path / pkg / "__init__.py").write_text("")
    (tmp_path / "orchestration" / "assets.py").write_text("import lake_core\nfrom lake_core.errors import x\n")
    (tmp_path / "jobs" / "write.py").write_text("from lake_core import x\nimport lake_core.errors\n")
    shutil.copy(REPO_ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    result = _lint_imports(tmp_path, tmp_path / "pyproject.toml")
    assert result.returncode == 0, result.stdout + result.stderr
