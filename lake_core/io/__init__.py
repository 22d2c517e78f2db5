"""File access: the FileIO over local disk and S3."""
