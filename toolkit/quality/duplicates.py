"""Conflicting duplicates: decisions with exactly the same feature vector and different labels.

The feature vector holds the legal mask, so two such decisions faced the same
choice as the student sees it and were labelled differently. A conflict is
*within a source* when a decision of the same source disagrees, *across
sources* when one of another source does. Exact: rows are grouped by the
bytes of their vectors.
"""

from __future__ import annotations

import math
from typing import Final

import numpy as np

_CHUNK_ROWS: Final = 16_384  # rows hashed or compared at a time (~15 MB of 64-bit words for 117 floats)
_HASH_SEED: Final = 20_261_207


def feature_groups(features: np.ndarray) -> np.ndarray:
    """A group id per row: equal ids exactly when the feature vectors are byte-for-byte equal.

    Rows are hashed a chunk at a time (two multilinear hashes of their 32-bit words with fixed odd multipliers,
    64 bits each) and grouped by the first hash, then by both if that grouping fails the check; each row's words
    are compared with its group's first row's. Memory is the hashes and one chunk, not a sorted copy of every
    vector; a collision of both hashes (vanishingly rare for distinct vectors) falls back to grouping by the
    bytes themselves. Group ids number the groups in the order of their hashes.
    """
    rows = np.ascontiguousarray(features)
    n = len(rows)
    if rows.dtype.itemsize * rows[0].size % 4 if n else True:  # not whole 32-bit words (never for float32)
        return _byte_groups(rows)
    words = rows.reshape(n, -1).view(np.uint32)
    multipliers = np.random.default_rng(_HASH_SEED).integers(0, 2**63, (2, words.shape[1]), np.uint64) * 2 + 1
    hashes = np.empty((n, 2), np.uint64)
    for start in range(0, n, _CHUNK_ROWS):
        chunk = words[start : start + _CHUNK_ROWS].astype(np.uint64)
        hashes[start : start + _CHUNK_ROWS, 0] = (chunk * multipliers[0]).sum(1)  # wraps mod 2**64: the hash
        hashes[start : start + _CHUNK_ROWS, 1] = (chunk * multipliers[1]).sum(1)
    # One 64-bit key sorts ~10x faster than the pairs (numpy's unique over axis 0 compares rows as records).
    for key in (hashes[:, 0], hashes):
        _, first, inverse = np.unique(key, axis=None if key.ndim == 1 else 0, return_index=True, return_inverse=True)
        inverse = inverse.ravel()
        if _same_as_first(words, first[inverse]):
            return inverse
    return _byte_groups(rows)


def _same_as_first(words: np.ndarray, representative: np.ndarray) -> bool:
    """Whether every row's words equal those of its group's representative row."""
    for start in range(0, len(words), _CHUNK_ROWS):
        chunk = slice(start, start + _CHUNK_ROWS)
        if (words[chunk] != words[representative[chunk]]).any():
            return False
    return True


def _byte_groups(rows: np.ndarray) -> np.ndarray:
    """:func:`feature_groups` by sorting the rows' bytes (a copy of them all)."""
    as_bytes = rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()
    _, inverse = np.unique(as_bytes, return_inverse=True)
    return inverse.ravel()


def _distinct(*codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unique rows of the stacked integer codes and each input row's index among them.

    The codes are packed into one int64 key, digit by digit (the first code the most significant), so the rows
    sort as the stacked columns would; negative codes, or too many combinations for 63 bits, sort as rows."""
    sizes = [int(c.max()) + 1 if len(c) else 1 for c in codes]
    if math.prod(sizes) >= 2**63 or any(len(c) and int(c.min()) < 0 for c in codes):
        unique, inverse = np.unique(np.stack(codes, 1), axis=0, return_inverse=True)
        return unique, inverse.ravel()
    key = np.zeros(len(codes[0]), np.int64)
    for c, size in zip(codes, sizes, strict=True):
        key *= size
        key += c
    packed, inverse = np.unique(key, return_inverse=True)
    unique = np.empty((len(packed), len(codes)), np.int64)
    for i in range(len(codes) - 1, -1, -1):
        packed, unique[:, i] = np.divmod(packed, sizes[i])
    return unique, inverse.ravel()


def conflicts(features: np.ndarray, labels: np.ndarray, sources: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(within_source, across_sources): per row, whether a decision with the same vector and another label exists
    in the same source, and in another source. ``sources``: each row's source, as names or as codes."""
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
