"""Manifests: metadata records, manifest files and lists, the manifest store and the minor compaction run at commit."""
