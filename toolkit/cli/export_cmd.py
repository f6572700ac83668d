"""``distill export``: a built dataset in a format other tools load (Minari, for offline RL)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from toolkit.cli.app import (
    BuildArg,
    FingerprintOpt,
    JsonOpt,
    app,
    console,
    flags_given,
    layout,
    model_option,
    print_json,
)
from toolkit.errors import UsageError
from toolkit.export.config import MinariExportConfig

FORMATS = ("minari",)


@app.command("export")
def export_command(
    build: BuildArg,
    fmt: Annotated[str, typer.Option("--format", help="Target format: minari.")] = "minari",
    out: Annotated[Path | None, model_option(MinariExportConfig, "out", "--out")] = None,
    split: Annotated[str | None, model_option(MinariExportConfig, "split", "--split")] = None,
    fingerprint: FingerprintOpt = None,
    version: Annotated[int | None, model_option(MinariExportConfig, "version", "--version")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Write a built dataset as a Minari dataset: one episode per (game, seat), loadable with minari.load_dataset."""
    if fmt not in FORMATS:
        raise UsageError(f"--format {fmt!r} is not supported", hint=f"use one of {', '.join(FORMATS)}")
    from toolkit.config import load_config
    from toolkit.export.minari import export_minari

    given = flags_given(split=split, out=out, version=version)
    config = load_config(MinariExportConfig, None, {"name": build, "fingerprint": fingerprint, **given})
    result = export_minari(layout(), config)
    if as_json:
        print_json(result.model_dump(mode="json"))
        return
    verb = "already exported" if result.reused else f"exported in {result.seconds:.1f}s"
    console.print(
        f"[bold]{escape(result.dataset_id)}[/bold] (build {result.fingerprint}): {result.episodes:,} episodes, "
        f"{result.steps:,} steps, {verb} -> {escape(str(result.path))}",
        markup=True,
    )
    console.print(
        f"load it: MINARI_DATASETS_PATH={escape(str(result.root))} python -c "
        f"\"import minari; print(minari.load_dataset('{escape(result.dataset_id)}'))\""
    )
