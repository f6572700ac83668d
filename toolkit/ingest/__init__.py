"""The ingest stage: decision-log files in, one atomic batch per file in the lake.

The pipeline, top to bottom (the catalog below it is storage only):

    config.py     ReadOptions, IngestConfig: what the stage is told
    reader.py     files -> chunks of whole lines (gzip, zstd, plain; BOM, CRLF)
    suspects.py   lines the vectorised parser must not see (too deep, too long, duplicate keys...)
    fastpath.py   canonical chunks parsed and checked as Arrow tables (rules.py: the contract, vectorised)
    rowpath.py    every other line: its dialect's adapter, then the Pydantic contract
    validate.py   one file -> a stream of parts, fast and row path merged in file order
    parts.py      what validation hands on: Part, Reject, FileReport, lake partitions
    dedup.py      decisions seen before, in the file or the lake
    staging.py    a batch written under staging/: lake partitions and quarantine
    ingest.py     ingest_paths: the stage (hash, validate, stage, dedup, record, publish)
    dry_run.py    validate_paths: ``distill validate``, the same checks, writing nothing
"""
