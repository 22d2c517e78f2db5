"""The linter, the formatter and the type checker, run by the test command so the tree stays as
they leave it: ``ruff check`` and ``ruff format --check`` over the whole tree, ``mypy`` over
``lake_core`` (configured in ``pyproject.toml``: strict in the packages that are fully typed).

A failure prints the tool's own report; ``ruff format . && ruff check --fix .`` repairs most of
what the first two find."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


def _tool(name: str) -> str:
    exe = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if exe is None:
        pytest.fail(f"{name} not found: install the dev extra (pip install -e '.[dev]' -c constraints.txt)")
    return exe


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_finds_nothing_to_lint():
    done = _run(_tool("ruff"), "check", "--no-cache", "--output-format", "concise", ".")
    assert done.returncode == 0, f"ruff check found problems:\n{done.stdout}{done.stderr}"


def test_the_tree_is_formatted_as_ruff_formats_it():
    done = _run(_tool("ruff"), "format", "--check", "--no-cache", ".")
    assert done.returncode == 0, f"ruff format would reformat (run `ruff format .`):\n{done.stdout}{done.stderr}"


def test_mypy_accepts_lake_core():
    # The config (files, strict packages, third-party modules without stubs) is pyproject.toml's.
    done = _run(_tool("mypy"), "--no-incremental")
    assert done.returncode == 0, f"mypy found type errors in lake_core:\n{done.stdout}{done.stderr}"
