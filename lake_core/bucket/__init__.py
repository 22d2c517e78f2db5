"""Bucketing: which bucket a row goes to (fixed hash, dynamic, cross-partition) and the HASH index files."""
