"""The docs: the site (mkdocs.yml, docs/) builds with ``mkdocs build --strict`` (a broken link or
anchor, or a page missing from the nav, fails), the README stays one page that links into it, and
every ```python block of the README and the docs runs.

The blocks of one page run in order in one namespace, in a fresh temporary directory (the examples
make their warehouse there, as ``Catalog("warehouse")``). A block that needs a service the tests do
not start is skipped by a marker on the line before it, whose reason is printed:
``<!-- no-test: needs a Spark session -->``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
NO_TEST = re.compile(r"^<!--\s*no-test:\s*(?P<reason>.*?)\s*-->$")
FENCE = re.compile(r"^(?P<indent>\s*)```(?P<lang>[\w-]*)")
# The README's two commands: CI's .ci/run runs the second one, word for word.
COMMANDS = ("./setup.sh", ".venv/bin/python -m pytest -q")
MAX_README_LINES = 150
MAX_SKIPPED_BLOCKS = 6  # keep skips rare: an example that cannot run rots


def python_blocks(text: str) -> list[tuple[int, str, str | None]]:
    """The page's ```python blocks: (line of the fence, code, reason to skip or None)."""
    lines = text.splitlines()
    blocks: list[tuple[int, str, str | None]] = []
    previous = ""
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if not fence:
            if lines[i].strip():
                previous = lines[i].strip()
            i += 1
            continue
        indent, start = len(fence["indent"]), i
        i += 1
        body = []
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i][indent:])
            i += 1
        i += 1
        marker = NO_TEST.match(previous)
        if fence["lang"] == "python":
            blocks.append((start + 1, "\n".join(body) + "\n", marker["reason"] if marker else None))
        elif marker:
            raise AssertionError(f"line {start + 1}: a no-test marker before a {fence['lang'] or 'plain'} block")
        previous = ""
    return blocks


def _pages() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


def _pages_with_python() -> list[Path]:
    return [p for p in _pages() if python_blocks(p.read_text(encoding="utf-8"))]


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_the_site_builds_strict(tmp_path):
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml")]
        + ["--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = done.stdout + done.stderr
    warnings = [line for line in output.splitlines() if "WARNING" in line or "ERROR" in line]
    assert done.returncode == 0 and not warnings, output
    assert (tmp_path / "site" / "index.html").exists()


def test_the_readme_is_one_page_that_links_into_the_docs():
    text = README.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines; move the detail into docs/"
    for command in COMMANDS:
        assert any(line.startswith(command + " ") or line == command for line in lines), command
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    assert any(link.startswith("docs/") for link in links)
    for link in links:
        if re.match(r"^[a-z]+://", link) or link.startswith("#"):
            continue
        assert "shared/" not in link, f"README.md links outside the repository: {link}"
        target = (ROOT / link.split("#")[0]).resolve()
        assert target.is_relative_to(ROOT) and target.exists(), f"README.md: broken link {link}"


def test_the_ci_script_runs_the_readmes_test_command():
    assert COMMANDS[1] in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_skipped_examples_are_rare_and_say_why():
    skipped = [(p, line, why) for p in _pages() for line, _, why in python_blocks(p.read_text("utf-8")) if why]
    assert all(why for _, _, why in skipped)
    assert len(skipped) <= MAX_SKIPPED_BLOCKS, [f"{_name(p)}:{line}" for p, line, _ in skipped]


@pytest.mark.parametrize("page", _pages_with_python(), ids=_name)
def test_the_python_examples_run(page, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(ROOT))
    namespace: dict[str, object] = {"__name__": "__docs__"}
    for line, code, skip in python_blocks(page.read_text(encoding="utf-8")):
        where = f"{_name(page)}:{line}"
        if skip:
            with capsys.disabled():
                print(f"\n{where}: example not run ({skip})")
            continue
        exec(compile(code, where, "exec"), namespace)
