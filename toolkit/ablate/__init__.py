"""``distill ablate``: which data makes the student stronger, measured on paired deals.

A base (a build or a loop) and a grid of variants of its config; per variant
the build stage makes its dataset, a student is trained on it with the same
seeds as every other, and every student plays the same deals against the
same tables. The table: win rates with 95% intervals, the paired difference
to the first variant with its interval, holdout accuracy and rows.

- ``config.py``: :class:`AblateConfig` and the ``--vary`` grammar.
- ``base.py``: the base, resolved from the data root.
- ``grid.py``: the variants, every one validated before anything runs.
- ``job.py``: one variant as a job (student, holdout accuracy, evaluations).
- ``run.py``: :func:`run_ablation`, the driver.
- ``result.py`` / ``report.py``: the typed results, ``ablation.json`` and ``ablation.html``.
"""
