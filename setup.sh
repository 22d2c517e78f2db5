#!/usr/bin/env bash
# Set up a checkout from nothing, then run the main job.
#
#   ./setup.sh              install everything (idempotent; seconds when already done), run the demo
#   ./setup.sh --no-demo    install only
#
# What it does:
#   1. Java 17 for PySpark and the Java Paimon tests: uses `java`/`javac` if present, else apt-get
#      installs openjdk-17-jdk-headless (needs root; a Debian/Ubuntu machine).
#   2. .venv/ with `pip install -e ".[all]" -c constraints.txt` (the committed, fully pinned set).
#   3. .venv-pypaimon/ with pypaimon==2.1.0 and its own pins (tests/interop/pypaimon-constraints.txt);
#      pypaimon pins pyarrow<20, pandas<3, fsspec<2026, so it cannot share .venv.
#   4. .java-paimon/ with Java Paimon 1.0 (the jar inside the paimon-python-ali 0.1.1 wheel) and the
#      compiled test driver tests/java_interop/driver/PaimonDriver.java, for the `java` tests.
#   5. The main job: `.venv/bin/python -m orchestration.demo` (ingest with Spark, the snapshot sensor's
#      downstream run, a summary; its runs show in `dagster dev`).
#
# Environment: PYTHON=python3.11 picks the interpreter for .venv (default: python3);
# LAKE_SKIP_DEMO=1 is the same as --no-demo; LAKE_SETUP_FORCE=1 reinstalls even if up to date.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$ROOT"

RUN_DEMO=1
[[ "${LAKE_SKIP_DEMO:-0}" == "1" ]] && RUN_DEMO=0
for arg in "$@"; do
  case "$arg" in
    --no-demo) RUN_DEMO=0 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    *) echo "setup.sh: unknown argument '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

export PIP_NO_INPUT=1 PIP_DISABLE_PIP_VERSION_CHECK=1
log() { printf '[setup] %s\n' "$*" >&2; }
SECONDS=0

# --- 1. Java 17 JDK (PySpark 4 runs on Java 17/21; javac compiles the Java Paimon test driver) --
java_major() { java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1; }
if ! command -v java >/dev/null 2>&1 || [[ "$(java_major)" -lt 17 ]] || ! command -v javac >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [[ "$(id -u)" == "0" ]]; then
    log "installing Java 17 (openjdk-17-jdk-headless) for PySpark and the Java Paimon tests"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends openjdk-17-jdk-headless >/dev/null
  else
    log "WARNING: a Java >= 17 JDK (java, javac) not found and cannot apt-get install it; Spark and Java tests will fail"
  fi
fi

# --- 2. The project virtualenv ---------------------------------------------------------------
PY="${PYTHON:-python3}"
if ! "$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)'; then
  log "ERROR: $PY is $("$PY" -V 2>&1); the pinned set in constraints.txt needs Python >= 3.11"
  exit 1
fi
if [[ ! -x .venv/bin/python ]] || ! .venv/bin/python -c 'import sys' 2>/dev/null; then
  log "creating .venv with $("$PY" -V 2>&1)"
  rm -rf .venv
  "$PY" -m venv .venv
fi

# Skip the install when pyproject.toml and constraints.txt are unchanged since the last one.
STAMP=.venv/.lake-setup-stamp
want_stamp="$(cat pyproject.toml constraints.txt | sha256sum | cut -d' ' -f1)"
if [[ "${LAKE_SETUP_FORCE:-0}" != "1" && -f "$STAMP" && "$(cat "$STAMP")" == "$want_stamp" ]] \
   && .venv/bin/python -c 'import lake_core, pyarrow, s3fs, pyspark, dagster, pytest' 2>/dev/null; then
  log ".venv is up to date"
else
  log "installing lake-core[all] into .venv (pinned by constraints.txt)"
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e ".[all]" -c constraints.txt
  .venv/bin/python -m pip check
  echo "$want_stamp" > "$STAMP"
fi

# --- 3. pypaimon's own virtualenv (the reference implementation, for interop tests) -----------
# Same code path as the `pypaimon` test fixture: builds .venv-pypaimon once, then only checks it.
.venv/bin/python tests/fixtures/pypaimon_env.py >/dev/null

# --- 4. Java Paimon for the `java` tests ------------------------------------------------------
# Same code path as the `java_paimon` test fixture: downloads and compiles once, then only checks.
.venv/bin/python tests/fixtures/java_paimon.py >/dev/null

log "environment ready in ${SECONDS}s"

# --- 5. The main job ----------------------------------------------------------------------------
run_main_job() {
  # The main job: ingest change data with Spark, tick the snapshot sensor, run the downstream
  # Dagster run it requests, print a summary (local warehouse .demo/lake, Dagster storage .dagster/).
  log "running the main job: python -m orchestration.demo"
  .venv/bin/python -m orchestration.demo
}

if [[ "$RUN_DEMO" == "1" ]]; then
  run_main_job
fi
