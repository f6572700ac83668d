"""The JSON API (OpenAPI at ``/docs``): the seed's start / status / stop, pause and resume, and what the charts draw.

Every response is a typed record; ``generations`` are the records
``distill loop history --json`` prints. Errors are ``{"detail": ...,
"hint": ...}`` with 404 (no such run), 409 (the run's state refuses the
control), 422 (an invalid name or config, or one the dashboard does not
start: see :mod:`toolkit.serve.admission`) or 429 (as many loops run as the
server starts at once; ``Retry-After`` says when to ask again).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel

from toolkit.loop.config import NAME_PATTERN
from toolkit.loop.record import GenerationRecord
from toolkit.loop.status import RunStatus, list_runs, run_status
from toolkit.serve import control, views
from toolkit.serve.compare import RunComparison, comparison, parse_runs

router = APIRouter(prefix="/api", tags=["api"])
Name = Annotated[str, Query(pattern=NAME_PATTERN, description="The loop run (folder runs/<name>).")]


def _layout(request: Request):  # noqa: ANN202 - the app's Layout
    return request.app.state.layout


@router.get("/runs", response_model=list[RunStatus], summary="Every loop run of the data root")
def get_runs(request: Request) -> list[RunStatus]:
    return list_runs(_layout(request))


@router.get("/distill/status", response_model=RunStatus, summary="Where a loop run stands")
def get_status(request: Request, name: Name = "demo") -> RunStatus:
    return run_status(_layout(request), name)


@router.post(
    "/distill/start",
    response_model=control.ControlResult,
    summary="Start a new loop run in its own process (429 when the server runs as many loops as it allows)",
)
def post_start(request: Request, ask: control.StartRequest) -> control.ControlResult:
    return control.start_run(_layout(request), ask, request.app.state.slots)


@router.post("/distill/stop", response_model=control.ControlResult, summary="Stop a loop run at its next step boundary")
def post_stop(request: Request, run: control.RunRef) -> control.ControlResult:
    return control.stop_run(_layout(request), run.name)


@router.post(
    "/distill/pause", response_model=control.ControlResult, summary="Pause a loop run at its next step boundary"
)
def post_pause(request: Request, run: control.RunRef) -> control.ControlResult:
    return control.pause_run(_layout(request), run.name)


@router.post(
    "/distill/resume",
    response_model=control.ControlResult,
    summary="Resume a paused, stopped or interrupted loop run in its own process",
)
def post_resume(request: Request, run: control.RunRef) -> control.ControlResult:
    return control.resume_run(_layout(request), run.name, request.app.state.slots)


@router.get(
    "/distill/generations",
    response_model=list[GenerationRecord],
    summary="Each finished generation's record (the trends view; as `distill loop history --json`)",
)
def get_generations(request: Request, name: Name = "demo") -> list[GenerationRecord]:
    run_status(_layout(request), name)  # 404 for an unknown run
    return views.generations(_layout(request), name)


@router.get(
    "/distill/ratings",
    response_model=list[views.RatingsPoint],
    summary="The rating table after each generation (the Elo / OpenSkill history)",
)
def get_ratings(request: Request, name: Name = "demo") -> list[views.RatingsPoint]:
    run_status(_layout(request), name)
    return views.ratings_points(views.generations(_layout(request), name))


@router.get(
    "/distill/composition",
    response_model=list[views.CompositionPoint],
    summary="The student's training rows per generation, by source (Forge-role vs PPO and the rest)",
)
def get_composition(request: Request, name: Name = "demo") -> list[views.CompositionPoint]:
    run_status(_layout(request), name)
    layout = _layout(request)
    return views.composition_points(views.generations(layout, name), layout)


@router.get("/distill/run", response_model=views.RunDetail, summary="Everything the run page shows")
def get_run_detail(request: Request, name: Name = "demo") -> views.RunDetail:
    return views.run_detail(_layout(request), name)


@router.get(
    "/lake",
    response_model=views.LakeSummary,
    summary="Rows by source and generation, quarantined lines by reason, the latest batches",
)
def get_lake(request: Request) -> views.LakeSummary:
    return views.lake_summary(_layout(request))


class ApiError(BaseModel):
    """An error: the request's validation errors (a list), or what was refused and the next action."""

    detail: str | list[dict[str, Any]]
    hint: str | None = None


@router.get(
    "/distill/compare",
    response_model=RunComparison,
    responses={422: {"model": ApiError, "description": "Invalid names, or not 2 to 8 runs."}},
    summary="Two or more runs side by side: strength per generation, composition, ratings",
)
def get_compare(
    request: Request,
    runs: Annotated[list[str], Query(description="Run names: runs=a,b or runs=a&runs=b (2 to 8).")],
) -> RunComparison:
    return comparison(_layout(request), parse_runs(runs))
