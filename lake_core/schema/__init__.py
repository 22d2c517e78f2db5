"""Table schemas: the schema file, its manager, schema changes and evolution on read."""
