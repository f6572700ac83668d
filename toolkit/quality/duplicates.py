"""Conflicting duplicates: decisions with exactly the same feature vector and different labels.

The feature vector holds the legal mask, so two such decisions faced the same
choice as the student sees it and were labelled differently. A conflict is
*within a source* when a decision of the same source disagrees, *across
sources* when one of another source does. Exact: rows are grouped by the
bytes of their vectors.
"""

from __future__ import annotations

import numpy as np


def feature_groups(features: np.ndarray) -> np.ndarray:
    """A group id per row: equal ids exactly when the feature vectors are byte-for-byte equal."""
    rows = np.ascontiguousarray(features)
    as_bytes = rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()
    _, inverse = np.unique(as_bytes, return_inverse=True)
    return inverse.ravel()


def _distinct(*codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unique rows of the stacked codes and each input row's index among them."""
    stacked = np.stack(codes, 1)
    unique, inverse = np.unique(stacked, axis=0, return_inverse=True)
    return unique, inverse.ravel()


def conflicts(features: np.ndarray, labels: np.ndarray, sources: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(within_source, across_sources): per row, whether a decision with the same vector and another label exists
    in the same source, and in another source."""
    group = feature_groups(features)
    source = np.unique(sources, return_inverse=True)[1].ravel()
    pairs, pair_of_row = _distinct(group, source, labels)  # the distinct (group, source, label) triples
    g_s = _distinct(pairs[:, 0], pairs[:, 1])[1]
    g_l = _distinct(pairs[:, 0], pairs[:, 2])[1]
    same_source = np.bincount(g_s)[g_s]  # labels its source gave this vector
    same_label = np.bincount(g_l)[g_l]  # sources that gave this vector its label
    in_group = np.bincount(pairs[:, 0])[pairs[:, 0]]
    # triples of the group with another source AND another label: all - same source - same label + itself
    other = in_group - same_source - same_label + 1
    return (same_source > 1)[pair_of_row], (other > 0)[pair_of_row]
