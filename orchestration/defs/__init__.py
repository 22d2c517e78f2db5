"""The code location's building blocks, one module per concern; ``orchestration.definitions``
merges them.

- :mod:`.resources`: the ``lake`` catalog and ``spark`` resources (``resource_definitions``).
- :mod:`.tables`: the per-table factory (``table_definitions``): one asset group per table holding
  the table's asset (:mod:`.ingest`), its maintenance assets (:mod:`.maintenance`, the seam where
  each operation plugs in) and its checks (:mod:`.checks`, :mod:`.drift`).
- :mod:`.downstream`: derived tables, their jobs, and the snapshot sensors (:mod:`.sensors`)
  that request them, leasing each snapshot until its run ends (:mod:`.leases`).
- :mod:`.health_sensor`: per table, the health sensor and the policy's cron schedule that request
  maintenance assets; :mod:`.policy` turns a table's health and policy into decisions with reasons
  (also behind the health checks of :mod:`.checks`).
- :mod:`.naming`, :mod:`.metadata`, :mod:`.storage`: names, materialization metadata, and the
  storage access check every Spark step makes first.
"""
