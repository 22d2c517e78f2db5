"""Drift between a table's entry in ``tables.yaml`` and the table as it exists in the warehouse.

Options in the config apply when the table is *created*; afterwards the table's own schema rules
(Paimon stores options in ``schema-N``). A changed option in the config is therefore not applied
silently: it is reported here, and a changed ``bucket`` is named as a rescale.

``bucket`` with ``maintenance.rescale.target_buckets`` set: the config means "created with
``options.bucket``, rescaled to the target". As in Paimon, a rescale is ``ALTER TABLE SET
('bucket' = N)`` followed by an overwrite of each partition, so after it the table's option is the
target: either count agrees with the config. A rescale not done yet, or done for some partitions
only, is not drift but pending work (:func:`pending_rescale`, which the check reports).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from lake_core import CoreOptions

if TYPE_CHECKING:
    from lake_core import FileStoreTable
    from orchestration.config import TableConfig


@dataclass(frozen=True)
class Drift:
    what: str  # an option key, or 'primary_keys' / 'partition_keys'
    config_value: str | None  # None: not set in the config
    table_value: str | None  # None: not set on the table (Paimon's default applies)
    remedy: str

    def message(self, table: str) -> str:
        return (
            f"{table}: {self.what} is {self.config_value!r} in tables.yaml but {self.table_value!r} "
            f"on the table; {self.remedy}"
        )


def config_drift(config: TableConfig, table: FileStoreTable) -> list[Drift]:
    """Every difference between the config and the existing table, bucket changes first."""
    schema = table.schema
    defaults = CoreOptions({})
    out: list[Drift] = []
    target = config.maintenance.rescale.target_buckets
    for key, wanted in sorted(config.options.items(), key=lambda kv: kv[0] != "bucket"):
        actual = schema.options.get(key)
        effective = actual if actual is not None else defaults.get(key)
        if wanted == effective or (key == "bucket" and target is not None and effective == str(target)):
            continue
        if key == "bucket" and target is not None:
            remedy = (
                f"it is neither the creation count nor maintenance.rescale.target_buckets ({target}); "
                f"run the table's rescale (rewrite every partition into {target} buckets), or fix the config"
            )
        elif key == "bucket":
            remedy = (
                f"changing the bucket count is a rescale (rewrite every partition into {wanted} buckets); "
                "run the table's rescale, or set the config back"
            )
        else:
            remedy = "options apply when a table is created; alter the table, or set the config back"
        out.append(Drift(key, wanted, actual, remedy))
    for what in ("primary_keys", "partition_keys"):
        wanted_keys, actual_keys = list(getattr(config, what)), list(getattr(schema, what))
        if wanted_keys != actual_keys:
            out.append(
                Drift(
                    what,
                    ", ".join(wanted_keys),
                    ", ".join(actual_keys),
                    "keys are fixed when a table is created; recreate the table or fix the config",
                )
            )
    return out


def pending_rescale(config: TableConfig, table: FileStoreTable) -> list[str]:
    """The partitions ('dt=2024-01-01', '' for an unpartitioned table) not yet at
    ``maintenance.rescale.target_buckets`` (metadata only); none without a target or for a table
    that is not fixed-bucket."""
    target = config.maintenance.rescale.target_buckets
    if target is None or table.options.bucket < 1:
        return []
    plan = table.maintenance.plan_rescale(bucket=target)
    return ["/".join(f"{k}={v}" for k, v in unit.partition) for unit in plan.units]
