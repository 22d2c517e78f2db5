"""``table.maintenance``: the one namespace of every maintenance operation of a table.

Method names follow Paimon's procedures (``compact``, ``compact_manifest``, ``expire_snapshots``,
``expire_changelogs``, ``expire_partitions``, ``remove_orphan_files``, ``rollback_to``,
``rescale``). Each method is a thin, keyword-only front over the module that implements the
operation; the Dagster assets call exactly these names.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..table import FileStoreTable


class TableMaintenance:
    """Maintenance operations of one table. Obtain it as ``table.maintenance``."""

    def __init__(self, table: "FileStoreTable"):
        self._table = table

    def __repr__(self) -> str:
        return f"TableMaintenance({self._table.identifier!r})"

    # Operations are added below, one section per implementing module.

    # -- compaction (lake_core.compaction) ----------------------------------------------------------
    def compact(self, *, full: bool = False, partitions=None, dry_run: bool = False,
                expire_records: bool = False, parallelism: int = 2):
        """Paimon's ``compact`` procedure for a primary-key table.

        ``full=True`` compacts every selected bucket to the top level; otherwise the universal
        picker decides per bucket (nothing to do is a valid outcome). ``partitions``: a dict or a
        list of dicts of partition values. ``expire_records=True`` rewrites exactly the buckets
        whose value statistics show records older than ``record-level.expire-time``. One COMPACT
        snapshot; units made stale by a concurrent compaction are skipped and reported.
        Returns a :class:`lake_core.compaction.CompactionResult`."""
        from ..compaction.job import compact
        return compact(self._table, full=full, partitions=partitions, dry_run=dry_run,
                       expire_records=expire_records, parallelism=parallelism)

    # -- snapshot expiry (expire_snapshots.py) ------------------------------------------------
    def expire_snapshots(self, *, retain_min: int | None = None, retain_max: int | None = None,
                         older_than=None, max_deletes: int | None = None, dry_run: bool = False):
        """Expire old snapshots as Paimon's ``expire_snapshots`` procedure does; unset arguments fall
        back to ``snapshot.num-retained.min/max``, ``snapshot.time-retained`` and
        ``snapshot.expire.limit``. ``older_than``: a datetime, or a timedelta (an age)."""
        from .expire_snapshots import expire_snapshots
        return expire_snapshots(self._table, retain_min=retain_min, retain_max=retain_max,
                                older_than=older_than, max_deletes=max_deletes, dry_run=dry_run)

    # -- changelog expiry (expire_changelogs.py) ----------------------------------------------
    def expire_changelogs(self, *, retain_min: int | None = None, retain_max: int | None = None,
                          older_than=None, max_deletes: int | None = None, dry_run: bool = False):
        """Delete long-lived changelogs (``changelog/changelog-N``) as Paimon's ``ExpireChangelogImpl``;
        unset arguments fall back to ``changelog.num-retained.min/max`` and
        ``changelog.time-retained``, then to the ``snapshot.*`` options."""
        from .expire_changelogs import expire_changelogs
        return expire_changelogs(self._table, retain_min=retain_min, retain_max=retain_max,
                                 older_than=older_than, max_deletes=max_deletes, dry_run=dry_run)

    # -- tag time retention (tag_time.py) ------------------------------------------------------
    def expire_tags(self, *, older_than=None, dry_run: bool = False):
        """Delete tags whose ``tagTimeRetained`` (per tag, or ``tag.default-time-retained`` when
        created) has passed since their creation (Java ``TagTimeExpire``); with ``older_than`` (a
        local datetime) also every tag created before it."""
        from .tag_time import expire_tags
        return expire_tags(self._table, older_than=older_than, dry_run=dry_run)

    # -- consumers (consumers.py) ----------------------------------------------------------------
    @property
    def consumers(self):
        """Paimon's consumer files of this table (``consumer/consumer-<id>``)."""
        from .consumers import ConsumerManager
        return ConsumerManager(self._table)

    # -- orphan files (orphans.py) -------------------------------------------------------------
    def remove_orphan_files(self, *, older_than=None, dry_run: bool = False, force: bool = False):
        """Delete files no snapshot, tag or index references, older than ``older_than`` (a timedelta,
        default one day; below one hour only with ``force=True``)."""
        import datetime as _dt
        from .orphans import remove_orphan_files
        return remove_orphan_files(self._table, older_than=_dt.timedelta(days=1) if older_than is None
                                   else older_than, dry_run=dry_run, force=force)

    # -- manifest compaction (manifest_compaction.py) ------------------------------------------
    def compact_manifest(self, *, dry_run: bool = False):
        """Fold every manifest of the latest snapshot into target-size ones (a COMPACT snapshot)."""
        from .manifest_compaction import compact_manifest
        return compact_manifest(self._table, dry_run=dry_run)

    # -- partition expiry (partitions.py) -----------------------------------------------------
    def expire_partitions(self, *, expiration_time, timestamp_formatter: str | None = None,
                          timestamp_pattern: str | None = None, dry_run: bool = False):
        """Drop partitions whose time (parsed from their values) is older than ``expiration_time``
        (a timedelta or a duration like ``'7 d'``) in one OVERWRITE commit."""
        from .partitions import expire_partitions
        return expire_partitions(self._table, expiration_time=expiration_time,
                                 timestamp_formatter=timestamp_formatter, timestamp_pattern=timestamp_pattern,
                                 dry_run=dry_run)

    # -- rollback (rollback.py) ----------------------------------------------------------------
    def rollback_to(self, *, snapshot_id: int | None = None, tag: str | None = None):
        """Make snapshot ``snapshot_id`` or tag ``tag`` the latest state (Java ``RollbackHelper``):
        newer snapshots and tags go, then the files only they used. Stop writers first."""
        from .rollback import rollback_to
        return rollback_to(self._table, snapshot_id=snapshot_id, tag=tag)

    # -- rescale (lake_core/maintenance/rescale.py) ------------------------------------------------
    def rescale(self, *, bucket: int, partitions=None, dry_run: bool = False):
        """Set the ``bucket`` option and rewrite the selected partitions (a list of
        ``{column: value}`` selectors; all when None) into ``bucket`` buckets, one verified
        OVERWRITE per partition. Returns a ``RescaleResult``."""
        from .rescale import rescale
        return rescale(self._table, bucket=bucket, partitions=partitions, dry_run=dry_run)

    def plan_rescale(self, *, bucket: int, partitions=None):
        """The partitions a rescale to ``bucket`` would rewrite (metadata only): a ``RescalePlan``."""
        from .rescale import plan_rescale
        return plan_rescale(self._table, bucket=bucket, partitions=partitions)

    def rescale_partition(self, *, partition=None, bucket: int, commit_user: str | None = None,
                          dry_run: bool = False):
        """Rewrite one partition into ``bucket`` buckets (the unit of a backfill). The table's
        ``bucket`` option is not changed here; ``rescale`` (or ``alter_table``) sets it."""
        from .rescale import rescale_partition
        return rescale_partition(self._table, partition=partition, bucket=bucket, commit_user=commit_user,
                                 dry_run=dry_run)
