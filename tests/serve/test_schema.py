"""Property-based tests of the API from its own OpenAPI schema (schemathesis): whatever a client sends, no 500,
and every 2xx answer matches its documented schema. Start is left out (a valid request starts a real loop: see
test_control); stop, pause and resume run against the suite's finished run, so they are refused, never run."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

from toolkit.layout import Layout
from toolkit.serve.app import create_app
from toolkit.serve.security import Access

HOST = {"Host": "127.0.0.1:8765"}
# The app's data root is set per test (the suite's tiny loop); its schema does not depend on it.
APP = create_app(Layout.at("/nonexistent-distill-home"), Access.for_bind("127.0.0.1", 8765, None))
schema = schemathesis.openapi.from_asgi("/openapi.json", APP, headers=HOST).exclude(path="/api/distill/start")


@pytest.fixture(autouse=True)
def _served_data_root(loop_home: Layout) -> None:
    APP.app.state.layout = loop_home


# One pytest test per operation, each with its own id (schemathesis's own parametrize gives them all one node id,
# which pytest-xdist runs once).
OPERATIONS = {operation.label: operation for operation in (found.ok() for found in schema.get_all_operations())}


@pytest.mark.parametrize("label", sorted(OPERATIONS))
def test_no_input_gives_a_server_error(label: str) -> None:
    @given(case=OPERATIONS[label].as_strategy())
    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
    def answered(case: schemathesis.Case) -> None:
        case.call_and_validate(headers=HOST, checks=[not_a_server_error, response_schema_conformance])

    answered()
