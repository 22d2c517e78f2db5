"""Data file encodings that need more than pyarrow's writers give."""
