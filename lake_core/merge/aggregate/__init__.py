"""Paimon's field aggregate functions, one module per family, for the aggregation engine and for
partial-update's per-field aggregates (``fields.<f>.aggregate-function``).

Every function has two faces:

* a **scalar** face mirroring Java's ``FieldAggregator`` (``agg``, ``agg_reversed``, ``retract``,
  ``reset``), used by the per-group fallback and as the definition of the semantics;
* a **vectorized** face, :meth:`AggFunction.reduce`, that folds every key group of a sorted
  column at once (NumPy ``reduceat``/segmented scans, Arrow kernels).

``reduce`` receives the column already in merge order, the key-group ``Segments`` and one op per
row: ``ADD`` (``agg``), ``ADD_REVERSED`` (partial-update sequence groups: a row older than the
group's stored sequence, Java ``aggReversed``), ``RETRACT`` (``-U``/``-D``) or ``SKIP``. The fold
of a group starts from NULL, exactly as Java starts from an empty ``GenericRow``.

Functions whose values are opaque blobs or nested collections (rbm32, rbm64, hll_sketch,
theta_sketch, collect, merge_map, nested_update) and a few rare combinations (listagg with
``distinct``, DECIMAL wider than 18 digits, ``product`` with retractions, order-sensitive
functions fed ``ADD_REVERSED`` rows) fold per key group in Python: those are per-group loops over
library objects (pyroaring, datasketches) or Python collections, not per-row loops over the
numeric/string data path.
"""
