"""The HTML pages: readable as tables without JavaScript; ``static/app.js`` adds the charts and live status.

Controls are forms that POST (never links), answered by a redirect back to
the page with what happened, so they work without scripts too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates

from toolkit.errors import ConfigError, DistillError
from toolkit.loop.state import RunFolder
from toolkit.loop.status import list_runs, run_status
from toolkit.serve import control, views
from toolkit.serve.admission import LoopLimitError
from toolkit.serve.compare import comparison, parse_runs
from toolkit.serve.form import START_INPUTS
from toolkit.serve.gate_report import gate_report

router = APIRouter(include_in_schema=False)
templates = Jinja2Templates(directory=Path(__file__).parent / "templates")
templates.env.globals["start_inputs"] = START_INPUTS
REPORT_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,200}\.html$"


def _page(request: Request, template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    return templates.TemplateResponse(
        request, template, {"home": str(request.app.state.layout.home), **context}, status_code=status_code
    )


async def _form(request: Request) -> dict[str, str]:
    """An urlencoded form's fields (the last value of each)."""
    body = (await request.body()).decode("utf-8", errors="replace")
    return {key: values[-1] for key, values in parse_qs(body, keep_blank_values=True).items()}


@router.get("/", response_class=HTMLResponse)
def index(request: Request, message: str | None = None) -> HTMLResponse:
    return _page(request, "index.html", runs=list_runs(request.app.state.layout), message=message)


@router.get("/runs/{name}", response_class=HTMLResponse)
def run_page(request: Request, name: str, message: str | None = None) -> HTMLResponse:
    layout = request.app.state.layout
    status = run_status(layout, name)
    detail = views.run_detail(layout, name)
    others = [r.name for r in list_runs(layout) if r.name != name]
    return _page(
        request,
        "run.html",
        status=status,
        detail=detail,
        others=others,
        message=message,
        log=_log_tail(layout, name),
        label_issues=views.label_issue_rates(layout, name),
    )


@router.get("/runs/{name}/gates/{generation}/{gate}", response_class=HTMLResponse)
def gate_page(request: Request, name: str, generation: int, gate: str) -> HTMLResponse:
    """A PPO or student gate's report: each attempt's paired results per round and the GSPRT trace."""
    return _page(request, "gate.html", report=gate_report(request.app.state.layout, name, generation, gate))


@router.get("/compare", response_class=HTMLResponse)
def compare_page(request: Request, runs: list[str] = Query(default=[])) -> HTMLResponse:  # noqa: B008
    """Two or more runs side by side: ``/compare?runs=a,b`` (or ``?runs=a&runs=b``, as the index's form sends)."""
    names = parse_runs(runs)
    layout = request.app.state.layout
    every = [r.name for r in list_runs(layout)]
    return _page(request, "compare.html", names=names, compared=comparison(layout, names), every=every)


@router.get("/lake", response_class=HTMLResponse)
def lake_page(request: Request) -> HTMLResponse:
    return _page(request, "lake.html", lake=views.lake_summary(request.app.state.layout))


@router.post("/start")
async def start_form(request: Request) -> Response:
    fields = await _form(request)
    layout = request.app.state.layout
    try:
        ask = control.StartRequest.model_validate(
            {
                "name": fields.get("name", "").strip(),
                "config": fields.get("config") or None,
                "max_generations": fields.get("max_generations") or None,
                "seed": fields.get("seed") or None,
            }
        )
        result = control.start_run(layout, ask, request.app.state.slots)
    except (DistillError, ValueError) as error:
        return _page(
            request, "index.html", status_code=_code(error), runs=list_runs(layout), error=_say(error), form=fields
        )
    return _back(f"/runs/{result.status.name}", result.message)


@router.post("/runs/{name}/{action}")
def control_form(request: Request, name: str, action: str) -> Response:
    layout, slots = request.app.state.layout, request.app.state.slots
    acts = {
        "pause": lambda: control.pause_run(layout, name),
        "resume": lambda: control.resume_run(layout, name, slots),
        "stop": lambda: control.stop_run(layout, name),
    }
    if action not in acts:
        return _page(request, "error.html", status_code=404, error=f"unknown control {action!r}")
    try:
        result = acts[action]()
    except DistillError as error:
        return _back(f"/runs/{quote(name)}", f"{action} refused: {_say(error)}")
    return _back(f"/runs/{quote(name)}", result.message)


@router.get("/reports/{file_name}")
def report(request: Request, file_name: str) -> Response:
    """A gate report (HTML) from the data root's reports/, by file name only."""
    import re

    reports = request.app.state.layout.reports
    path = reports / file_name
    if not re.fullmatch(REPORT_NAME, file_name) or path.resolve().parent != reports.resolve() or not path.is_file():
        return _page(request, "error.html", status_code=404, error=f"no report {file_name!r} in {reports}")
    return HTMLResponse(with_back_link(path.read_text(encoding="utf-8", errors="replace")))


def with_back_link(html: str) -> str:
    """A report file's page with a link back to the dashboard as its first line (the file itself stays as written:
    it is read offline too, where the dashboard is not)."""
    link = '<p style="font:14px system-ui,sans-serif"><a href="/">&larr; Distill dashboard</a></p>'
    head, found, tail = html.partition("<body>")
    return head + found + link + tail if found else link + html


def _back(path: str, message: str) -> RedirectResponse:
    return RedirectResponse(f"{path}?message={quote(message)}", status_code=303)


def _log_tail(layout: Any, name: str, lines: int = 15) -> list[str]:
    try:
        text = RunFolder(layout, name).log_path.read_text(encoding="utf-8", errors="replace")
    except (OSError, DistillError):  # missing, or a link leading out of the data root (never read)
        return []
    return text.splitlines()[-lines:]


def _say(error: Exception) -> str:
    if isinstance(error, DistillError):
        return error.message + (f" ({error.hint})" if error.hint else "")
    return str(error).splitlines()[0]


def _code(error: Exception) -> int:
    if isinstance(error, LoopLimitError):
        return 429
    return (
        409 if isinstance(error, control.ControlError) else 422 if isinstance(error, ConfigError | ValueError) else 500
    )
