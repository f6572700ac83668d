"""``distill export``: a built dataset in a format other tools load (Minari, for offline RL)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from toolkit.cli.app import BuildArg, FingerprintOpt, JsonOpt, app, console, layout, print_json
from toolkit.errors import UsageError
from toolkit.limits import MAX_VERSION

FORMATS = ("minari",)


@app.command("export")
def export_command(
    build: BuildArg,
    fmt: Annotated[str, typer.Option("--format", help="Target format: minari.")] = "minari",
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Minari datasets root (default $MINARI_DATASETS_PATH or ~/.minari/datasets)."),
    ] = None,
    split: Annotated[str, typer.Option("--split", help="train or holdout.")] = "train",
    fingerprint: FingerprintOpt = None,
    version: Annotated[
        int, typer.Option("--version", max=MAX_VERSION, min=0, help="The -vN of the exported dataset id.")
    ] = 0,
    as_json: JsonOpt = False,
) -> None:
    """Write a built dataset as a Minari dataset: one episode per (game, seat), loadable with minari.load_dataset."""
    if fmt not in FORMATS:
        raise UsageError(f"--format {fmt!r} is not supported", hint=f"use one of {', '.join(FORMATS)}")
    if split not in ("train", "holdout"):
        raise UsageError(f"--split {split!r} is not a split", hint="use train or holdout")
    from toolkit.export.minari import MinariExportConfig, export_minari

    config = MinariExportConfig(name=build, fingerprint=fingerprint, split=split, out=out, version=version)
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
