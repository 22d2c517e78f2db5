"""Deletion vectors (``deletion-vectors.enabled``): per data file, the positions of rows that a newer
version of their key replaced, stored in Paimon's DV index files so files are read without merging."""
from .vector import DeletionVector

__all__ = ["DeletionVector"]
