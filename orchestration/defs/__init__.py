"""The code location's building blocks, one module per concern; ``orchestration.definitions``
merges them.

- :mod:`.resources`: the ``lake`` catalog and ``spark`` resources (``resource_definitions``).
- :mod:`.tables`: one asset group per table holding the table's asset (:mod:`.ingest`), its
  maintenance assets (:mod:`.maintenance`, the seam where each operation plugs in; one op per
  operation over all tables) and its checks (:mod:`.checks`, :mod:`.drift`); the per-table assets
  are built cheaply (:mod:`.cheap_assets`). docs/service/many-tables.md says why.
  The lake-wide parts (``lake_definitions``): a fixed number of sensors for any number of tables.
- :mod:`.downstream`: derived tables, their jobs, and the one snapshot sensor (:mod:`.sensors`)
  that requests them, one run per table covering its new snapshots, leasing the snapshot until
  its run ends (:mod:`.leases`).
- :mod:`.health_sensor`: the one health sensor requesting the figure-driven maintenance assets and
  reporting :mod:`.lake_health` (the whole lake at a glance); :mod:`.automation`: the policy's cron
  as an automation condition on each time-driven maintenance asset; :mod:`.policy` turns a table's
  health and policy into decisions with reasons (also behind the health checks of :mod:`.checks`).
- :mod:`.ticks`: what the lake-wide sensors share: one JSON cursor with an entry per table, a tick
  budget, round-robin over the tables.
- :mod:`.naming`, :mod:`.metadata`, :mod:`.storage`: names, materialization metadata, and the
  storage access check every Spark step makes first.
"""
