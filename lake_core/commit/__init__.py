"""Committing: commit messages from writers and the atomic snapshot commit with its conflict checks."""
