"""The key-value layout of primary-key data files: row kinds and system columns."""
