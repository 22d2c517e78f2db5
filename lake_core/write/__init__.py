"""Writing: rows → buckets → data files → commit messages."""
