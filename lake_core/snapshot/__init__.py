"""Snapshots, changelogs and the snapshot manager."""
