"""Reading: predicates, scan planning (snapshot → manifests → splits) and merged split reads."""
