"""``lake_core.build_id()``: what the Spark tasks' version guard compares. The same source anywhere
gives the same id; one edited line gives another, though the release number is the same."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import lake_core

PACKAGE = Path(lake_core.__file__).resolve().parent


def _build_id_of(root: Path) -> str:
    """The build id a process computes from the package at ``root`` (its ``build`` module loaded from
    there: an editable install would otherwise import this checkout's whatever the path)."""
    code = (
        "import importlib.util, sys; spec = importlib.util.spec_from_file_location('b', sys.argv[1]); "
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); print(m.build_id())"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(root / "lake_core" / "build.py")], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_same_source_elsewhere_has_the_same_build_id_and_an_edit_changes_it(tmp_path):
    ours = lake_core.build_id()
    assert ours.startswith(f"{lake_core.__version__}+") and len(ours.split("+")[1]) == 12
    copy = tmp_path / "copy"
    shutil.copytree(PACKAGE, copy / "lake_core", ignore=shutil.ignore_patterns("__pycache__"))
    assert _build_id_of(copy) == ours
    (copy / "lake_core" / "paths.py").write_text((PACKAGE / "paths.py").read_text() + "\n# patched on one host\n")
    patched = _build_id_of(copy)
    assert patched != ours and patched.startswith(f"{lake_core.__version__}+")
