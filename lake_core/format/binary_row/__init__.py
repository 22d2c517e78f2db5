"""Java-compatible Paimon ``BinaryRow`` encoding (Java ``BinaryRow``/``BinaryRowWriter``).

A BinaryRow is ``[null bit set][8-byte slot per field][variable part]``. It is the wire form of
partition values, min/max keys and stats rows in manifests, and the input of the bucket hash, so
the bytes must equal what Java's ``BinaryRowWriter`` produces (``RowHelper.copyInto``), including
its null encoding for non-compact DECIMAL/TIMESTAMP (``BinaryRowWriter.writeDecimal``/``writeTimestamp`` with null).

Two independent implementations live here on purpose:

* ``writer`` (``row_bytes``/``serialize_row``) and ``reader`` (``deserialize_row``) work on one row
  of Python values with ``struct``; they are the readable reference.
* ``column_encoder`` (``encode_rows``) encodes whole Arrow columns with NumPy (no per-row Python
  code) for bucket hashing of millions of keys. Tests check both against each other and against
  Java's bytes.

``layout`` says how each field type is laid out (types are pyarrow DataTypes, which the project
maps 1:1 onto Paimon types); ``arrow_buffers`` holds the zero-copy views of Arrow buffers the
encoder and the bucket hash read; ``nano_datetime`` is the TIMESTAMP(9) value type.
"""
