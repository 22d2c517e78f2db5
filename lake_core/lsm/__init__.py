"""The LSM tree of a bucket: levels and sorted runs (Java ``Levels``, ``SortedRun``)."""
