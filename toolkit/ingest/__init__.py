"""The ingest stage: decision-log files in, one atomic batch per file in the lake.

The pipeline, top to bottom (the catalog below it is storage only):

    config.py     ReadOptions, IngestConfig: what the stage is told
    validate.py   one file -> a stream of parts: the steps below, called in this order, read top to bottom
      reader.py     read: files -> chunks of whole lines (gzip, zstd, plain; BOM, CRLF)
      sorting.py    sort: each chunk's lines for the fast path, the row path, or rejected unread
      parse.py      parse: the fast-path lines on worker threads, a few chunks ahead (fastpath.py: Arrow's
                    parser and the column checks; rules.py: the contract, vectorised)
      rows.py       rows: what the fast path left, through rowpath.py (its dialect's adapter, then the Pydantic
                    contract), in line order; suspects.py: the faults found, looked for in later chunks
      parts.py      part: what validation hands on: Part, Reject, FileReport, lake partitions
    dedup.py      decisions seen before, in the file or the lake
    staging.py    a batch written under staging/: lake partitions and quarantine
    ingest.py     ingest_paths: the stage (hash, validate, stage, dedup, record, publish)
    dry_run.py    validate_paths: ``distill validate``, the same checks, writing nothing
"""
