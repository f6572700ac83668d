"""The dashboard's FastAPI app: the JSON API, the pages, the vendored static files, the access guard."""

from __future__ import annotations

from pathlib import Path
from typing import Final

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles

from toolkit import __version__
from toolkit.errors import CatalogError, ConfigError, DistillError, UsageError
from toolkit.layout import Layout
from toolkit.loop.state import RunNotFoundError
from toolkit.serve import api, control, pages
from toolkit.serve.admission import DEFAULT_MAX_LOOPS, LoopLimitError, LoopSlots
from toolkit.serve.security import Access, Guard

CHART_JS_VERSION: Final = "4.6.1"
STATIC = Path(__file__).parent / "static"


def create_app(layout: Layout, access: Access, max_loops: int = DEFAULT_MAX_LOOPS) -> Guard:
    """The dashboard over ``layout``, behind ``access`` (see :mod:`toolkit.serve.security`), starting loops while
    fewer than ``max_loops`` run on the data root (see :mod:`toolkit.serve.admission`)."""
    app = FastAPI(
        title="Distill",
        version=__version__,
        docs_url=None,
        redoc_url=None,
        description="Watch and steer Distill's closed loop: runs, generations, ratings, the lake.",
    )
    app.state.layout = layout
    app.state.slots = LoopSlots(max_loops)
    app.add_api_route("/docs", _docs, include_in_schema=False)
    app.include_router(api.router)
    app.include_router(pages.router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.add_exception_handler(DistillError, _distill_error)  # type: ignore[arg-type]
    return Guard(app, access)


def _docs() -> HTMLResponse:
    """The OpenAPI explorer, from the vendored Swagger UI (nothing fetched from a CDN)."""
    return get_swagger_ui_html(
        openapi_url="/openapi.json",
        title="Distill API",
        swagger_js_url="/static/vendor/swagger-ui/swagger-ui-bundle.js",
        swagger_css_url="/static/vendor/swagger-ui/swagger-ui.css",
        swagger_favicon_url="/static/favicon.svg",
    )


def _status_code(error: DistillError) -> int:
    if isinstance(error, LoopLimitError):
        return 429
    if isinstance(error, RunNotFoundError):
        return 404
    if isinstance(error, control.ControlError):
        return 409
    if isinstance(error, ConfigError | UsageError):
        return 422
    if isinstance(error, CatalogError):
        return 503
    return 500


async def _distill_error(request: Request, error: DistillError) -> JSONResponse:
    code = _status_code(error)
    headers = {"Retry-After": str(error.retry_after)} if isinstance(error, LoopLimitError) else None
    if not request.url.path.startswith("/api/"):
        return pages.templates.TemplateResponse(
            request,
            "error.html",
            {"error": error.message, "hint": error.hint, "home": str(request.app.state.layout.home)},
            status_code=code,
            headers=headers,
        )
    return JSONResponse({"detail": error.message, "hint": error.hint}, status_code=code, headers=headers)
