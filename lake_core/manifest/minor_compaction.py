"""Minor manifest compaction run inside every commit (Java ``ManifestFileMerger.tryMinorCompaction``).

Without it every commit adds one manifest to the base list and scan planning slows down without
bound. Full compaction (Java's ``tryFullCompaction``) runs first once its size trigger is reached.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from lake_core.manifest.metadata import ManifestFileMeta, merge_entries
from lake_core.options import CoreOptions, parse_memory_size
from lake_core.paths import FileNamer

if TYPE_CHECKING:
    from lake_core.manifest.store import ManifestStore


def merge_manifests(store: "ManifestStore", metas: Sequence[ManifestFileMeta], options: CoreOptions,
                    schema_id: int, namer: FileNamer) -> tuple[list[ManifestFileMeta], list[ManifestFileMeta]]:
    """Returns (new base list, manifests newly written). Groups consecutive manifests until their
    size reaches the target; a trailing group is merged only if it has >= merge-min-count files."""
    from lake_core.maintenance.manifest_compaction import try_full_compaction
    full = try_full_compaction(store, metas, options, schema_id, namer)  # manifest.full-compaction-threshold-size
    if full is not None:
        return full
    target = parse_memory_size("manifest.target-file-size", options.get("manifest.target-file-size"))
    min_count = int(options.get("manifest.merge-min-count"))
    if len(metas) < min_count:
        return list(metas), []
    result: list[ManifestFileMeta] = []
    written: list[ManifestFileMeta] = []
    group: list[ManifestFileMeta] = []
    size = 0

    def flush():
        entries = merge_entries(store.read_entries(group))
        if entries:
            new = store.write_manifests(entries, schema_id, namer)
            written.extend(new)
            result.extend(new)

    for m in metas:
        if m.file_size >= target and not group:
            result.append(m)  # already big: keep as is
            continue
        group.append(m)
        size += m.file_size
        if size >= target:
            flush()
            group, size = [], 0
    if group:
        if len(group) >= min_count:
            flush()
        else:
            result.extend(group)
    return result, written
