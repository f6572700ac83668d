"""The builds promoted models name, read through every loop run's promoted models and their checkpoint cards.

``distill datasets list`` shows them and ``datasets rm`` / ``prune`` protect them; this lives above the datasets
layer (it reads loop runs and checkpoint cards) so that every front end (the CLI, the dashboard) reads the same.
"""

from __future__ import annotations

from toolkit.datasets.inventory import ModelRef
from toolkit.errors import DistillError
from toolkit.layout import Layout
from toolkit.loop.state import RunFolder


def promoted_models(home: Layout) -> tuple[list[ModelRef], list[str]]:
    """The builds promoted models name: every loop run's promoted models, through their cards.

    A card path relative to the data root is resolved under it. A run or a card
    that cannot be read is a warning (its build is then not protected), never an error.
    """
    from toolkit.train.checkpoints import read_card_as_written

    refs: list[ModelRef] = []
    warnings: list[str] = []
    for run in sorted(p.name for p in home.runs.iterdir()) if home.runs.is_dir() else []:
        try:
            folder = RunFolder(home, run)
        except DistillError:
            continue  # not a loop run's name
        if not folder.exists():
            continue  # runs/train/ and other folders that are not loop runs
        try:
            promoted = folder.load().promoted
        except DistillError as error:
            warnings.append(f"loop run {run!r} skipped: {error.message}")
            continue
        for model in promoted:
            try:  # as written: features of another version are fine, only its dataset is read
                card = read_card_as_written(home.resolve(model.checkpoint), "see the loop run")
            except DistillError as error:
                warnings.append(
                    f"{run}/{model.name}: its card cannot be read, so the build it names is not protected: "
                    f"{error.message}"
                )
                continue
            if card.dataset is not None:
                refs.append(
                    ModelRef(dataset=card.dataset.name, fingerprint=card.dataset.fingerprint, run=run, model=model.name)
                )
    return refs, warnings
