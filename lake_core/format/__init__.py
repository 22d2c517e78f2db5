"""Paimon's on-disk encodings: BinaryRow, the Avro container codec, data files (Parquet/ORC/Avro), column statistics, integrity checks."""
