"""The speed guard's verdicts (issue 28's targets), from medians a sitting could print."""

from benchmarks.bench_speed import _verdicts


def _med(current: dict, native: dict, pyarrow: dict) -> dict:
    return {"current": current, "pypaimon-native": native, "pyarrow": pyarrow}


def test_three_times_native_is_the_target_where_the_ceiling_allows_it():
    lines = _verdicts(_med({"read": 7.0e6}, {"read": 2.5e6}, {"read": 12.0e6}))
    assert lines == ["target read: 7.00M rows/s against 7.50M (3x native): short (93% of it)"]


def test_ninety_percent_of_pyarrow_alone_where_the_ceiling_is_below_three_times_native():
    lines = _verdicts(_med({"update": 3.2e6}, {"update": 1.3e6}, {"update": 3.5e6}))
    assert lines == ["target update: 3.20M rows/s against 3.15M (90% of pyarrow alone, below 3x native): met"]


def test_rescale_has_a_fixed_target_and_missing_peers_give_no_verdict():
    lines = _verdicts({"current": {"write": 5e6, "rescale": 3.1e6}})
    assert lines == ["target rescale: 3.10M rows/s against 3.00M (3M rows/s): met"]
