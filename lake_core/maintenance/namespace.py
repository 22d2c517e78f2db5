"""``table.maintenance``: the one namespace of every maintenance operation of a table.

Method names follow Paimon's procedures (``compact``, ``compact_manifest``, ``expire_snapshots``,
``expire_changelogs``, ``expire_partitions``, ``remove_orphan_files``, ``rollback_to``,
``rescale``). Each method is a thin, keyword-only front over the module that implements the
operation; the Dagster assets call exactly these names.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable
from typing import TYPE_CHECKING

from lake_core.compaction.job import CompactionJob, abort_compaction, commit_compaction, compact, compaction_job
from lake_core.compaction.plan import CompactionPlan, plan_compaction, run_unit
from lake_core.compaction.result import CompactionResult
from lake_core.compaction.rewrite import UnitOutcome
from lake_core.compaction.verify import CompactionVerification, verify_compaction
from lake_core.maintenance.consumers import ConsumerManager, Lease, acquire_lease, release_lease
from lake_core.maintenance.expire_changelogs import ExpireChangelogsResult, expire_changelogs
from lake_core.maintenance.expire_snapshots import ExpireSnapshotsResult, expire_snapshots
from lake_core.maintenance.health import DEFAULT_SMALL_FILE_BYTES, TableHealth, table_health
from lake_core.maintenance.manifest_compaction import CompactManifestResult, compact_manifest
from lake_core.maintenance.orphans import RemoveOrphanFilesResult, remove_orphan_files
from lake_core.maintenance.partitions import ExpirePartitionsResult, expire_partitions
from lake_core.maintenance.rescale import (
    PartitionRescaleResult,
    PreparedRescale,
    RescaleJob,
    RescalePlan,
    RescaleResult,
    _check_rescalable,
    abort_rescale,
    commit_rescale,
    plan_rescale,
    prepare_rescale_partition,
    rescale,
    rescale_job,
    rescale_partition,
    set_bucket_option,
)
from lake_core.maintenance.rescale_verify import RescaleVerification, verify_rescale
from lake_core.maintenance.rollback import RollbackResult, rollback_to
from lake_core.maintenance.tag_deletion import DeleteTagResult, delete_tags
from lake_core.maintenance.tag_snapshot import TagSnapshotResult, tag_snapshot
from lake_core.maintenance.tag_time import ExpireTagsResult, expire_tags

if TYPE_CHECKING:
    from lake_core.table import FileStoreTable


class TableMaintenance:
    """Maintenance operations of one table. Obtain it as ``table.maintenance``."""

    def __init__(self, table: FileStoreTable):
        self._table = table

    def __repr__(self) -> str:
        return f"TableMaintenance({self._table.identifier!r})"

    # Operations are added below, one section per implementing module.

    # -- compaction (lake_core.compaction) ----------------------------------------------------------
    def compact(
        self,
        *,
        full: bool = False,
        partitions=None,
        buckets: Iterable[int] | None = None,
        dry_run: bool = False,
        expire_records: bool = False,
        parallelism: int = 2,
        options=None,
        verify: bool = False,
        progress=None,
    ) -> CompactionResult:
        """Paimon's ``compact`` procedure for a primary-key table.

        ``full=True`` compacts every selected bucket to the top level; otherwise the universal
        picker decides per bucket (nothing to do is a valid outcome). ``partitions``: a dict or a
        list of dicts of partition values. ``buckets``: a list of bucket numbers, to plan only those
        buckets of the selected partitions (the other buckets' manifest entries are never decoded).
        ``expire_records=True`` rewrites exactly the buckets
        whose value statistics show records older than ``record-level.expire-time``. ``options``:
        dynamic options for this job only, as the procedure's ``options`` argument (planning
        options such as ``num-sorted-run.compaction-trigger`` and ``record-level.*``). One COMPACT
        snapshot; units made stale by a concurrent compaction are skipped and reported.
        ``verify=True``: each unit also computes the figures of the in-task check (what its merge
        read and dropped, and its written files read back), which ``result.check()`` compares
        without reading the table; off by default, as it makes each unit slower.
        ``progress(done, total)``: called as units finish (a progress bar).
        Returns a :class:`lake_core.compaction.CompactionResult`."""
        return compact(
            self._table.store,
            hooks=self._table,
            full=full,
            partitions=partitions,
            buckets=buckets,
            dry_run=dry_run,
            expire_records=expire_records,
            parallelism=parallelism,
            options=options,
            verify=verify,
            progress=progress,
        )

    def compaction_job(
        self,
        *,
        full: bool = False,
        partitions=None,
        buckets: Iterable[int] | None = None,
        expire_records: bool = False,
        options=None,
        dry_run: bool = False,
        verify: bool = False,
    ) -> CompactionJob:
        """Plan (metadata only) and return the compaction as a ``CompactionJob``, a
        ``DistributedJob``: ``units`` (one per (partition, bucket)), ``run_unit`` (anywhere),
        ``commit`` (once), ``abort``. ``lake_core.run_locally`` or ``jobs.tasks.run_job`` (Spark)
        runs it; ``compact`` is ``run_locally`` of it. Arguments as ``compact``."""
        return compaction_job(
            self._table.store,
            hooks=self._table,
            full=full,
            partitions=partitions,
            buckets=buckets,
            expire_records=expire_records,
            options=options,
            dry_run=dry_run,
            verify=verify,
        )

    # The parts of a distributed compaction one by one (``compaction_job`` holds them together):
    # the driver plans, each worker runs one unit, the driver commits every outcome once.
    def plan_compaction(
        self,
        *,
        full: bool = False,
        partitions=None,
        buckets: Iterable[int] | None = None,
        expire_records: bool = False,
        options=None,
        verify: bool = False,
    ) -> CompactionPlan:
        """Metadata only: a frozen, picklable ``CompactionPlan`` whose ``units`` are the work
        (one per (partition, bucket)); arguments as ``compact`` (``verify`` travels in each unit)."""
        return plan_compaction(
            self._table.store,
            full=full,
            partitions=partitions,
            buckets=buckets,
            expire_records=expire_records,
            options=options,
            verify=verify,
        )

    def compact_unit(self, *, unit) -> UnitOutcome:
        """Run one unit of a plan (in any process): writes its new files, commits nothing, and
        returns a picklable ``UnitOutcome`` (its commit message, row counters and, for a unit
        planned with ``verify``, its figures)."""
        return run_unit(self._table.store, unit)

    def commit_compaction(self, *, plan, outcomes, dry_run: bool = False) -> CompactionResult:
        """Commit ``outcomes`` (one per unit of ``plan``, in order) as one COMPACT snapshot. Units
        whose input files were compacted concurrently are skipped with the reason (their files
        deleted). Returns the ``CompactionResult``."""
        return commit_compaction(self._table.store, plan, outcomes, hooks=self._table, dry_run=dry_run)

    def abort_compaction(self, *, outcomes) -> None:
        """Delete the files of executed units that will not be committed (another unit failed)."""
        abort_compaction(self._table.store, outcomes)

    def verify_compaction(
        self,
        *,
        before_snapshot_id: int,
        after_snapshot_id: int,
        expiry_field: str | None = None,
        expiry_cutoff_s: int | None = None,
        expired_must_be_gone: bool = False,
    ) -> CompactionVerification:
        """Compare the table at two snapshots by key: same keys and rows, no deleted key back;
        with record expiry only expired records may go (and, if ``expired_must_be_gone``, none
        may stay). Returns a ``CompactionVerification`` (``passed``, ``problems``)."""
        return verify_compaction(
            self._table.store,
            before_snapshot_id=before_snapshot_id,
            after_snapshot_id=after_snapshot_id,
            expiry_field=expiry_field,
            expiry_cutoff_s=expiry_cutoff_s,
            expired_must_be_gone=expired_must_be_gone,
        )

    # -- snapshot expiry (expire_snapshots.py) ------------------------------------------------
    def expire_snapshots(
        self,
        *,
        retain_min: int | None = None,
        retain_max: int | None = None,
        older_than=None,
        max_deletes: int | None = None,
        dry_run: bool = False,
    ) -> ExpireSnapshotsResult:
        """Expire old snapshots as Paimon's ``expire_snapshots`` procedure does; unset arguments fall
        back to ``snapshot.num-retained.min/max``, ``snapshot.time-retained`` and
        ``snapshot.expire.limit``. ``older_than``: a datetime, or a timedelta (an age)."""
        return expire_snapshots(
            self._table,
            retain_min=retain_min,
            retain_max=retain_max,
            older_than=older_than,
            max_deletes=max_deletes,
            dry_run=dry_run,
        )

    # -- changelog expiry (expire_changelogs.py) ----------------------------------------------
    def expire_changelogs(
        self,
        *,
        retain_min: int | None = None,
        retain_max: int | None = None,
        older_than=None,
        max_deletes: int | None = None,
        dry_run: bool = False,
    ) -> ExpireChangelogsResult:
        """Delete long-lived changelogs (``changelog/changelog-N``) as Paimon's ``ExpireChangelogImpl``;
        unset arguments fall back to ``changelog.num-retained.min/max`` and
        ``changelog.time-retained``, then to the ``snapshot.*`` options."""
        return expire_changelogs(
            self._table,
            retain_min=retain_min,
            retain_max=retain_max,
            older_than=older_than,
            max_deletes=max_deletes,
            dry_run=dry_run,
        )

    # -- tags (tag_deletion.py) ----------------------------------------------------------------
    def delete_tag(self, *, name: str, dry_run: bool = False) -> DeleteTagResult:
        """Delete tag ``name`` and the files only it held (Java ``TagDeletion``); a
        ``DeleteTagResult``. ``dry_run``: what would be deleted, nothing is."""
        return delete_tags(self._table, [name], dry_run=dry_run)

    # -- tag time retention (tag_time.py) ------------------------------------------------------
    def expire_tags(self, *, older_than=None, dry_run: bool = False) -> ExpireTagsResult:
        """Delete tags whose ``tagTimeRetained`` (per tag, or ``tag.default-time-retained`` when
        created) has passed since their creation (Java ``TagTimeExpire``); with ``older_than`` (a
        local datetime) also every tag created before it."""
        return expire_tags(self._table, older_than=older_than, dry_run=dry_run)

    # -- scheduled tags (tag_snapshot.py) -------------------------------------------------------
    def tag_snapshot(
        self, *, name_format: str, num_retained: int | None = None, time_retained=None, now=None, dry_run: bool = False
    ) -> TagSnapshotResult:
        """Tag the latest snapshot ``now.strftime(name_format)`` (``now``: UTC by default), unless
        that tag exists; then delete the oldest tags whose names parse with ``name_format`` beyond
        ``num_retained``. ``time_retained`` (a timedelta) is the new tag's ``tagTimeRetained``.
        Returns a ``TagSnapshotResult``."""
        return tag_snapshot(
            self._table,
            name_format=name_format,
            num_retained=num_retained,
            time_retained=time_retained,
            now=now,
            dry_run=dry_run,
        )

    # -- consumers (consumers.py) ----------------------------------------------------------------
    @property
    def consumers(self) -> ConsumerManager:
        """Paimon's consumer files of this table (``consumer/consumer-<id>``)."""
        return ConsumerManager(self._table)

    # -- orphan files (orphans.py) -------------------------------------------------------------
    def remove_orphan_files(
        self, *, older_than=None, dry_run: bool = False, force: bool = False
    ) -> RemoveOrphanFilesResult:
        """Delete files no snapshot, tag or index references, older than ``older_than`` (a timedelta,
        default one day; below one hour only with ``force=True``). What is retained is read last
        under ``snapshot/.expire-lock``: a running expiry, tag deletion or rollback is waited for
        (a crashed one's lock taken over); one outlasting the lock's TTL skips the run."""
        return remove_orphan_files(
            self._table,
            older_than=_dt.timedelta(days=1) if older_than is None else older_than,
            dry_run=dry_run,
            force=force,
        )

    def acquire_lease(self, *, snapshot_id: int | None = None, holder: str, ttl=None) -> Lease:
        """Pin ``snapshot_id`` (default: the latest) until :meth:`release_lease` or ``ttl`` (default
        1 h) passes, for a reader whose work outlives one block (a queued Dagster run). Returns a
        :class:`lake_core.maintenance.consumers.Lease`; its ``consumer_id`` releases it."""
        return acquire_lease(self._table, snapshot_id, holder=holder, **({} if ttl is None else {"ttl": ttl}))[0]

    def release_lease(self, *, consumer_id: str) -> bool:
        """Release a lease taken with :meth:`acquire_lease` (False: it was already gone)."""
        return release_lease(self._table, consumer_id)

    # -- health (health.py) ----------------------------------------------------------------------
    def health(
        self, *, small_file_bytes: int | None = None, ttl_field: str | None = None, ttl=None, now_ms: int | None = None
    ) -> TableHealth:
        """The table's health from metadata only (snapshot hints, manifest list, manifests; no data
        file): sorted runs, small files and rows per bucket, snapshot and manifest counts, oldest
        snapshot age, TTL lag and bucket skew. ``small_file_bytes``: files below count as small
        (default 16 MiB). ``ttl_field``/``ttl``: a record-expiry rule (default: the table's
        ``record-level.*`` options). Returns a frozen :class:`lake_core.maintenance.health.TableHealth`."""
        return table_health(
            self._table,
            small_file_bytes=DEFAULT_SMALL_FILE_BYTES if small_file_bytes is None else small_file_bytes,
            ttl_field=ttl_field,
            ttl=ttl,
            now_ms=now_ms,
        )

    # -- manifest compaction (manifest_compaction.py) ------------------------------------------
    def compact_manifest(self, *, mode: str = "full", dry_run: bool = False) -> CompactManifestResult:
        """Fold every manifest of the latest snapshot into target-size ones (a COMPACT snapshot);
        ``mode="minor"`` merges only runs of small manifests, as each commit's own merge does."""
        return compact_manifest(self._table, mode=mode, dry_run=dry_run)

    # -- partition expiry (partitions.py) -----------------------------------------------------
    def expire_partitions(
        self,
        *,
        expiration_time,
        timestamp_formatter: str | None = None,
        timestamp_pattern: str | None = None,
        dry_run: bool = False,
    ) -> ExpirePartitionsResult:
        """Drop partitions whose time (parsed from their values) is older than ``expiration_time``
        (a timedelta or a duration like ``'7 d'``) in one OVERWRITE commit."""
        return expire_partitions(
            self._table,
            expiration_time=expiration_time,
            timestamp_formatter=timestamp_formatter,
            timestamp_pattern=timestamp_pattern,
            dry_run=dry_run,
        )

    # -- rollback (rollback.py) ----------------------------------------------------------------
    def rollback_to(self, *, snapshot_id: int | None = None, tag: str | None = None) -> RollbackResult:
        """Make snapshot ``snapshot_id`` or tag ``tag`` the latest state (Java ``RollbackHelper``):
        newer snapshots and tags go, then the files only they used. Stop writers first."""
        return rollback_to(self._table, snapshot_id=snapshot_id, tag=tag)

    # -- rescale (lake_core/maintenance/rescale.py) ------------------------------------------------
    def rescale(self, *, bucket: int, partitions=None, dry_run: bool = False, progress=None) -> RescaleResult:
        """Set the ``bucket`` option and rewrite the selected partitions (a list of
        ``{column: value}`` selectors; all when None) into ``bucket`` buckets, one verified
        OVERWRITE per partition (``progress(done, total)`` after each). Returns a ``RescaleResult``."""
        return rescale(self._table, bucket=bucket, partitions=partitions, dry_run=dry_run, progress=progress)

    def plan_rescale(self, *, bucket: int, partitions=None) -> RescalePlan:
        """The partitions a rescale to ``bucket`` would rewrite (metadata only): a ``RescalePlan``."""
        return plan_rescale(self._table, bucket=bucket, partitions=partitions)

    def rescale_partition(
        self, *, partition=None, bucket: int, commit_user: str | None = None, dry_run: bool = False
    ) -> PartitionRescaleResult:
        """Rewrite one partition into ``bucket`` buckets (the unit of a backfill). The table's
        ``bucket`` option is not changed here; ``rescale`` (or ``alter_table``) sets it."""
        return rescale_partition(
            self._table, partition=partition, bucket=bucket, commit_user=commit_user, dry_run=dry_run
        )

    def rescale_job(self, *, bucket: int, partitions=None, commit_user: str | None = None) -> RescaleJob:
        """Plan a rescale to ``bucket``, set the ``bucket`` option, and return the rescale as a
        ``RescaleJob``, a ``DistributedJob``: ``units`` (one per partition to rewrite),
        ``run_unit`` (prepares one partition anywhere), ``commit`` (ONE OVERWRITE of them all),
        ``abort``. ``partitions``: a backfill's partitions (``{column: value}`` for every partition
        column), each reported in the result, rewritten or with why it was skipped; None: all."""
        return rescale_job(self._table, bucket=bucket, partitions=partitions, commit_user=commit_user)

    # The parts of a distributed rescale one by one (``rescale_job`` holds them together): the
    # driver sets the option and plans, each worker prepares one partition, the driver commits
    # them all at once.
    def set_bucket(self, *, bucket: int) -> FileStoreTable:
        """Set the ``bucket`` option (a schema change when it differs) before partitions are
        rewritten; returns the table at its new schema."""
        return set_bucket_option(self._table, _check_rescalable(self._table, bucket))

    def prepare_rescale_partition(
        self, *, partition=None, bucket: int, dry_run: bool = False
    ) -> PreparedRescale | PartitionRescaleResult:
        """Rewrite one partition into new, verified, uncommitted files: a picklable
        ``PreparedRescale`` for ``commit_rescale``, or a ``PartitionRescaleResult`` saying why
        it was skipped (no data, already at ``bucket`` buckets, dry run)."""
        return prepare_rescale_partition(self._table, partition=partition, bucket=bucket, dry_run=dry_run)

    def commit_rescale(
        self,
        *,
        outcomes,
        bucket: int,
        previous_bucket: int,
        commit_user: str | None = None,
        started: float | None = None,
    ) -> RescaleResult:
        """Commit every prepared partition of ``outcomes`` as ONE OVERWRITE snapshot (conflicts
        fail cleanly and delete the new files) and return the operation's ``RescaleResult``."""
        return commit_rescale(
            self._table,
            outcomes,
            bucket=bucket,
            previous_bucket=previous_bucket,
            commit_user=commit_user,
            started=started,
        )

    def abort_rescale(self, *, outcomes) -> None:
        """Delete the files of prepared, uncommitted partitions (when another partition failed)."""
        abort_rescale(self._table, [o for o in outcomes if isinstance(o, PreparedRescale)])

    def verify_rescale(self, *, partitions, snapshot_id: int, bucket: int) -> RescaleVerification:
        """Re-read rescaled partitions before (``{'dt=...': snapshot read}``) and after
        (``snapshot_id``): rows, key and row checksums equal, files at ``bucket`` buckets.
        Returns a ``RescaleVerification``."""
        return verify_rescale(self._table, partitions=partitions, snapshot_id=snapshot_id, bucket=bucket)
