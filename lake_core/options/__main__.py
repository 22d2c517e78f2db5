"""``python -m lake_core.options [--check]``: write the options reference page from the
declarations, or (``--check``) fail when the committed page differs from them."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lake_core.options.reference import PAGE, render


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lake_core.options", description=__doc__)
    parser.add_argument("--check", action="store_true", help="only check that the page is up to date")
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="the repository (default: here)")
    args = parser.parse_args(argv)
    page = args.root / PAGE
    text = render()
    if args.check:
        if not page.exists() or page.read_text(encoding="utf-8") != text:
            print(f"{PAGE} is out of date: run `python -m lake_core.options`", file=sys.stderr)
            return 1
        return 0
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(text, encoding="utf-8")
    print(f"wrote {page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
