"""Deletion vectors (``deletion-vectors.enabled``): per data file, the positions of rows that a newer
version of their key replaced, stored in Paimon's DV index files so files are read without merging."""

from lake_core.deletion_vectors.vector import DeletionVector

__all__ = ["DeletionVector"]
