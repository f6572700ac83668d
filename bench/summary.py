"""One table of every target the benchmarks judged in a ``make bench`` run.

Run: ``.venv/bin/python bench/summary.py [VERDICTS.jsonl]`` (default: ``bench/out/verdicts.jsonl``, the file
``make bench`` has each benchmark append its verdicts to through ``_common.verdict``). Prints, per target, the
benchmark, the figure, what it was measured against in the same run, the measured value, the target and PASS or
FAIL, then how many targets were met. Exits 0 either way: a FAIL is a finding, not a crash.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

DEFAULT = Path(__file__).resolve().parent / "out" / "verdicts.jsonl"


def render(records: list[dict]) -> list[str]:
    """The summary table's lines for ``records`` (the JSON lines ``verdict`` wrote), in run order."""
    header = ("bench", "figure", "against (same run)", "measured", "target", "")
    rows = [
        (
            r["bench"],
            r["what"],
            r.get("against") or "-",
            r["measured"],
            r["target"],
            "-" if r["ok"] is None else "PASS" if r["ok"] else "FAIL",
        )
        for r in records
    ]
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    line = "  ".join("{:<%d}" % w for w in widths)
    out = [line.format(*header).rstrip(), "  ".join("-" * w for w in widths)]
    out += [line.format(*row).rstrip() for row in rows]
    judged = [r for r in records if r["ok"] is not None]
    met = sum(r["ok"] for r in judged)
    out.append(f"{met} of {len(judged)} targets met")
    return out


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    if not path.is_file():
        sys.exit(f"no verdicts at {path}: run `make bench` (or set DISTILL_BENCH_VERDICTS={path} for one bench)")
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    print("\n".join(render(records)))


if __name__ == "__main__":
    main()
