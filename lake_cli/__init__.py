"""``lake``: the command line of the warehouse's maintenance (see :mod:`lake_cli.main`).

The top layer: it calls lake_core's public API (and ``jobs`` for ``--spark``), never Dagster;
nothing imports it.
"""
