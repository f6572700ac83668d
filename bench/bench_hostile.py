"""Benchmark the peak memory of ``distill ingest`` on hostile inputs against the 1 GiB target.

Usage::

    .venv/bin/python bench/bench_hostile.py                  # every input (~2 min on 2 cores)
    .venv/bin/python bench/bench_hostile.py --only braces-2m long-600m

Generates each input once (cached under ``bench/out/hostile``; the long line
is a sparse file and the bombs are small, so they take little disk), then
ingests it into a fresh data root in a fresh process and prints that process's
peak RSS, its wall time, what ingest made of the input, and PASS/FAIL against
:data:`TARGET_RSS_MB`. Each child runs under an address-space limit
(``--cap-gb``), so a regression fails its line (MemoryError) instead of
exhausting the machine. The inputs (issue 24):

- ``braces-2m``: two million ``{}`` lines (6 MB), every one rejected;
- ``long-600m``: a 600 MB line between two good ones;
- ``bomb-2g.zst`` / ``bomb-2g.gz``: a good line, then 2 GiB without a newline,
  compressed to ~66 KB / ~2 MB;
- ``wide-100k``: a 1 MB line of 100k unknown keys;
- ``duplicates-100k``: a 100k-record log ingested, then again with one more
  line (a log appended to): 100k duplicates of the lake;
- ``dev-zero``: ``/dev/zero`` behind a ``.jsonl`` name (refused).

Last runs (2 cores shared with other work, load ~3.7; peak RSS, 5 GiB cap;
before: the code before issue 24 under the same cap):

    input             before                                   after
    braces-2m         2,058 MiB, then out of memory (issue:    317 MiB  50.5 s
                      5.2 GB uncapped)
    long-600m         MemoryError                              282 MiB   1.6 s
    bomb-2g.zst       MemoryError                              357 MiB   2.7 s
    bomb-2g.gz        MemoryError                              334 MiB   3.9 s
    wide-100k         916 MiB, 5.4 s                           339 MiB   1.1 s
    duplicates-100k   1,193 MiB                                575 MiB   6.2 s
    dev-zero          still growing after 150 s (killed)       refused at once

(A clean 100k-record file peaks at ~500 MiB: duplicates-100k is within ~75 MiB of it.)
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import Measurement, Tee, report_child, run_child, timed, verdict  # noqa: E402

OUT = Path(__file__).resolve().parent / "out"
DATA = OUT / "hostile"
TARGET_RSS_MB = 1024.0
MB = 1 << 20


def _good(i: int) -> bytes:
    """A valid canonical record (the benchmark data's generator: deterministic)."""
    import numpy as np
    import orjson
    from bench_ingest import generate_game

    record = generate_game(np.random.default_rng(i), i)[0]
    return orjson.dumps(record)


# -- the inputs (each made once) ------------------------------------------------------------


def _braces(path: Path) -> None:
    path.write_bytes(b"{}\n" * 2_000_000)


def _long(path: Path) -> None:
    with open(path, "wb") as out:
        out.write(_good(0) + b'\n{"a":"')
        out.seek(600 * MB - 8, 1)  # a hole: read back as NULs, no disk used
        out.write(b'"}\n' + _good(1) + b"\n")


def _bomb(path: Path, compressor: Any) -> None:  # noqa: ANN401 - zstandard's and zlib's compress objects
    """A good line, then 2 GiB of x through ``compressor`` (its ``compress`` and ``flush``)."""
    piece = b"x" * (16 * MB)
    with open(path, "wb") as out:
        out.write(compressor.compress(_good(0) + b"\n"))
        for _ in range(2048 // 16):
            out.write(compressor.compress(piece))
        out.write(compressor.flush())


def _bomb_zst(path: Path) -> None:
    import zstandard

    _bomb(path, zstandard.ZstdCompressor(level=3).compressobj())


def _bomb_gz(path: Path) -> None:
    _bomb(path, zlib.compressobj(9, zlib.DEFLATED, 31))  # 31: a gzip container


def _wide(path: Path) -> None:
    wide = _good(1)[:-1] + b"".join(b',"k%d":0' % i for i in range(100_000)) + b"}"
    path.write_bytes(_good(0) + b"\n" + wide + b"\n" + _good(2) + b"\n")


def _duplicates(path: Path) -> None:
    from bench_ingest import data_file

    base, _ = data_file(100_000)
    shutil.copyfile(base, path)
    with open(path, "ab") as out:
        out.write(_good(10**6) + b"\n")


def _dev_zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


INPUTS: dict[str, tuple[str, Callable[[Path], None]]] = {
    "braces-2m": ("braces-2m.jsonl", _braces),
    "long-600m": ("long-600m.jsonl", _long),
    "bomb-2g.zst": ("bomb-2g.jsonl.zst", _bomb_zst),
    "bomb-2g.gz": ("bomb-2g.jsonl.gz", _bomb_gz),
    "wide-100k": ("wide-100k.jsonl", _wide),
    "duplicates-100k": ("duplicates-100k.jsonl", _duplicates),
    "dev-zero": ("dev-zero.jsonl", _dev_zero),
}


def input_file(name: str) -> Path:
    """The cached input ``name``, made if missing."""
    file_name, make = INPUTS[name]
    path = DATA / file_name
    if not path.is_symlink() and not path.exists():
        DATA.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(path.name + ".partial")
        partial.unlink(missing_ok=True)
        make(partial)
        partial.rename(path)
    return path


# -- the measured run (a child process) -----------------------------------------------------


def _child(path: Path, home: Path, cap_gb: float) -> None:
    limit = int(cap_gb * (1 << 30))
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    from toolkit.errors import DistillError
    from toolkit.ingest.ingest import ingest_paths
    from toolkit.layout import Layout

    with timed() as t:
        try:
            result = ingest_paths([path], Layout.at(home))
        except DistillError as error:
            report_child(0, t, outcome=f"refused: {error.message}")
            return
    file = result.files[0]
    outcome = f"{file.status}: {file.report.valid:,} valid, {file.report.invalid:,} rejected"
    if file.duplicates:
        outcome += f" ({file.duplicates:,} duplicates)"
    report_child(file.report.lines, t, outcome=outcome)


def _measure(name: str, cap_gb: float, timeout: float) -> Measurement | str:
    path = input_file(name)
    home = OUT / "homes" / f"hostile-{os.getpid()}"
    shutil.rmtree(home, ignore_errors=True)
    child = [str(Path(__file__).resolve()), "--home", str(home), "--cap-gb", str(cap_gb), "--child"]
    try:
        if name == "duplicates-100k":  # the log as first ingested, in a process of its own (not measured)
            from bench_ingest import data_file

            run_child("setup", [*child, str(data_file(100_000)[0])], timeout=timeout)
        return run_child(name, [*child, str(path)], timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"killed: still running after {timeout:g}s"
    except RuntimeError as error:  # the child died: say how
        lines = [line for line in str(error).splitlines() if line.strip()]
        return f"died: {lines[-1].strip()[:100] if lines else error}"
    finally:
        shutil.rmtree(home, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", choices=sorted(INPUTS), help="measure these inputs only")
    parser.add_argument("--cap-gb", type=float, default=5.0, help="address-space limit of each child (GiB)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds a child may run before it is killed")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--home", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child, args.home, args.cap_gb)
        return 0

    out = Tee()
    out(
        f"# hostile-input memory benchmark  {dt.datetime.now().isoformat(timespec='seconds')}  "
        f"python {platform.python_version()}  cpus {os.cpu_count()}  load {os.getloadavg()[0]:.2f}  "
        f"cap {args.cap_gb:g} GiB"
    )
    results: dict[str, Any] = {}
    for name in args.only or INPUTS:
        with timed() as made:
            path = input_file(name)
        size = "a link" if path.is_symlink() else f"{path.stat().st_size / MB:,.1f} MB"
        measured = _measure(name, args.cap_gb, args.timeout)
        if isinstance(measured, str):
            judged = verdict(f"peak RSS, {name} (died)", float("inf"), TARGET_RSS_MB, at_most=True, unit="MiB")
            out(f"{name:<17} {'-':>10} {'-':>8}  {measured}  {judged}   [{size}; made in {made.wall:.0f}s]")
            results[name] = {"died": measured}
            continue
        judged = verdict(f"peak RSS, {name}", measured.peak_rss_mb, TARGET_RSS_MB, at_most=True, unit="MiB")
        out(
            f"{name:<17} {measured.peak_rss_mb:>6,.0f} MiB {measured.wall_s:>6.1f}s  {measured.extra['outcome']}  "
            f"{judged}   [{size}]"
        )
        results[name] = {"peak_rss_mb": measured.peak_rss_mb, "wall_s": measured.wall_s, **measured.extra}
    out(f"target: peak RSS < {TARGET_RSS_MB:,.0f} MiB for any single input file")
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    out.write(OUT / f"bench_hostile-{stamp}.txt")
    (OUT / f"bench_hostile-{stamp}.json").write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
