"""Validate one decision-log file: a stream of accepted Arrow parts and byte-exact rejects.

The steps, each a function of the one before's result, top to bottom:

1. **sniff** (here): canonical files take the vectorised fast path, other dialects the per-row path;
2. **read** (:mod:`toolkit.ingest.reader`): the file in bounded chunks of whole lines (:class:`Chunk`);
3. **sort** (:mod:`toolkit.ingest.sorting`): each chunk's lines for the fast path, the per-row path or
   rejected unread (:class:`SortedChunk`);
4. **parse** (:mod:`toolkit.ingest.parse`): the fast-path lines parsed and checked on worker threads, a few
   chunks ahead (:class:`FastResult`);
5. **rows** (:mod:`toolkit.ingest.rows`): what the fast path left, through the dialect adapters and the
   contract, in line order (:class:`CheckedRows`); the faults it finds are looked for in the chunks still
   to be sorted (:mod:`toolkit.ingest.suspects`);
6. **part** (:mod:`toolkit.ingest.parts`): one :class:`Part` of rows and rejects per chunk, counted in the
   file's report.

Nothing is written here: the ingest stage stages the parts (:mod:`toolkit.ingest.staging`) and commits them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import orjson

from toolkit.dialects import detect_dialect
from toolkit.errors import DialectError
from toolkit.ingest.config import ReadOptions
from toolkit.ingest.parse import parse_ahead
from toolkit.ingest.parts import FileReport, Part, make_part
from toolkit.ingest.reader import UTF8_BOM, read_chunks, read_chunks_ahead, read_head
from toolkit.ingest.rows import RowCheck
from toolkit.ingest.sorting import LineSorter, clean_line
from toolkit.ingest.suspects import Suspects

_SNIFF_LINES = 50


def _sniff_canonical(path: Path, options: ReadOptions) -> bool:
    """Whether the file should take the fast path: canonical by force, or by its
    first parseable record among its first ``chunk_bytes`` (the fast path hands
    lines of other dialects to the per-row path, so a wrong guess costs speed only)."""
    if options.dialect is not None:
        return options.dialect == "canonical"
    head = read_head(path, options.chunk_bytes)
    seen = start = 0
    while seen < _SNIFF_LINES and start < len(head):
        stop = head.find(b"\n", start)
        if stop < 0:
            if len(head) == options.chunk_bytes:  # a line cut short by the sniff's end
                break
            stop = len(head)
        text = clean_line(head[start:stop]).removeprefix(UTF8_BOM).strip()
        start = stop + 1
        if not text or len(text) > options.max_line_bytes:
            continue
        seen += 1
        try:
            return detect_dialect(orjson.loads(text)) == "canonical"
        except (orjson.JSONDecodeError, DialectError):
            continue
    return True


def validate_file(path: Path, options: ReadOptions, report: FileReport, name: str | None = None) -> Iterator[Part]:
    """Validate ``path`` chunk by chunk; counts accumulate in ``report``.

    Yields parts in file order; rows held back by a dialect adapter arrive
    in a final part. Duplicate decisions are not judged here (see
    ``toolkit.ingest.dedup``): they need every file of the run. ``name``: the
    file as rejects name it (default: its path).
    """
    name = str(path) if name is None else name
    fast = _sniff_canonical(path, options)
    suspects = Suspects()
    sorter = LineSorter(options, report, name)
    rows = RowCheck(options, report, name, suspects)
    if fast:
        chunks = read_chunks_ahead(path, options.chunk_bytes, options.max_line_bytes, depth=1)
    else:
        chunks = read_chunks(path, options.chunk_bytes, options.max_line_bytes)
    sorted_chunks = (sorter.sort(chunk, fast, suspects.snapshot()) for chunk in chunks)
    parsed = parse_ahead(sorted_chunks, options.workers) if fast else ((chunk, None) for chunk in sorted_chunks)
    with closing(parsed):  # closed early (the file was ingested before, say): the queued parses are dropped
        for chunk, fast_result in parsed:
            yield make_part(rows.check(chunk, fast_result), report)
    yield make_part(rows.finish(), report)
