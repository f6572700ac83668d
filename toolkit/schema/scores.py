"""The label-scores table: one row per decision of a build, scored by ``distill check labels``.

Written beside the build it scores (``builds/<name>/<fingerprint>/label-scores.parquet``,
see :mod:`toolkit.layout`), read by the build (``--drop-label-issues``), the gates, the
notebooks, the dashboard and the ``label_scores`` SQL view. Rows are keyed like the
lake's (``game_id``, ``seat``, ``decision_index``) and point back at their lake row
(``batch_id``, ``source_line``). Column names are constants here, next to their
descriptions (:data:`COLUMN_DOCS`), so no layer spells them as literals.
"""

from __future__ import annotations

from typing import Final

import pyarrow as pa

from toolkit.schema import columns as col

DATASET: Final = "dataset"
FINGERPRINT: Final = "fingerprint"
SPLIT: Final = "split"
LAKE_VERSION: Final = "lake_version"
LABEL: Final = "label"
LEGAL_COUNT: Final = "legal_count"
SCORED: Final = "scored"
P_LABEL: Final = "p_label"
PREDICTED: Final = "predicted"
LABEL_QUALITY: Final = "label_quality"
FLAGGED: Final = "flagged"
CONFLICT_WITHIN_SOURCE: Final = "conflict_within_source"
CONFLICT_ACROSS_SOURCES: Final = "conflict_across_sources"
TEACHER_P_LABEL: Final = "teacher_p_label"
TEACHER_KL: Final = "teacher_kl"
# Computed by the label_scores view (not stored): the two actions by name.
LABEL_ACTION: Final = "label_action"
PREDICTED_ACTION: Final = "predicted_action"

SCHEMA: Final = pa.schema(
    [
        pa.field(DATASET, pa.string(), nullable=False),
        pa.field(FINGERPRINT, pa.string(), nullable=False),
        pa.field(col.GAME_ID, pa.string(), nullable=False),
        pa.field(col.SEAT, pa.int32(), nullable=False),
        pa.field(col.DECISION_INDEX, pa.int32(), nullable=False),
        pa.field(col.SOURCE, pa.string(), nullable=False),
        pa.field(col.GENERATION, pa.int32()),
        pa.field(col.BATCH_ID, pa.string(), nullable=False),
        pa.field(col.SOURCE_LINE, pa.int64(), nullable=False),
        pa.field(LAKE_VERSION, pa.int64()),
        pa.field(SPLIT, pa.string(), nullable=False),
        pa.field(LABEL, pa.int64(), nullable=False),
        pa.field(LEGAL_COUNT, pa.int8(), nullable=False),
        pa.field(SCORED, pa.bool_(), nullable=False),
        pa.field(P_LABEL, pa.float64(), nullable=False),
        pa.field(PREDICTED, pa.int64(), nullable=False),
        pa.field(LABEL_QUALITY, pa.float64()),
        pa.field(FLAGGED, pa.bool_(), nullable=False),
        pa.field(CONFLICT_WITHIN_SOURCE, pa.bool_(), nullable=False),
        pa.field(CONFLICT_ACROSS_SOURCES, pa.bool_(), nullable=False),
        pa.field(TEACHER_P_LABEL, pa.float64()),
        pa.field(TEACHER_KL, pa.float64()),
    ]
)

COLUMN_DOCS: Final[dict[str, str]] = {
    DATASET: "The build's name.",
    FINGERPRINT: "The build's fingerprint.",
    col.GAME_ID: "The decision's game.",
    col.SEAT: "The acting seat.",
    col.DECISION_INDEX: "The decision's index in its game.",
    col.SOURCE: "Who wrote the decision (forge, ppo...).",
    col.GENERATION: "Its loop generation (null: none).",
    col.BATCH_ID: "The lake batch it came from.",
    col.SOURCE_LINE: "Its line in the batch's log.",
    LAKE_VERSION: "The lake version the build read.",
    SPLIT: "train or holdout.",
    LABEL: "The logged action's index.",
    LEGAL_COUNT: "How many actions were legal.",
    SCORED: "Scored by confident learning: more than one legal action.",
    P_LABEL: "Out-of-sample probability of the logged action (k-fold models, masked to the legal actions).",
    PREDICTED: "The out-of-sample models' most likely legal action.",
    LABEL_QUALITY: "cleanlab's label quality score (0 worst, 1 best); null when not scored.",
    FLAGGED: "A label issue found by cleanlab's find_label_issues (never for one legal action).",
    CONFLICT_WITHIN_SOURCE: "Another decision of the same source has the same feature vector and another label.",
    CONFLICT_ACROSS_SOURCES: "A decision of another source has the same feature vector and another label.",
    TEACHER_P_LABEL: "The teacher's probability of the logged action (with --teacher).",
    TEACHER_KL: "KL(teacher || logged one-hot) = -log p_teacher(logged), nats (with --teacher).",
    LABEL_ACTION: "The logged action, by name (label is its index).",
    PREDICTED_ACTION: "The models' most likely legal action, by name (predicted is its index).",
}
