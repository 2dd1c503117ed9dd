"""Property-based fuzzing of `crag serve` from its own OpenAPI schema (schemathesis), against a real
uvicorn server on 127.0.0.1 with fake models: no request may get a 5xx other than the load
limit's 503, and every documented response must match its schema. Every route is fuzzed (slow: every
system's mount, /health and DELETE /threads/{thread_id}); the default run fuzzes CRAG's own mount and the
routes beside it.

The strategies come from schemathesis and hypothesis drives them per operation (schemathesis'
pytest plugin does not load under pytest 9). Derandomized, so CI runs the same cases every time;
`CRAG_FUZZ_RANDOM=1` explores new ones.
"""

from __future__ import annotations

import os

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import checks

from crag.graphs import BUILDERS
from crag.serve.app import ServerSettings, create_app
from tests.fakes import fake_context
from tests.servers import running

EXAMPLES_PER_OPERATION = 25
OWN_ROUTES = ("/crag/", "/health", "/threads/")  # the quick run's: CRAG's mount and the server's own routes


@pytest.fixture(scope="module")
def api_schema(tmp_path_factory):
    app = create_app(
        ServerSettings(
            context=fake_context(),
            threads_db=tmp_path_factory.mktemp("t") / "threads.sqlite",
            api_key=None,
            keys_file=None,
        )
    )
    with running(app) as url:
        yield schemathesis.openapi.from_url(f"{url}/openapi.json")


def fuzz(api_schema, wanted_paths: tuple[str, ...] | None, examples: int) -> dict[str, int]:
    """Run `examples` generated requests per operation whose path starts with one of `wanted_paths` (None:
    every operation); the number of requests per operation label."""
    checks.load_all_checks()  # the OpenAPI checks register themselves on import
    wanted = [checks.not_a_server_error, checks.response_schema_conformance]
    cases: dict[str, int] = {}
    for result in api_schema.get_all_operations():
        operation = result.ok()
        if wanted_paths is not None and not operation.path.startswith(wanted_paths):
            continue

        @given(case=operation.as_strategy())
        @settings(
            max_examples=examples,
            deadline=None,
            database=None,
            derandomize=not os.environ.get("CRAG_FUZZ_RANDOM"),
            suppress_health_check=list(HealthCheck),
        )
        def one(case):
            cases[operation.label] = cases.get(operation.label, 0) + 1
            response = case.call(timeout=60)
            if response.status_code == 503:  # the load limit, which must say when to retry
                assert response.headers.get("retry-after"), response.text
                return
            case.validate_response(response, checks=wanted)

        one()
    print(f"\n{sum(cases.values())} generated requests over {len(cases)} operations")
    return cases


def test_no_server_errors_and_documented_responses_match(api_schema):
    cases = fuzz(api_schema, OWN_ROUTES, EXAMPLES_PER_OPERATION)
    assert sum(cases.values()) >= 200
    for route in ("invoke", "batch", "stream", "stream_events"):
        assert f"POST /crag/{route}" in cases, sorted(cases)
    assert "DELETE /threads/{thread_id}" in cases and "GET /health" in cases, sorted(cases)


@pytest.mark.slow
def test_every_route_of_every_system(api_schema):
    every = {result.ok().label for result in api_schema.get_all_operations()}
    cases = fuzz(api_schema, None, EXAMPLES_PER_OPERATION)
    assert set(cases) == every, sorted(every - set(cases))  # no route left out
    for name in BUILDERS:
        for route in ("invoke", "batch", "stream", "stream_events", "c/{config_hash}/invoke"):
            assert f"POST /{name}/{route}" in cases, (name, route)
    assert "DELETE /threads/{thread_id}" in cases
