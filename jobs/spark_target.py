"""Where a job's Spark work runs, decided without importing pyspark (the Dagster definitions and
``tables.yaml`` validation use it too).

Three ways to reach Spark:

- embedded (the default): a ``local*`` master, a driver JVM inside this process;
- ``master``: any other URL ``spark.master`` accepts (``spark://host:7077``, ``yarn``, ``k8s://...``):
  a driver in this process, executors on the cluster;
- ``remote``: ``sc://host:port``, Spark Connect: this process only attaches, no JVM starts here.

``LAKE_SPARK_REMOTE`` / ``LAKE_SPARK_MASTER`` override what a config file says.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from lake_core.errors import LakeError

REMOTE_ENV = "LAKE_SPARK_REMOTE"
MASTER_ENV = "LAKE_SPARK_MASTER"
DEFAULT_MASTER = "local[2]"

_LOCAL = re.compile(r"^local(\[(\d+|\*)(,\s*\d+)?\])?$|^local-cluster\[\d+,\s*\d+,\s*\d+\]$")
_HOST_PORT = r"[A-Za-z0-9_.\-]+:\d{1,5}"
_CLUSTER = re.compile(rf"^spark://{_HOST_PORT}(,{_HOST_PORT})*/?$|^yarn$|^k8s://\S+$|^mesos://\S+$")
_REMOTE = re.compile(rf"^sc://{_HOST_PORT}/?(;\S*)?$")


class SparkConfigError(LakeError, ValueError):
    """How to reach Spark is misconfigured; the message names the setting and the problem."""


def check_master(master: str, *, setting: str = "master") -> str:
    if _LOCAL.match(master) or _CLUSTER.match(master):
        return master
    raise SparkConfigError(
        f"{setting} {master!r} is not a Spark master URL; use local[N] (embedded), spark://host:port "
        "(a standalone cluster), yarn or k8s://https://host:port"
    )


def check_remote(remote: str, *, setting: str = "remote") -> str:
    if _REMOTE.match(remote):
        return remote
    raise SparkConfigError(
        f"{setting} {remote!r} is not a Spark Connect URL; use sc://host:port (e.g. sc://spark:15002)"
    )


@dataclass(frozen=True, kw_only=True)
class SparkTarget:
    """One of the three ways to reach Spark (neither set: the embedded ``local[2]``)."""

    remote: str | None = None
    master: str | None = None

    def __post_init__(self) -> None:
        if self.remote is not None and self.master is not None:
            raise SparkConfigError(
                f"both remote ({self.remote!r}) and master ({self.master!r}) are given; "
                "remote attaches to a Spark Connect server, master starts a driver here: give one"
            )
        if self.remote is not None:
            check_remote(self.remote)
        if self.master is not None:
            check_master(self.master)

    @property
    def mode(self) -> Literal["embedded", "cluster", "connect"]:
        if self.remote is not None:
            return "connect"
        return "embedded" if self.local_executors else "cluster"

    @property
    def effective_master(self) -> str | None:
        return None if self.remote is not None else (self.master or DEFAULT_MASTER)

    @property
    def local_executors(self) -> bool:
        """Executors on this machine (``local*``): they share its disks, loopback and Python."""
        return self.remote is None and bool(_LOCAL.match(self.master or DEFAULT_MASTER))

    def describe(self) -> str:
        return f"Spark Connect at {self.remote}" if self.remote else f"master {self.effective_master}"


def resolve_target(*, remote: str | None, master: str | None, environ: Mapping[str, str]) -> SparkTarget:
    """The configured target, unless ``$LAKE_SPARK_REMOTE`` or ``$LAKE_SPARK_MASTER`` is set: then
    the environment decides alone (so switching a deployment to Connect needs no config edit)."""
    env_remote, env_master = environ.get(REMOTE_ENV) or None, environ.get(MASTER_ENV) or None
    if env_remote and env_master:
        raise SparkConfigError(f"both ${REMOTE_ENV} and ${MASTER_ENV} are set; unset one")
    if env_remote:
        return SparkTarget(remote=check_remote(env_remote, setting=f"${REMOTE_ENV}"))
    if env_master:
        return SparkTarget(master=check_master(env_master, setting=f"${MASTER_ENV}"))
    return SparkTarget(remote=remote, master=master)


def is_local_warehouse(warehouse: str) -> bool:
    return "://" not in warehouse or warehouse.startswith("file:")


def check_warehouse_reachable(warehouse: str, target: SparkTarget, *, shared_filesystem: bool = False) -> None:
    """Refuse a local-disk warehouse with executors elsewhere: their data files would land on their
    own disks, and the driver's commit would reference files it cannot see."""
    if target.local_executors or shared_filesystem or not is_local_warehouse(warehouse):
        return
    raise SparkConfigError(
        f"warehouse {warehouse} is on a local filesystem but Spark runs elsewhere ({target.describe()}): "
        "executors would write data files to their own disks. Use an s3:// warehouse, or, if this path is "
        "the same shared filesystem (NFS) on every executor, set `spark: shared_filesystem: true` in tables.yaml "
        "(--shared-filesystem on a job's command line)"
    )


def add_spark_arguments(parser: argparse.ArgumentParser) -> None:
    """The Spark flags every job's command line takes."""
    group = parser.add_argument_group("spark", f"default: embedded {DEFAULT_MASTER}; ${REMOTE_ENV}/${MASTER_ENV} too")
    where = group.add_mutually_exclusive_group()
    where.add_argument("--remote", help="sc://host:port: run on a Spark Connect server")
    where.add_argument("--master", help="spark.master: local[N], spark://host:port, yarn, k8s://...")
    group.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="a spark.* setting")
    group.add_argument(
        "--shared-filesystem",
        action="store_true",
        help="a local warehouse path is the same shared filesystem on every executor",
    )


def target_from_args(args: argparse.Namespace, environ: Mapping[str, str]) -> SparkTarget:
    """Flags first, then the environment, then the embedded default."""
    if args.remote or args.master:
        return SparkTarget(remote=args.remote, master=args.master)
    return resolve_target(remote=None, master=None, environ=environ)


def conf_from_args(args: argparse.Namespace) -> dict[str, str]:
    conf = {}
    for text in args.conf:
        key, sep, value = text.partition("=")
        if not sep or not key.strip():
            raise SparkConfigError(f"--conf {text!r} must look like key=value (e.g. spark.authenticate=true)")
        conf[key.strip()] = value
    return conf
