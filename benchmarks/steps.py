"""Benchmark steps in their own processes: a benchmark module re-runs itself with ``--build`` (make
the table) or ``--timed`` (time one step and print its figures as JSON), so every timed step
starts in a fresh process, with no cache or allocator state left by the build."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def add_step_options(ap: argparse.ArgumentParser) -> None:
    """The hidden options of a step run (``--build``/``--timed`` SCENARIO ``--path`` DIR)."""
    ap.add_argument("--build", help=argparse.SUPPRESS)
    ap.add_argument("--timed", help=argparse.SUPPRESS)
    ap.add_argument("--path", help=argparse.SUPPRESS)


def handle_step(args: argparse.Namespace, build: Callable[[str, str], None], timed: Callable[[str, str], dict]) -> bool:
    """Run the step ``args`` ask for, if any (True: it ran, the process is done)."""
    if args.build:
        build(args.build, args.path)
        return True
    if args.timed:
        print(json.dumps(timed(args.timed, args.path)))
        return True
    return False


def run_step(module: str, *args: str) -> dict:
    """``python -m module *args`` in a fresh process; the JSON it printed last."""
    proc = subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"benchmark step {args} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1]) if proc.stdout.strip() else {}
