"""Demo code, kept out of the storage library.

- :mod:`orchestration.demo.source`: a deterministic change stream of shop orders (the source that
  ``tables.yaml`` names as ``orchestration.demo.source:orders``).
- :mod:`orchestration.demo.pipeline`: the embedded pipeline demo, ``python -m orchestration.demo``.
- :mod:`orchestration.demo.quickstart`: lake_core alone (upserts, deletes, time travel),
  ``python -m orchestration.demo.quickstart``.

Importing this package imports neither Dagster nor Spark.
"""
