"""Atomic, idempotent, conflict-checked commits (Java ``FileStoreCommitImpl``).

A commit turns CommitMessages into manifest entries and one or two snapshots (APPEND/OVERWRITE
for new data, then COMPACT for compaction results). ``snapshot-N`` is created exclusively; a lost
race re-plans against the new latest snapshot, with backoff.

Safety rules beyond Java's ``FileStoreCommitImpl`` conflict checks:

* Idempotency keys on the commit's identity *and* content: a retry of (user, identifier) is
  "already committed" only when the landed snapshot added the same files; the same identity with
  other files raises ``CommitIdentityError``. Looking for it walks back from the latest snapshot
  and stops at the user's previous commit with a smaller identifier (Java's ``filterCommitted``).
* Sequence ranges: a bucket's sequence numbers continue from the writer's base snapshot, so a
  commit whose new files are numbered at or below files another commit added to the bucket since
  that base would not win the merge although it lands later (and a compaction that dropped deletes
  could no longer shadow such files). Both raise ``SequenceConflictError`` before anything lands.
* The table handle must still describe the table on storage (not dropped, re-created or evolved).
* Conflict checks skip a snapshot only when it expired; one that cannot be read (a transient
  storage error, a corrupt file) refuses the commit with ``CommitFailedError``, one removed from the
  middle of the history with ``RollbackConflictError``.
* Every file a commit adds must be on storage with its recorded size (``file_check``), else
  ``CommitFilesMissingError`` (e.g. orphan removal deleted the files of a late commit).
* A created snapshot counts only once its parent is confirmed (``lake_core.snapshot.publish``): a
  commit whose base was removed by ``rollback_to`` meanwhile withdraws it, ``RollbackConflictError``.
"""

from __future__ import annotations

import itertools
import logging
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from lake_core.bucket.hash_index import HASH_INDEX, as_delete
from lake_core.commit.file_check import check_new_files
from lake_core.commit.messages import CommitMessage
from lake_core.commit.uncommitted import remove_uncommitted
from lake_core.deletion_vectors.index_file import DV_INDEX
from lake_core.errors import (
    CommitConflictError,
    CommitFailedError,
    CommitIdentityError,
    InvalidOptionError,
    LakeError,
    PartialCommitError,
    RollbackConflictError,
    SequenceConflictError,
    SnapshotNotFoundError,
    StalePlanError,
)
from lake_core.format.binary_row.reader import deserialize_row
from lake_core.format.float_order import java_order_key
from lake_core.format.gc_pause import paused_gc
from lake_core.manifest.merger import merge_manifests
from lake_core.manifest.metadata import FileKind, IndexManifestEntry, ManifestEntry
from lake_core.paths import FileNamer
from lake_core.schema.partition_selector import PartitionSelector, partition_text
from lake_core.snapshot.publish import confirm_parent
from lake_core.snapshot.snapshot import CommitKind, Snapshot

if TYPE_CHECKING:
    from lake_core.commit.hooks import TableHooks
    from lake_core.store import FileStore

log = logging.getLogger(__name__)

DIGEST_PROPERTY = "lake_core.content-digest"  # snapshot property: content of a write_arrow commit
BATCH_IDENTIFIER = 2**63 - 1  # Java Long.MAX_VALUE: what batch jobs commit with
WRITER_VERSION = "lake_core-0.1"


_last_identifier = 0
_identifier_lock = threading.Lock()


def check_identity_arguments(store: FileStore, user, identifier) -> None:
    """The snapshot stores both as typed JSON fields (``commitUser`` string, ``commitIdentifier``
    long): anything else would land as a snapshot no reader accepts."""
    if not isinstance(identifier, int) or isinstance(identifier, bool) or not -(2**63) <= identifier < 2**63:
        raise InvalidOptionError(
            f"commit identifier {identifier!r} for {store.identifier} must be an integer "
            "in Java's long range; nothing was committed"
        )
    if not isinstance(user, str) or not user.strip():
        raise InvalidOptionError(
            f"commit user {user!r} for {store.identifier} must be a non-empty string; nothing was committed"
        )


def new_commit_identifier() -> int:
    """A fresh commit identifier for a one-off commit: increasing within the process (wall-clock
    nanoseconds), so identifiers differ per logical commit as Paimon's streaming commits do."""
    global _last_identifier
    with _identifier_lock:
        _last_identifier = max(time.time_ns(), _last_identifier + 1)
        return _last_identifier


@dataclass(frozen=True)
class _CommitContext:
    """What one call decided before its snapshots are attempted: every attempt and every check
    reads it, none changes it (a commit object keeps no state between or during its calls)."""

    identifier: int
    properties: dict | None = None  # stored in the snapshot (with the digest, if any)
    new_identity: bool = False  # the caller made the identifier up: it cannot have landed before
    digest: str | None = None  # the content of a write_arrow commit: a landed identity with it is ours
    index_drop: Callable[[bytes], bool] | None = None  # overwrite: partitions losing their HASH and DV files
    writer_base: int | None = None  # dynamic modes: the snapshot the bucket assignment was based on
    writer_partitions: frozenset[bytes] = frozenset()
    # the checks memoize the snapshots they read (compare=False: a cache, not a decision)
    sequence_checks: _SequenceChecks | None = field(default=None, compare=False)
    bundled_compaction: tuple[ManifestEntry, ...] = ()  # first-row: what the COMPACT snapshot that follows deletes

    def for_compaction(self) -> _CommitContext:
        """The context of the same call's COMPACT snapshot: the overwrite, the writer's bucket
        assignment and the bundled compaction belong to its data snapshot."""
        return replace(self, index_drop=None, writer_base=None, bundled_compaction=())


class FileStoreCommit:
    def __init__(self, store: FileStore, *, hooks: TableHooks, commit_user: str | None = None):
        """``hooks``: what a commit calls above itself (expiry after it lands, a lost compaction's
        redo), implemented by the table."""
        self.store = store
        self.hooks = hooks
        self.explicit_user = commit_user is not None
        self.commit_user = commit_user or str(uuid.uuid4())
        self.snapshots = store.snapshot_manager
        self.manifests = store.manifest_store
        self.options = store.options

    # -- public -------------------------------------------------------------------------------
    def commit(
        self,
        messages: Sequence[CommitMessage],
        identifier: int = BATCH_IDENTIFIER,
        overwrite: bool | dict | Callable[[bytes], bool] | None = None,
        properties: dict | None = None,
        new_identity: bool = False,
        digest: str | None = None,
    ) -> list[Snapshot]:
        """Commit the messages; returns the snapshots created (or found already committed).

        ``new_identity``: the caller made ``identifier`` up for this commit, so it cannot have
        landed before and no earlier snapshot needs reading. ``digest``: the content of the
        commit, stored in the snapshot; a landed (user, identifier) is the same commit when its
        digest matches (else when it holds the same files)."""
        with paused_gc():  # large commits allocate entries by the hundred thousand, and free none
            return self._commit(messages, identifier, overwrite, properties, new_identity, digest)

    def _commit(
        self,
        messages: Sequence[CommitMessage],
        identifier: int,
        overwrite: bool | dict | Callable[[bytes], bool] | None,
        properties: dict | None,
        new_identity: bool,
        digest: str | None,
    ) -> list[Snapshot]:
        check_identity_arguments(self.store, self.commit_user, identifier)
        messages = [m for m in messages if not m.is_empty()]
        self.store.check_identity()
        out: list[Snapshot] = []
        data_entries, changelog, index_changes, compact_entries, compact_changelog = self._entries(messages)
        # Deletion vectors come from compaction: they land with the COMPACT snapshot, as in Java
        dv_changes = [c for c in index_changes if c.index_type == DV_INDEX]
        index_changes = [c for c in index_changes if c.index_type != DV_INDEX]
        bases = [m.base_snapshot_id for m in messages if m.base_snapshot_id is not None]
        is_overwrite = overwrite is not None and overwrite is not False
        data_ids = {d.identifier() for d in data_entries}
        index_drop = self._partition_matcher(overwrite) if is_overwrite else None
        ctx = _CommitContext(
            identifier=identifier,
            properties={**(properties or {}), DIGEST_PROPERTY: digest} if digest is not None else properties,
            new_identity=new_identity,
            digest=digest,
            index_drop=index_drop,
            writer_base=min(bases) if bases and self.store.bucket_mode in ("dynamic", "cross-partition") else None,
            writer_partitions=frozenset(m.partition for m in messages if m.base_snapshot_id is not None),
            sequence_checks=_SequenceChecks.of(messages) if self.store.schema.primary_keys else None,
            # First-row writers compact their new files up in the same commit (second snapshot):
            # check before the data lands that the compaction's inputs are still live.
            bundled_compaction=tuple(
                e for e in compact_entries if e.kind == FileKind.DELETE and e.identifier() not in data_ids
            ),
        )
        if data_entries or changelog or index_changes or is_overwrite:
            kind = CommitKind.OVERWRITE if is_overwrite else CommitKind.APPEND
            build = (
                self._overwrite_builder(data_entries, index_drop)
                if index_drop is not None
                else (lambda _l: data_entries)
            )
            out.append(
                self._commit_with_retry(
                    ctx,
                    kind,
                    build,
                    changelog,
                    index_changes,
                    check_conflicts=is_overwrite or any(e.kind == FileKind.DELETE for e in data_entries),
                    fingerprint=data_entries,
                )
            )
        if compact_entries or dv_changes:
            compaction = ctx.for_compaction()
            try:
                # changelog produced by compaction (lookup, full-compaction) belongs to the COMPACT
                # snapshot, as Java's compactIncrement.changelogFiles()
                out.append(
                    self._commit_with_retry(
                        compaction,
                        CommitKind.COMPACT,
                        lambda _l: compact_entries,
                        compact_changelog,
                        dv_changes,
                        check_conflicts=True,
                        fingerprint=compact_entries,
                    )
                )
            except (CommitConflictError, CommitFailedError) as e:
                if not out:
                    raise
                out += self._recompact_after_landing(compaction, messages, out, e)
        if out:
            self.hooks.after_commit()  # expiry as Paimon runs it, unless 'write-only'
        return out

    def _recompact_after_landing(
        self, ctx: _CommitContext, messages, landed: list[Snapshot], cause: Exception
    ) -> list[Snapshot]:
        """The data snapshot landed but its compaction lost against another commit. For engines
        whose level-0 files are invisible (first-row) the rows must not stay hidden: compact the
        buckets again at the latest snapshot (bounded). Otherwise, or if that keeps failing,
        report truthfully that the data landed and what did not."""
        recompact_buckets = self.hooks.recompact_buckets  # compaction sits above commit
        buckets = {(m.partition, m.bucket, m.total_buckets) for m in messages if m.has_compaction}
        error = cause
        if not self.store.level0_hidden:
            # Level 0 is readable: the writer's inline compaction is an optimization. Drop it, as a
            # Java writer that restarts would; the next compaction of the bucket redoes it.
            log.warning(
                "%s: data committed as snapshot %d; its inline compaction lost to a concurrent commit and "
                "was dropped: %s",
                self.store.identifier,
                landed[-1].id,
                cause,
            )
            remove_uncommitted(
                self.store,
                [
                    CommitMessage(
                        m.partition,
                        m.bucket,
                        m.total_buckets,
                        compact_before=m.compact_before,
                        compact_after=m.compact_after,
                        compact_changelog=m.compact_changelog,
                    )
                    for m in messages
                ],
            )
            return []
        if self.store.level0_hidden:
            # a full compaction at the latest snapshot drops nothing it must keep
            redo_ctx = replace(ctx, sequence_checks=None)
            for _ in range(3):
                latest = self.snapshots.latest()
                redo = recompact_buckets(latest, buckets)
                entries, redo_changelog = self._entries(redo)[3:]
                if not entries:
                    return []
                try:
                    return [
                        self._commit_with_retry(
                            redo_ctx,
                            CommitKind.COMPACT,
                            lambda _l: entries,
                            redo_changelog,
                            [],
                            check_conflicts=True,
                            fingerprint=entries,
                        )
                    ]
                except (CommitConflictError, CommitFailedError) as e:
                    remove_uncommitted(self.store, redo)
                    error = e
        where = ", ".join(f"bucket {b} of partition {self._partition_desc(p)}" for p, b, _n in sorted(buckets))
        raise PartialCommitError(
            f"commit to {self.store.identifier} landed as snapshot {landed[-1].id} (your data is committed), but "
            f"its compaction of {where} did not ({error}). For merge-engine 'first-row' those rows stay invisible "
            "to batch reads until the next write or compaction of that bucket compacts them; do not re-send the "
            "data",
            landed,
        )

    def commit_overwrite_entries(
        self,
        entries: list[ManifestEntry],
        validate: Callable[[Snapshot | None], None],
        identifier: int = BATCH_IDENTIFIER,
        properties: dict | None = None,
    ) -> Snapshot:
        """One OVERWRITE snapshot of exactly ``entries``. ``validate(latest)`` runs on each attempt
        and raises ``CommitConflictError`` when the data the entries rewrite changed since it was
        read (maintenance rewrites such as a bucket rescale)."""

        def build(latest):
            validate(latest)
            return entries

        return self._commit_with_retry(
            _CommitContext(identifier, properties),
            CommitKind.OVERWRITE,
            build,
            [],
            [],
            check_conflicts=True,
            fingerprint=entries,
        )

    # -- building entries ---------------------------------------------------------------------
    @staticmethod
    def _entries(
        messages: Iterable[CommitMessage],
    ) -> tuple[
        list[ManifestEntry], list[ManifestEntry], list[IndexManifestEntry], list[ManifestEntry], list[ManifestEntry]
    ]:
        data: list[ManifestEntry] = []
        changelog: list[ManifestEntry] = []
        index: list[IndexManifestEntry] = []
        compact: list[ManifestEntry] = []
        compact_changelog: list[ManifestEntry] = []
        for m in messages:
            for f in m.deleted_files:
                data.append(ManifestEntry(FileKind.DELETE, m.partition, m.bucket, m.total_buckets, f))
            for f in m.new_files:
                data.append(ManifestEntry(FileKind.ADD, m.partition, m.bucket, m.total_buckets, f))
            for f in m.changelog_files:
                changelog.append(ManifestEntry(FileKind.ADD, m.partition, m.bucket, m.total_buckets, f))
            for f in m.compact_changelog:
                compact_changelog.append(ManifestEntry(FileKind.ADD, m.partition, m.bucket, m.total_buckets, f))
            for f in m.compact_before:
                compact.append(ManifestEntry(FileKind.DELETE, m.partition, m.bucket, m.total_buckets, f))
            for f in m.compact_after:
                compact.append(ManifestEntry(FileKind.ADD, m.partition, m.bucket, m.total_buckets, f))
            index.extend(m.deleted_index_files)
            index.extend(m.new_index_files)
        return data, changelog, index, compact, compact_changelog

    def _partition_matcher(self, overwrite: bool | dict | Callable[[bytes], bool] | None) -> Callable[[bytes], bool]:
        if callable(overwrite):  # a predicate over serialized partitions (partition expiry drops several)
            return overwrite
        spec = overwrite if isinstance(overwrite, dict) else {}
        # an overwrite may name a partition that holds nothing yet: matched, never required to match
        selector = PartitionSelector.of(self.store.schema, spec, table=self.store.identifier, operation="overwrite")
        if selector is None:  # every partition (not for a dict, but as ``of`` documents None)
            return lambda _partition: True
        return lambda partition: selector.matches(self.manifests.partition_values(partition))

    def _overwrite_builder(self, new_entries: list[ManifestEntry], matches: Callable[[bytes], bool]) -> Callable:
        def build(latest: Snapshot | None) -> list[ManifestEntry]:
            deletes = [
                ManifestEntry(FileKind.DELETE, e.partition, e.bucket, e.total_buckets, e.file)
                for e in self.manifests.live_entries(latest)
                if matches(e.partition)
            ]
            return deletes + list(new_entries)

        return build

    # -- the retry loop -----------------------------------------------------------------------
    def _commit_with_retry(
        self,
        ctx: _CommitContext,
        kind: CommitKind,
        build: Callable,
        changelog,
        index_changes,
        *,
        check_conflicts: bool,
        fingerprint: list[ManifestEntry],
    ) -> Snapshot:
        opts = self.options
        max_retries = opts.commit_max_retries
        wait_ms = opts.commit_min_retry_wait_ms
        max_wait = opts.commit_max_retry_wait_ms
        timeout = opts.commit_timeout_ms
        started = time.monotonic()
        # Only a caller-chosen identity can have landed before this call: look back for it once.
        # The first attempt's latest snapshot is where that look starts (one read, not two: each
        # is a round trip or two on object storage).
        latest = self.snapshots.latest()
        checked_up_to: int | None = (
            (latest.id if latest else 0) if (not self.explicit_user or ctx.new_identity) else None
        )
        attempt = 0
        while True:
            if attempt:
                latest = self.snapshots.latest()
            done = self._already_committed(ctx, kind, latest, checked_up_to, fingerprint)
            if done is not None:
                log.info(
                    "commit of %s (user %s, identifier %s) was already committed as snapshot %d",
                    kind.value,
                    self.commit_user,
                    ctx.identifier,
                    done.id,
                )
                return done
            if attempt == 0:  # after the idempotency check: a landed commit's files may be compacted away since
                check_new_files(
                    self.store,
                    list(fingerprint) + list(changelog),
                    index_changes,
                    describe_partition=self._partition_desc,
                )
            checked_up_to = latest.id if latest else 0
            entries = build(latest)
            if check_conflicts:
                self._check_conflicts(latest, entries, kind)
            elif kind == CommitKind.APPEND:
                self._fixed_bucket_append_check(latest, entries)
            if ctx.bundled_compaction:
                self._check_bundled_compaction(latest, ctx.bundled_compaction)
            if index_changes:
                self._check_index_conflicts(latest, index_changes, ctx.index_drop)
            if ctx.writer_base is not None:
                self._check_writer_base(latest, ctx.writer_base, ctx.writer_partitions)
            if ctx.sequence_checks is not None:  # after the more specific dynamic-bucket checks
                ctx.sequence_checks.check(self, latest, kind)
            snapshot, written = self._write_snapshot_files(ctx, kind, latest, entries, changelog, index_changes)
            try:
                created = self.snapshots.try_create(snapshot, hint=False)
            except Exception:
                # Outcome uncertain: the snapshot may exist. Do not clean up; re-check on retry.
                written = []
                created = self._landed_as_ours(snapshot)
                if not created and attempt >= max_retries:
                    raise
            if created:
                try:  # a rollback_to may have removed ``latest`` meanwhile (see lake_core.snapshot.publish)
                    confirm_parent(self.snapshots, snapshot, parent=latest, table=self.store.identifier)
                except RollbackConflictError:
                    self._delete(written)  # withdrawn: nobody references them
                    raise
                self.snapshots.commit_latest_hint(snapshot.id)
                log.info("committed snapshot %d (%s): %d entries", snapshot.id, kind.value, len(entries))
                return snapshot
            self._delete(written)  # lost the race: these manifests are referenced by nobody
            attempt += 1
            elapsed_ms = (time.monotonic() - started) * 1000
            if attempt > max_retries or (timeout is not None and elapsed_ms > timeout):
                raise CommitFailedError(
                    f"commit to {self.store.identifier} failed after {attempt} attempts: other committers kept "
                    f"creating snapshot {snapshot.id} first; nothing was committed. Raise 'commit.max-retries' "
                    f"(now {max_retries}) or retry the job"
                )
            time.sleep(random.uniform(0.5, 1.0) * wait_ms / 1000)
            wait_ms = min(wait_ms * 2, max_wait)

    def _delete(self, paths: Iterable[str]) -> None:
        for path in paths:
            self.store.fileio.delete(path)

    def _landed_as_ours(self, snapshot: Snapshot) -> bool:
        """After an exclusive create that raised (a lost reply): whether ``snapshot-N`` is the one we
        wrote. A file that cannot be read now is no verdict either way: False, and the next attempt
        reads the table again, where the idempotency check recognises our own snapshot (or the
        read error surfaces; neither path deletes a file the snapshot may reference)."""
        try:
            landed = self.snapshots.read_fresh(snapshot.id)
        except (OSError, LakeError) as e:
            log.warning(
                "%s: could not read back snapshot %d after its create failed: %s", self.store.identifier, snapshot.id, e
            )
            return False
        return landed is not None and landed.uuid == snapshot.uuid

    def _snapshot_to_check(self, sid: int) -> Snapshot | None:
        """Snapshot ``sid`` for a conflict check; None only when it expired (nothing is left to compare
        with). Skipping a snapshot that merely could not be read would let a conflicting commit land,
        so anything else refuses the commit, before anything was written."""
        try:
            return self.snapshots.get_unless_expired(sid)
        except SnapshotNotFoundError:
            raise RollbackConflictError(
                f"commit to {self.store.identifier}: snapshot {sid} was removed while this commit checked the "
                "snapshots since its writer started (a rollback_to, or a deletion by hand); nothing was committed "
                "— write the data again against the latest snapshot"
            ) from None
        except (OSError, LakeError) as e:
            raise CommitFailedError(
                f"commit to {self.store.identifier}: could not read {self.store.paths.snapshot(sid)} to check this "
                f"commit for conflicts ({type(e).__name__}: {e}); nothing was committed — retry the commit once "
                "storage answers"
            ) from e

    def _already_committed(
        self,
        ctx: _CommitContext,
        kind: CommitKind,
        latest: Snapshot | None,
        checked_up_to: int | None,
        fingerprint: list[ManifestEntry],
    ) -> Snapshot | None:
        """The snapshot newer than ``checked_up_to`` in which this commit already landed, if any.

        A snapshot of this (user, identifier, kind) counts only if it holds the same files;
        otherwise the identity was reused for other data: ``CommitIdentityError``. Identifiers
        increase per user (Paimon's convention), so the walk stops at the user's first snapshot
        with a smaller identifier instead of reading every snapshot of the table."""
        if latest is None:
            return None
        s = self.snapshots.find_commit(
            commit_user=self.commit_user,
            identifier=ctx.identifier,
            kind=kind,
            newer_than=checked_up_to or 0,
            up_to=latest.id,
        )
        if s is None or self._same_files(s, kind, fingerprint, ctx.digest):
            return s
        raise CommitIdentityError(
            f"commit user '{self.commit_user}' with identifier {ctx.identifier} already committed snapshot "
            f"{s.id} ({kind.value}) of {self.store.identifier} with other files; nothing was committed. "
            "A retry must re-send the same commit messages; new data needs a new identifier (or "
            "another commit user)"
        )

    def _same_files(
        self, landed: Snapshot, kind: CommitKind, fingerprint: list[ManifestEntry], digest: str | None
    ) -> bool:
        """Whether ``landed`` added (and removed) exactly the files of ``fingerprint``. An
        overwrite's removals depend on the table when it landed, so only its additions count.
        With a content digest, the digest decides."""
        if digest is not None:
            return (landed.properties or {}).get(DIGEST_PROPERTY) == digest

        def ids(entries):
            return {
                (e.kind, e.partition, e.bucket, e.file.file_name)
                for e in entries
                if kind != CommitKind.OVERWRITE or e.kind == FileKind.ADD
            }

        return ids(self.manifests.delta_entries(landed)) == ids(fingerprint)

    def _check_bundled_compaction(self, latest: Snapshot | None, bundled: Sequence[ManifestEntry]) -> None:
        live = {e.identifier() for e in self.manifests.live_entries(latest)}
        gone = [e for e in bundled if e.identifier() not in live]
        if gone:
            e = gone[0]
            raise StalePlanError(
                f"bucket {e.bucket} of partition {self._partition_desc(e.partition)} of {self.store.identifier} was "
                f"compacted by another commit since this write was planned ({e.file.file_name} is gone), so the "
                "compaction that makes this write visible cannot land; nothing was committed — write the data "
                "again against the latest snapshot"
            )

    # -- conflicts (Java FileStoreCommitImpl.noConflictsOrFail) --------------------------------
    def _check_conflicts(self, latest: Snapshot | None, entries: list[ManifestEntry], kind: CommitKind) -> None:
        live_ids = self.manifests.live_files(latest)
        live = list(live_ids.values())
        for e in entries:
            if e.kind == FileKind.DELETE and e.identifier() not in live_ids:
                raise CommitConflictError(
                    f"file deletion conflict in {self.store.identifier}: {e.file.file_name} "
                    f"(bucket {e.bucket}) is no longer live (another job compacted or overwrote it); "
                    "nothing was committed — re-run the job against the latest snapshot"
                )
        if kind != CommitKind.OVERWRITE:
            self._check_total_buckets(live, entries)
        if self.store.schema.primary_keys:
            self._check_lsm_overlap(live, entries)

    def _check_total_buckets(self, live: list[ManifestEntry], entries: list[ManifestEntry]) -> None:
        """A partition keeps its bucket count until an OVERWRITE (a rescale) rewrites it: a writer
        that computed buckets with another count must not mix files into it (Java
        ``ConflictDetection``: "Total buckets of partition ... changed")."""
        buckets_by_partition: dict[bytes, int] = {}
        for e in live:
            if e.total_buckets > 0:
                buckets_by_partition.setdefault(e.partition, e.total_buckets)
        for e in entries:
            have = buckets_by_partition.get(e.partition)
            if e.kind == FileKind.ADD and e.total_buckets > 0 and have is not None and have != e.total_buckets:
                raise CommitConflictError(
                    f"total buckets of partition {self._partition_desc(e.partition)} of {self.store.identifier} "
                    f"changed from {have} to {e.total_buckets} without overwrite (the partition was rescaled while "
                    f"this job wrote it with {e.total_buckets} buckets); nothing was committed — re-run the job, "
                    f"it will write the partition's current {have} buckets"
                )

    def _fixed_bucket_append_check(self, latest: Snapshot | None, entries: list[ManifestEntry]) -> None:
        """APPEND commits skip the full conflict check, but a fixed-bucket partition may have been
        rescaled since the writer chose its bucket count: compare with the partitions' live files."""
        touched = {e.partition for e in entries if e.kind == FileKind.ADD and e.total_buckets > 0}
        if latest is None or not touched:
            return
        live = [e for e in self.manifests.live_entries(latest) if e.partition in touched]
        self._check_total_buckets(live, entries)

    def _check_index_conflicts(
        self, latest: Snapshot | None, changes: list[IndexManifestEntry], drop: Callable[[bytes], bool] | None
    ) -> None:
        """Dynamic bucket mode: a HASH ADD is a complete new index of its (partition, bucket) and
        replaces exactly the file the writer loaded (its DELETE in the same commit), or nothing. If
        another job changed that bucket's index since, the writer assigned buckets from a stale
        index and could duplicate keys: fail (Java needs a single writer per table here)."""
        live_index = None
        for c in changes:
            if c.index_type == DV_INDEX and c.kind == FileKind.DELETE:
                if live_index is None:
                    live_index = {e.file_name for e in self.manifests.index_entries(latest)}
                if c.file_name not in live_index:
                    raise CommitConflictError(
                        f"deletion-vector conflict in {self.store.identifier}: the DV index file {c.file_name} of "
                        f"bucket {c.bucket} this compaction replaces was already replaced by another commit; "
                        "nothing was committed, run the compaction again"
                    )
        hash_changes = [c for c in changes if c.index_type == HASH_INDEX]
        if not hash_changes:
            return
        current: dict[tuple[bytes, int], set[str]] = {}
        for e in self.manifests.index_entries(latest):
            if e.index_type == HASH_INDEX:
                current.setdefault((e.partition, e.bucket), set()).add(e.file_name)
        expected: dict[tuple[bytes, int], set[str]] = {}
        added: dict[tuple[bytes, int], str] = {}
        for c in hash_changes:
            key = (c.partition, c.bucket)
            if c.kind == FileKind.DELETE:
                expected.setdefault(key, set()).add(c.file_name)
            elif key in added:
                raise CommitConflictError(
                    f"HASH index conflict in {self.store.identifier}: two writers of one commit both added keys "
                    f"to bucket {c.bucket} of partition {self._partition_desc(c.partition)}; a dynamic-bucket table "
                    "needs one writer per partition — nothing was committed"
                )
            else:
                added[key] = c.file_name
        for key in set(expected) | set(added):
            if drop is not None and drop(key[0]):
                continue  # overwritten: the old index goes regardless
            have = current.get(key, set())
            want = expected.get(key, set())
            if have != want:
                raise CommitConflictError(
                    f"dynamic bucket conflict in {self.store.identifier}: the HASH index of bucket {key[1]} of "
                    f"partition {self._partition_desc(key[0])} changed since this job loaded it (another job "
                    "wrote new keys concurrently); committing could store a key in two buckets, so nothing was "
                    "committed — re-run the job against the latest snapshot (Paimon allows one writer job per "
                    "dynamic-bucket table)"
                )

    def _check_writer_base(self, latest: Snapshot | None, base: int, partitions: frozenset[bytes]) -> None:
        """Dynamic bucket modes: the writer assigned buckets from the table as of its base snapshot.
        Cross-partition upsert: no other job may have written data since (the writer would not know
        where those keys live). Dynamic mode: no other job may have overwritten a partition this
        commit writes (its keys' buckets changed). Compactions never move keys."""
        if latest is None or latest.id <= base:
            return
        cross = self.store.bucket_mode == "cross-partition"
        for sid in range(latest.id, base, -1):
            s = self._snapshot_to_check(sid)
            if s is None:
                break  # expired, and every older one too
            if s.commit_kind == CommitKind.COMPACT:
                continue
            if cross:
                raise CommitConflictError(
                    f"cross-partition upsert conflict in {self.store.identifier}: snapshot {sid} "
                    f"({s.commit_kind.value} by {s.commit_user}) was committed after snapshot {base}, from which "
                    "this job built its key index, so a key could end up in two partitions; nothing was "
                    "committed — re-run the job (Paimon allows one writer job per cross-partition table)"
                )
            if s.commit_kind == CommitKind.OVERWRITE:
                touched = {e.partition for e in self.manifests.delta_entries(s)} & partitions
                if touched:
                    raise CommitConflictError(
                        f"dynamic bucket conflict in {self.store.identifier}: snapshot {sid} overwrote partition "
                        f"{self._partition_desc(next(iter(touched)))} after snapshot {base}, from which this job "
                        "assigned buckets, so a key could end up in two buckets; nothing was committed — re-run "
                        "the job against the latest snapshot"
                    )

    def _partition_desc(self, partition: bytes) -> str:
        names = self.store.schema.partition_keys
        return partition_text(names, self.manifests.partition_values(partition)) if names else "(unpartitioned)"

    def _check_lsm_overlap(self, live: list[ManifestEntry], entries: list[ManifestEntry]) -> None:
        touched = {(e.partition, e.bucket) for e in entries}
        removed = {e.identifier() for e in entries if e.kind == FileKind.DELETE and e.file.level > 0}
        by_level: dict[tuple, list] = {}
        for e in itertools.chain(live, (e for e in entries if e.kind == FileKind.ADD)):
            f = e.file
            if f.level > 0 and (e.partition, e.bucket) in touched and (not removed or e.identifier() not in removed):
                by_level.setdefault((e.partition, e.bucket, f.level), []).append(f)
        key_types = self.store.key_types
        for (_partition, bucket, level), files in by_level.items():
            if len(files) < 2:
                continue
            ranges = sorted(
                (
                    java_order_key(deserialize_row(f.min_key, key_types)),
                    java_order_key(deserialize_row(f.max_key, key_types)),
                    f.file_name,
                )
                for f in files
            )
            for a, b in zip(ranges, ranges[1:]):
                if b[0] <= a[1]:
                    raise CommitConflictError(
                        f"LSM conflict in {self.store.identifier}: files {a[2]} and {b[2]} on level {level} of "
                        f"bucket {bucket} overlap in key range; nothing was committed"
                    )

    # -- writing the metadata of one attempt ---------------------------------------------------
    def _write_snapshot_files(
        self, ctx: _CommitContext, kind, latest: Snapshot | None, entries, changelog, index_changes
    ) -> tuple[Snapshot, list[str]]:
        namer = FileNamer()
        written: list[str] = []
        schema_id = self.store.schema.id
        try:
            base_metas = self.manifests.data_manifests(latest) if latest else []
            base_metas, merged_new = merge_manifests(self.manifests, base_metas, self.options, schema_id, namer)
            written += [self.manifests.paths.manifest(m.file_name) for m in merged_new]
            delta_metas = self.manifests.write_manifests(entries, schema_id, namer) if entries else []
            written += [self.manifests.paths.manifest(m.file_name) for m in delta_metas]
            base_name, base_size = self.manifests.write_manifest_list(base_metas, namer)
            delta_name, delta_size = self.manifests.write_manifest_list(delta_metas, namer)
            written += [self.manifests.paths.manifest(base_name), self.manifests.paths.manifest(delta_name)]
            cl_name = cl_size = None
            if changelog:
                cl_metas = self.manifests.write_manifests(changelog, schema_id, namer)
                written += [self.manifests.paths.manifest(m.file_name) for m in cl_metas]
                cl_name, cl_size = self.manifests.write_manifest_list(cl_metas, namer)
                written.append(self.manifests.paths.manifest(cl_name))
            index_manifest = latest.index_manifest if latest else None
            if (
                kind == CommitKind.OVERWRITE
                and latest
                and latest.index_manifest
                and self.store.options.deletion_vectors_enabled
            ):
                index_changes = list(index_changes) + self._vectors_of_deleted_files(latest, entries)
            if index_changes or (ctx.index_drop is not None and index_manifest):
                new_manifest = self._new_index_manifest(latest, index_changes, namer, ctx.index_drop)
                if new_manifest == "":  # nothing left: no index manifest, as pypaimon
                    index_manifest = None
                elif new_manifest is not None:
                    index_manifest = new_manifest
                    written.append(self.manifests.paths.manifest(index_manifest))
        except Exception:
            for p in written:  # preparing the attempt failed: leave nothing behind
                self.store.fileio.delete(p)
            raise
        added = sum(e.file.row_count for e in entries if e.kind == FileKind.ADD)
        deleted = sum(e.file.row_count for e in entries if e.kind == FileKind.DELETE)
        snapshot = Snapshot(
            id=(latest.id + 1) if latest else 1,
            schema_id=schema_id,
            base_manifest_list=base_name,
            delta_manifest_list=delta_name,
            changelog_manifest_list=cl_name,
            index_manifest=index_manifest,
            commit_user=self.commit_user,
            commit_identifier=ctx.identifier,
            commit_kind=kind,
            time_millis=int(time.time() * 1000),
            total_record_count=(latest.total_record_count if latest else 0) + added - deleted,
            delta_record_count=added - deleted,
            changelog_record_count=sum(e.file.row_count for e in changelog) if changelog else None,
            properties=ctx.properties or None,
            base_manifest_list_size=base_size,
            delta_manifest_list_size=delta_size,
            changelog_manifest_list_size=cl_size,
            uuid=str(uuid.uuid4()),
            writer_version=WRITER_VERSION,
        )
        return snapshot, written

    def _vectors_of_deleted_files(self, latest: Snapshot, entries) -> list[IndexManifestEntry]:
        """DELETEs of the DV index files whose every vector belongs to a file this overwrite deletes
        (a bucket rescale, a partition overwrite): nothing may point at a file no longer live."""
        gone = {e.file.file_name for e in entries if e.kind == FileKind.DELETE}
        return [
            as_delete(e)
            for e in self.manifests.index_entries(latest)
            if e.index_type == DV_INDEX and e.dv_ranges and all(m.data_file_name in gone for m in e.dv_ranges)
        ]

    def _new_index_manifest(
        self, latest: Snapshot | None, changes: list[IndexManifestEntry], namer, drop: Callable[[bytes], bool] | None
    ) -> str | None:
        """The complete index manifest after ``changes`` (None: unchanged, "": empty). HASH files are combined
        per (partition, bucket) like Java's ``BucketedCombiner``: an ADD replaces the bucket's file,
        so a Java/pypaimon-style ADD without a DELETE leaves no stale entry. An overwrite drops the
        HASH files of the partitions it replaces."""
        previous = self.manifests.index_entries(latest)
        # an overwrite deletes the partitions' data files, so their HASH and DV index files go too
        current = {
            (e.partition, e.bucket, e.index_type, e.file_name): e
            for e in previous
            if not (drop is not None and e.index_type in (HASH_INDEX, DV_INDEX) and drop(e.partition))
        }
        dropped = len(current) != len(previous)
        if not changes and not dropped:
            return None
        for c in sorted(changes, key=lambda c: c.kind != FileKind.DELETE):  # deletes first
            key = (c.partition, c.bucket, c.index_type, c.file_name)
            if c.kind == FileKind.DELETE:
                current.pop(key, None)
            else:
                if c.index_type == HASH_INDEX:
                    for k in [k for k in current if k[:3] == key[:3]]:
                        del current[k]
                current[key] = c
        if not current:
            return ""
        return self.manifests.write_index_manifest(list(current.values()), namer)


# -- sequence ranges (safety rule, see module docstring) -------------------------------------------
@dataclass(frozen=True)
class _BucketSequences:
    """What one commit needs to know about a bucket's sequence numbers."""

    base: int  # snapshot the writer numbered its rows from
    new_min: int | None  # smallest sequence number of the new level-0 files
    dropped_max: int | None  # largest input sequence number of a compaction that may drop deletes


class _SequenceChecks:
    """Refuses a commit whose sequence numbers would not order it after the commits that landed
    since its writer's base snapshot (item: last commit wins, deletes stay deleted)."""

    def __init__(self, buckets: dict[tuple[bytes, int], _BucketSequences], own: set[str]):
        self.buckets = buckets
        self.own = own
        self._added: dict[int, list] = {}  # snapshot id -> its non-COMPACT ADD entries (read once)

    @staticmethod
    def of(messages: Sequence[CommitMessage]) -> _SequenceChecks | None:
        buckets: dict[tuple[bytes, int], _BucketSequences] = {}
        own: set[str] = set()
        for m in messages:
            for f in m.new_files:
                own.add(f.file_name)
            for f in m.compact_after:
                own.add(f.file_name)
            if m.base_snapshot_id is None:
                continue  # another engine's writer: its numbering is unknown
            new_min = min([f.min_sequence_number for f in m.new_files]) if m.new_files else None
            # A full compaction drops -D rows (and what they delete); files numbered at or below
            # its inputs that land afterwards would lose their shadowing delete.
            drops = any([f.delete_row_count is None or f.delete_row_count > 0 for f in m.compact_before])
            dropped_max = max([f.max_sequence_number for f in m.compact_before]) if drops else None
            key = (m.partition, m.bucket)
            prev = buckets.get(key)
            if prev is not None:
                new_min = (
                    min(x for x in (new_min, prev.new_min) if x is not None)
                    if new_min is not None or prev.new_min is not None
                    else None
                )
                dropped_max = (
                    max(x for x in (dropped_max, prev.dropped_max) if x is not None)
                    if dropped_max is not None or prev.dropped_max is not None
                    else None
                )
            buckets[key] = _BucketSequences(
                min(m.base_snapshot_id, prev.base) if prev else m.base_snapshot_id, new_min, dropped_max
            )
        return _SequenceChecks(buckets, own) if buckets else None

    def _others_added(self, commit: FileStoreCommit, sid: int) -> list | None:
        added = self._added.get(sid)
        if added is None:
            snap = commit._snapshot_to_check(sid)
            if snap is None:
                return None  # expired: nothing left to compare with
            added = (
                []
                if snap.commit_kind == CommitKind.COMPACT
                else [
                    (e, snap)
                    for e in commit.manifests.delta_entries(snap)
                    if e.kind == FileKind.ADD and (e.partition, e.bucket) in self.buckets
                ]
            )
            self._added[sid] = added
        return added

    def check(self, commit: FileStoreCommit, latest: Snapshot | None, kind: CommitKind) -> None:
        if latest is None or kind == CommitKind.OVERWRITE:
            return  # an overwrite replaces whatever landed meanwhile
        only_deletes = bool(commit.options.sequence_fields)  # 'sequence.field' orders the rest
        first = min(b.base for b in self.buckets.values()) + 1
        for sid in range(latest.id, first - 1, -1):
            for e, snap in self._others_added(commit, sid) or ():
                b = self.buckets[(e.partition, e.bucket)]
                f = e.file
                if sid <= b.base or f.file_name in self.own:
                    continue
                if (
                    kind == CommitKind.APPEND
                    and b.new_min is not None
                    and f.max_sequence_number >= b.new_min
                    and not (only_deletes and f.delete_row_count == 0)
                ):
                    raise SequenceConflictError(
                        f"sequence conflict in {commit.store.identifier}: bucket {e.bucket} of partition "
                        f"{commit._partition_desc(e.partition)} got rows numbered up to {f.max_sequence_number} from "
                        f"snapshot {sid} (by {snap.commit_user}) after snapshot {b.base}, from which this write "
                        f"numbered its rows from {b.new_min}; landing it would let the earlier commit win over this "
                        "one. Nothing was committed — write the data again against the latest snapshot "
                        "(write_arrow does so itself), or run one writer per bucket"
                    )
                if kind == CommitKind.COMPACT and b.dropped_max is not None and f.min_sequence_number <= b.dropped_max:
                    raise SequenceConflictError(
                        f"sequence conflict in {commit.store.identifier}: compaction of bucket {e.bucket} of partition "
                        f"{commit._partition_desc(e.partition)} (planned at snapshot {b.base}) dropped deletes numbered "
                        f"up to {b.dropped_max}, but snapshot {sid} (by {snap.commit_user}) since added rows numbered "
                        f"from {f.min_sequence_number} that those deletes must still shadow. Nothing was committed — "
                        "re-run the compaction against the latest snapshot"
                    )
