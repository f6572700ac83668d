"""The row step, after the fast parse: the lines the fast path did not pass (and every line of a file in
another dialect) through the dialect adapters and the Pydantic contract, one by one in line order, joined
with the fast path's rows; what broke a parse is learnt for the chunks still to be sorted.

A dialect adapter may hold rows back until a game's end, so a line's verdict
can come a chunk or more after the line: its exact bytes wait here until then.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from toolkit.ingest.config import ReadOptions
from toolkit.ingest.fastpath import FastResult
from toolkit.ingest.parts import CheckedRows, FileReport, Reject, read_schema
from toolkit.ingest.rowpath import RowOutcome, RowValidator
from toolkit.ingest.sorting import SortedChunk
from toolkit.ingest.suspects import Suspects
from toolkit.schema import columns as col


class RowCheck:
    """The row step of one file: its dialect adapter, the raw bytes of lines awaiting a verdict, and the
    faults it teaches ``suspects``."""

    def __init__(self, options: ReadOptions, report: FileReport, name: str, suspects: Suspects) -> None:
        self.source = options.source
        self.report = report
        self.name = name
        self.suspects = suspects
        self.rows = RowValidator(dialect=options.dialect, source=options.source)
        self.pending_raw: dict[int, bytes] = {}

    def check(self, prepared: SortedChunk, fast: FastResult | None) -> CheckedRows:
        """Run the per-row path on what the fast path (``fast``: None for a file not on it) left of a chunk."""
        chunk, slow = prepared.chunk, prepared.slow
        if fast is not None and len(fast.fallback):
            slow.extend((line, prepared.fast_text(line)) for line in fast.fallback.tolist())
            slow.sort()
        outcomes: list[RowOutcome] = []
        for line, text in slow:
            self.pending_raw[line] = prepared.raw(line)
            outcomes.extend(self.rows.feed(line, text, at_open_end=chunk.ends_open and line == chunk.last_line))
        if fast is not None:  # what broke this chunk's parse is looked for before the next chunks are parsed
            self.suspects.forget(prepared.common)
            texts = dict(slow)
            parsed = set(fast.refused.tolist())  # these broke no parse (NaN as a float, say): nothing to learn
            for outcome in outcomes:
                if outcome.record is None and outcome.line in texts and outcome.line not in parsed:
                    self.suspects.learn(texts[outcome.line], [(p.field, p.code) for p in outcome.problems])
        tables, ids = [], []
        if fast is not None:
            self.report.dialects["canonical"] += fast.table.num_rows
            tables.append(self._force_source(fast.table))
            ids.append(fast.ids)
        return self._checked(tables, ids, outcomes, prepared.rejects)

    def finish(self) -> CheckedRows:
        """The verdicts on the rows the dialect adapter still held at the end of the file."""
        checked = self._checked([], [], self.rows.finish(), [])
        self.report.dialects.update(self.rows.dialects_seen)
        return checked

    def _force_source(self, table: pa.Table) -> pa.Table:
        if self.source is None:
            return table
        forced = pa.repeat(pa.scalar(self.source, pa.string()), table.num_rows)
        return table.set_column(table.schema.get_field_index(col.SOURCE), col.SOURCE, forced)

    def _checked(
        self, tables: list[pa.Table], ids: list[np.ndarray], outcomes: list[RowOutcome], rejects: list[Reject]
    ) -> CheckedRows:
        accepted = [o for o in outcomes if o.record is not None]
        for outcome in outcomes:
            raw = self.pending_raw.pop(outcome.line)
            if outcome.record is None:
                rejects.append(Reject(self.name, outcome.line, raw, outcome.problems))
        if accepted:
            tables.append(pa.Table.from_pylist([o.record for o in accepted], schema=read_schema()))
            ids.append(np.asarray([o.line for o in accepted], dtype=np.int64))
        return CheckedRows(tables, ids, rejects)
