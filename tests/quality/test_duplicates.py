"""Feature groups are exact: hashed in chunks, they part the rows as their bytes do (-0.0 is not 0.0, a NaN
equals its copy), and vectors that are not whole 32-bit words are grouped by their bytes."""

from __future__ import annotations

import numpy as np

from toolkit.quality.duplicates import _distinct, conflicts, feature_groups


def _partition(groups: np.ndarray) -> set[frozenset[int]]:
    members: dict[int, set[int]] = {}
    for row, group in enumerate(groups.tolist()):
        members.setdefault(group, set()).add(row)
    return {frozenset(m) for m in members.values()}


def _by_bytes(features: np.ndarray) -> set[frozenset[int]]:
    members: dict[bytes, set[int]] = {}
    for row, vector in enumerate(features):
        members.setdefault(vector.tobytes(), set()).add(row)
    return {frozenset(m) for m in members.values()}


def test_feature_groups_part_the_rows_exactly_as_their_bytes_do() -> None:
    rng = np.random.default_rng(3)
    distinct = rng.integers(0, 3, (500, 117)).astype(np.float32)
    features = distinct[rng.integers(0, 500, 40_000)]  # more rows than one chunk, many repeats
    features[1] = features[0]
    features[1, 5] = -0.0 if features[0, 5] == 0 else -features[0, 5]  # one bit apart from row 0
    features[2, 7] = np.nan
    features[3] = features[2]
    groups = feature_groups(features)
    assert _partition(groups) == _by_bytes(features)
    assert groups[0] != groups[1] and groups[2] == groups[3]


def test_vectors_of_other_widths_are_grouped_by_their_bytes() -> None:
    features = np.array([[1, 2, 3], [1, 2, 3], [3, 2, 1]], np.float16)  # 6 bytes a row: not whole 32-bit words
    assert _partition(feature_groups(features)) == {frozenset({0, 1}), frozenset({2})}


def test_conflicts_within_and_across_sources() -> None:
    features = np.array([[0, 1], [0, 1], [0, 1], [1, 1]], np.float32)
    labels = np.array([0, 1, 0, 2])
    sources = np.array(["forge", "forge", "ppo", "forge"])
    within, across = conflicts(features, labels, sources)
    assert within.tolist() == [True, True, False, False]  # forge gave the vector labels 0 and 1
    assert across.tolist() == [False, True, True, False]  # ppo's 0 agrees with row 0, not with row 1


def test_distinct_code_rows_are_numpy_unique_over_the_stacked_rows() -> None:
    rng = np.random.default_rng(5)
    cases = [
        (rng.integers(0, 50, 2_000), rng.integers(0, 3, 2_000), rng.integers(0, 8, 2_000)),  # packed in one key
        (rng.integers(-2, 5, 500), rng.integers(0, 3, 500)),  # a negative code: sorted as rows
        (rng.integers(0, 2**40, 500), rng.integers(0, 2**30, 500)),  # past 63 bits: sorted as rows
    ]
    for codes in cases:
        unique, inverse = _distinct(*codes)
        expected, expected_inverse = np.unique(np.stack(codes, 1), axis=0, return_inverse=True)
        assert np.array_equal(unique, expected) and np.array_equal(inverse, expected_inverse.ravel())
