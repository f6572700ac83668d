"""The root typer app, the global ``--home`` option and shared rendering helpers.

Command modules import :data:`app` and register on it; ``toolkit.cli.main``
imports them all. Only the CLI prints.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Literal, get_args, get_origin

import click
import typer
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from rich.console import Console, ConsoleOptions, RenderResult
from rich.markup import escape
from rich.progress import BarColumn, TextColumn, TimeElapsedColumn
from rich.progress import Progress as RichProgress
from rich.table import Table as RichTable
from rich.text import Text
from typer.core import TyperGroup

from toolkit.engine.config import EngineConfig
from toolkit.errors import ConfigError, DistillError
from toolkit.game import DEFAULT_MAX_ROUNDS
from toolkit.jobs.config import BackendConfig
from toolkit.layout import HOME_ENV, LAKE_ENV, Layout
from toolkit.limits import MAX_ROUNDS, MAX_ROUNDS_HELP, MaxRounds
from toolkit.progress import Progress, ProgressFn

# Text from users, logs and files is printed as it is: no markup, no emoji codes (":x:"), no highlighting. The few
# styled messages of Distill's own pass markup=True, with what they quote escaped.
err_console = Console(stderr=True, highlight=False, markup=False, emoji=False)


class Table(RichTable):
    """A rich table whose title, headers and cells are printed verbatim when given as strings (a retire reason, a
    file name, a batch id): what a user or a log wrote is never read as markup."""

    def __init__(self, *headers: Any, title: Any = None, **kwargs: Any) -> None:
        super().__init__(*map(_verbatim, headers), title=_verbatim(title), **kwargs)

    def add_column(self, header: Any = "", *args: Any, **kwargs: Any) -> None:
        super().add_column(_verbatim(header), *args, **kwargs)

    def add_row(self, *renderables: Any, **kwargs: Any) -> None:
        super().add_row(*map(_verbatim, renderables), **kwargs)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        """The table, where each of its words fits its column whole; else (a narrow terminal, a pipe at 80
        columns) one block per row, ``header  value`` a line: an id, a time or an interval is never cut."""
        if not self.rows or self._narrowest(console, options) <= options.max_width:
            yield from super().__rich_console__(console, options)
            return
        if self.title is not None:
            yield self.title
        headers = [column.header for column in self.columns]
        cells = [list(column.cells) for column in self.columns]
        for row in range(len(self.rows)):
            block = RichTable(box=None, show_header=False, pad_edge=False, padding=(0, 2, 0, 0))
            block.add_column(style="bold", no_wrap=True)
            block.add_column(overflow="fold")
            for header, column in zip(headers, cells, strict=True):
                block.add_row(header, column[row] if row < len(column) else "")
            yield Text(f"[{row + 1}]", style="dim")
            yield block

    def _narrowest(self, console: Console, options: ConsoleOptions) -> int:
        """The width the table needs for its longest word in each column to fit whole."""
        wide = options.update_width(1 << 16)
        return sum(self._measure_column(console, wide, column).minimum for column in self.columns) + self._extra_width


def _verbatim(value: Any) -> Any:
    return Text(value) if isinstance(value, str) else value


class _DistillGroup(TyperGroup):
    """The root command group: the one place a :class:`DistillError` becomes a
    message on stderr and its exit code (2 for usage errors, 1 otherwise)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except DistillError as error:
            _error(error.message, error.hint)
            raise typer.Exit(error.exit_code) from error
        except PermissionError as error:  # a file under the data root (or an output) this user cannot write
            _error(
                f"permission denied: {error.filename}",
                "Distill writes under the data root (--home) and to the "
                "paths you give it: choose ones you can write to, or fix their permissions",
            )
            raise typer.Exit(1) from error


def _error(message: str, hint: str | None) -> None:
    err_console.print(f"[red]error:[/red] {escape(message)}", markup=True, soft_wrap=True)
    if hint:
        err_console.print(f"  hint: {hint}", markup=False, soft_wrap=True)


app = typer.Typer(
    cls=_DistillGroup,
    name="distill",
    help="Distill: closed-loop policy distillation for game AI, data first.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console(highlight=False, markup=False, emoji=False)


class _State:
    home: Path | None = None
    lake: str | None = None


state = _State()


@app.callback()
def _root(
    home: Annotated[
        Path | None,
        typer.Option("--home", help=f"Data root (default: ${HOME_ENV} or ./datasets).", show_default=False),
    ] = None,
    lake: Annotated[
        str | None,
        typer.Option(
            "--lake",
            help=f"A lake shared by several data roots: s3://bucket/prefix or a folder (default: ${LAKE_ENV}, "
            "else the data root's own lake/). Credentials and endpoint: the AWS_* variables.",
            show_default=False,
        ),
    ] = None,
) -> None:
    state.home, state.lake = home, lake


# Options every command shares, defined once.
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable output (JSON) on stdout.")]
# A build, wherever a command takes one: NAME (its latest build) or NAME@FINGERPRINT (toolkit.datasets.ref).
BuildArg = Annotated[str, typer.Argument(help="A build: NAME (its latest) or NAME@FINGERPRINT.", show_default=False)]
FingerprintOpt = Annotated[
    str | None, typer.Option("--fingerprint", help="A build other than the latest (same as NAME@FINGERPRINT).")
]


def model_option(model: type[BaseModel], name: str, flag: str) -> Any:
    """The option ``flag`` of ``model``'s field ``name``, from that field's one definition: its help is the field's
    description (less the flag it names at its end), its choices (a Literal field) and its default, its bounds the
    field's. The command's parameter is None when the flag is not given: the model's default then applies
    (``model(**given)``). ``flag`` may name both forms of a switch (``--allow-retired/--no-allow-retired``)."""
    return field_option(model.model_fields[name], flag)


def field_option(field: FieldInfo, flag: str) -> Any:
    """The option ``flag`` of a field (see :func:`model_option`); a list field's bounds are its items'."""
    from toolkit.config import field_bounds

    text = re.sub(r"\s*\(--[^)]*\)(?=\.?$)", "", field.description or "").rstrip(".")
    notes = []
    choices = [get_args(a) for a in (field.annotation, *get_args(field.annotation)) if get_origin(a) is Literal]
    if choices:
        notes.append("one of " + ", ".join(map(str, choices[0])))
    if any(get_origin(a) in (list, dict) for a in (field.annotation, *get_args(field.annotation))):
        notes.append("repeat the flag for more")
    if not field.is_required() and (default := field.get_default(call_default_factory=True)) not in (None, [], {}):
        notes.append(f"default: {option_value(default)}")
    low, high = field_bounds(field)
    return typer.Option(
        flag,
        min=low,
        max=high,
        help=text + (f" ({'; '.join(notes)})" if notes else "") + ".",
        show_default=False,
    )


def flags_given(**flags: Any) -> dict[str, Any]:
    """The flags given, by their config field's name: a flag left at None is not given (the field's default
    applies, see :func:`model_option`)."""
    return {name: value for name, value in flags.items() if value is not None}


def option_value(value: Any) -> str:
    """A config value as its flag is written: a list comma-separated, a switch on or off."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, tuple | list):
        return ",".join(map(option_value, value))
    return str(value)


# Where a game job runs: the options of toolkit.jobs.config.BackendConfig, from its fields (see backend_config).
BackendOpt = Annotated[str | None, model_option(BackendConfig, "kind", "--backend")]
WorkersOpt = Annotated[int | None, model_option(BackendConfig, "workers", "--workers")]
AddressOpt = Annotated[str | None, model_option(BackendConfig, "address", "--address")]
ShardOpt = Annotated[int | None, model_option(BackendConfig, "shard_games", "--shard-games")]
AsOfOpt = Annotated[
    str | None,
    typer.Option(
        "--as-of",
        help="Read the lake as it was at this version (distill lake history) or time (ISO, UTC), not the latest.",
    ),
]
EngineOpt = Annotated[
    str | None,
    typer.Option(
        "--engine",
        help='Play the games in this engine (its command line, e.g. "distill engine builtin" or a lab\'s own), over '
        "the engine protocol: player types are its AI profiles, checkpoints Distill's seats.",
    ),
]
EngineProcessesOpt = Annotated[int | None, model_option(EngineConfig, "processes", "--engine-processes")]


def engine_config(command: str | None, processes: int | None) -> EngineConfig | None:
    """The engine the flags name (None: Distill's own game, in process)."""
    if command is None:
        return None
    return EngineConfig(command=command, **({} if processes is None else {"processes": processes}))


# --max-rounds, from the one definition every config's max_rounds has (toolkit.limits.MaxRounds) and its one default;
# None when not given: the command's config then holds the default. ablate's leaves the base run's value instead.
MaxRoundsOpt = Annotated[
    int | None, field_option(FieldInfo.from_annotated_attribute(MaxRounds, DEFAULT_MAX_ROUNDS), "--max-rounds")
]
ConfigMaxRoundsOpt = Annotated[
    int | None,
    typer.Option(
        "--max-rounds",
        min=1,
        max=MAX_ROUNDS,
        help=f"{MAX_ROUNDS_HELP} ({DEFAULT_MAX_ROUNDS}). Default: the config's max_rounds.",
    ),
]
TRUNCATION_WARNING_SHARE = 0.25
"""From this share of games ending at the turn limit, a command that plays games warns: its win rates and ratings
then say more about who survives than about who wins."""


def warn_truncations(truncated: int, games: int, max_rounds: int) -> None:
    """On stderr, when at least :data:`TRUNCATION_WARNING_SHARE` of ``games`` ended at the turn limit."""
    if games and truncated / games >= TRUNCATION_WARNING_SHARE:
        err_console.print(
            f"warning: {truncated:,} of {games:,} games ({truncated / games:.0%}) ended at the turn limit "
            f"({max_rounds} rounds) with no winner; win rates and ratings count them as nobody's win. "
            "A higher --max-rounds lets more games finish.",
            markup=False,
            soft_wrap=True,
        )


def points(diff: float, low: float, high: float) -> str:
    """A difference of two rates (fractions) in percentage points, with its interval and what the interval says:
    ``+3.2 pts [+1.0, +5.4] better``."""
    from toolkit.stats import interval_verdict

    return f"{diff * 100:+.1f} pts [{low * 100:+.1f}, {high * 100:+.1f}] {interval_verdict(low, high)}"


def backend_config(
    kind: str | None, workers: int | None, address: str | None, shard_games: int | None = None
) -> BackendConfig:
    """The :class:`~toolkit.jobs.config.BackendConfig` of ``--backend/--workers/--address/--shard-games`` (each
    one not given: the config's default)."""
    from pydantic import ValidationError

    from toolkit.config import validation_message

    try:
        return BackendConfig(**flags_given(kind=kind, workers=workers, address=address, shard_games=shard_games))
    except ValidationError as error:
        raise ConfigError(f"invalid back end: {validation_message(error)}", hint="see --help") from None


def layout() -> Layout:
    """The data-root layout chosen by ``--home`` / ``DISTILL_HOME`` / the default (refused if it is a file)."""
    chosen = Layout.at(state.home, state.lake)
    chosen.check(write=False)
    return chosen


def checkpoint(path: Path) -> Path:
    """A checkpoint given on the command line (its card, weights or stem): as given, or, when that is a relative
    path not found here, under the data root (loop state, records and cards name checkpoints relative to it)."""
    from toolkit.train.checkpoints import locate_checkpoint

    return locate_checkpoint(path, layout)


@contextmanager
def progress_bar(title: str, *, enabled: bool = True) -> Iterator[ProgressFn | None]:
    """One transient progress line on stderr for any stage's :class:`~toolkit.progress.Progress` (``None`` when
    disabled: JSON output, or stderr is not a terminal): the title, the item being worked on, a bar when the
    total is known, the count and its unit, the time taken."""
    if not enabled or not err_console.is_terminal:
        yield None
        return
    columns = (
        TextColumn(f"{title}"),
        TextColumn("{task.description}", markup=False, style="dim"),
        BarColumn(bar_width=30),
        TextColumn("{task.fields[count]}"),
        TimeElapsedColumn(),
    )
    with RichProgress(*columns, console=err_console, transient=True) as bar:
        task = bar.add_task("", total=None, count="")

        def update(event: Progress) -> None:
            count = f"{event.done:,}" + (f"/{event.total:,}" if event.total is not None else "") + f" {event.unit}"
            bar.update(
                task,
                description=Path(event.item).name if "/" in event.item else event.item,
                completed=event.done,
                total=event.total,
                count=count,
            )

        yield update


def print_json(payload: Any) -> None:
    """Write machine-readable output to stdout (no colours, no wrapping)."""
    sys.stdout.write(json.dumps(payload, indent=2, sort_keys=False, default=str) + "\n")
