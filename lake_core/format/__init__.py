"""Paimon's on-disk encodings: BinaryRow, data files (Parquet/ORC/Avro), column statistics, integrity checks."""
