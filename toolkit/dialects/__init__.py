"""Dialect adapters: every decision-log dialect in the wild -> the canonical record.

Public API:

- :func:`detect_dialect` names a raw record's dialect from its shape;
- :class:`FileAdapter` converts the records of one file, streaming, and
  assigns what those dialects do not log (decision order, terminal rows).

Canonical records are not converted here: ingest validates them on its fast
path, and :meth:`FileAdapter.feed` hands them back unchanged (except for a
forced source). Adapters produce dicts; ingest validates them with
:class:`~toolkit.schema.models.DecisionSnapshot` and words the errors.
"""

from toolkit.dialects.adapter import CONVERTERS, FileAdapter
from toolkit.dialects.detect import detect_dialect
from toolkit.dialects.labels import card_role, load_card_roles

__all__ = ["CONVERTERS", "FileAdapter", "card_role", "detect_dialect", "load_card_roles"]
