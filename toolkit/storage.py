"""Files on disk: written so that a crash never leaves half of one, and named by their content.

Every stage that publishes a small file (a manifest pointer, a report, a
checkpoint card, loop state, the rating pool) writes it with
:func:`write_text_atomic`; every content hash (an ingested file, a dataset
part, checkpoint weights) is :func:`file_sha256`.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary sibling and one rename: readers see the old or the new file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def file_sha256(path: Path) -> str:
    """SHA-256 of the file's bytes as stored (compressed files: of the compressed bytes)."""
    digest = hashlib.sha256()
    block = bytearray(1 << 20)  # reused: no allocation per block
    with open(path, "rb", buffering=0) as handle, memoryview(block) as view:
        while size := handle.readinto(view):
            digest.update(view[:size])
    return digest.hexdigest()
