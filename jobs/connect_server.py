"""A Spark Connect server on this machine, from the pyspark package's own ``sbin`` (no separate
Spark install): what the tests and the benchmarks attach to, and a quick way to try the Connect
mode (docs/deployment/spark.md).

The server listens on 127.0.0.1 and a free port, runs ``--master local[2]`` (or the given master),
and its Python workers use this interpreter with the checkout importable, so ``mapInArrow`` tasks
and the ``paimon`` data source import this ``lake_core``. Its logs and pid file live in its own
directory, so two servers never share a pid file. It gets no storage credentials of its own: the
jobs bring theirs (:mod:`jobs.storage`).

    server = start_local_connect_server(workdir=Path("/tmp/connect"))
    try:
        spark = spark_session(remote=server.url)
        ...
    finally:
        server.stop()
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from lake_core.errors import LakeError

# The pyspark package is a Spark distribution (bin/, sbin/, jars/); found without importing it.
SPARK_HOME = Path(importlib.util.find_spec("pyspark").origin or "").resolve().parent
_PROJECT_ROOT = Path(__file__).resolve().parents[1]
# Storage credentials a server must not pick up from whoever starts it: the jobs bring theirs.
_CREDENTIAL_VARS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE")


class ConnectServerError(LakeError, RuntimeError):
    """The Spark Connect server did not come up; the message has its log."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


@dataclass(frozen=True, kw_only=True)
class LocalConnectServer:
    port: int
    workdir: Path
    env: Mapping[str, str] = field(repr=False)

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    def log(self) -> str:
        return "\n".join(p.read_text(errors="replace") for p in sorted((self.workdir / "logs").glob("*.out")))

    def stop(self) -> None:
        """Stop the server (its JVM and Python workers); idempotent."""
        subprocess.run(
            [str(SPARK_HOME / "sbin" / "stop-connect-server.sh")],
            env=dict(self.env),
            check=False,
            capture_output=True,
            timeout=120,
        )


def start_local_connect_server(
    *,
    workdir: Path,
    master: str = "local[2]",
    conf: Mapping[str, str] | None = None,
    timeout_s: float = 180.0,
) -> LocalConnectServer:
    """Start the server and return once its port answers (raises :class:`ConnectServerError`
    with the log otherwise, after stopping it)."""
    workdir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    paths = [str(_PROJECT_ROOT), *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]]
    env = {
        **{k: v for k, v in os.environ.items() if k not in _CREDENTIAL_VARS},
        "SPARK_HOME": str(SPARK_HOME),
        "PYSPARK_PYTHON": sys.executable,
        "PYTHONPATH": os.pathsep.join(paths),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOG_DIR": str(workdir / "logs"),
        "SPARK_PID_DIR": str(workdir / "pids"),
        "SPARK_IDENT_STRING": f"lake-connect-{port}",  # the pid file's name: never another server's
    }
    # A client flag inherited from this process would make the server's own pyspark a client.
    env.pop("SPARK_CONNECT_MODE_ENABLED", None)
    env.pop("SPARK_REMOTE", None)
    settings = {
        "spark.connect.grpc.binding.port": str(port),
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.enabled": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": "2",
        **(conf or {}),
    }
    args = [str(SPARK_HOME / "sbin" / "start-connect-server.sh"), "--master", master]
    for key, value in settings.items():
        args += ["--conf", f"{key}={value}"]
    server = LocalConnectServer(port=port, workdir=workdir, env=env)
    subprocess.run(args, env=env, check=True, capture_output=True, timeout=120)
    deadline = time.monotonic() + timeout_s
    while not _answers(port):
        if time.monotonic() > deadline:
            log = server.log()
            server.stop()
            raise ConnectServerError(
                f"the Spark Connect server did not answer on 127.0.0.1:{port} within {timeout_s:.0f} s:\n{log}"
            )
        time.sleep(0.3)
    return server
