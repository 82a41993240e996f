"""Who may call what, for every route of the app: generated from its OpenAPI schema, so a new endpoint that is not
in the table below fails, and one in the table that does not check its role fails too.

Each route is called with no session (401 unless it is open), with a session that has ended (401), with a
one-time password still to change (403 but for the few routes that allow it), and as each role: 403 below the
route's minimum role, anything but 401/403 from it on (404 for the ids that do not exist, 422 for a missing body:
the role check passed).
"""

import re
from collections.abc import Iterator

import pytest
from fastapi.routing import iter_route_contexts
from fastapi.testclient import TestClient
from sqlalchemy import delete

from app.core.db import session_scope
from app.main import app
from app.models import Role, UserSession
from tests.auth import ONE_TIME_USER, ROLE_USERS, bearer, session_token

Route = tuple[str, str]

# No session needed.
OPEN: set[Route] = {
    ("GET", "/api/v1/health"),
    ("POST", "/api/v1/auth/login"),
}
# Any session, even one opened with a one-time password that must be changed first.
ANY_SESSION: set[Route] = {
    ("GET", "/api/v1/auth/me"),
    ("POST", "/api/v1/auth/logout"),
    ("POST", "/api/v1/auth/password"),
}
# The least role that may call each route.
MINIMUM_ROLE: dict[Route, Role] = {
    ("GET", "/api/v1/jobs"): Role.VIEWER,
    ("GET", "/api/v1/jobs/{job_id}"): Role.VIEWER,
    ("GET", "/api/v1/jobs/{job_id}/logs"): Role.VIEWER,
    ("GET", "/api/v1/jobs/{job_id}/server"): Role.VIEWER,
    ("GET", "/api/v1/jobs/{job_id}/events"): Role.VIEWER,
    ("GET", "/api/v1/jobs/{job_id}/trace"): Role.VIEWER,
    ("GET", "/api/v1/jobs/{job_id}/trace/window"): Role.VIEWER,
    ("GET", "/api/v1/jobs/{job_id}/trace/stats"): Role.VIEWER,
    ("GET", "/api/v1/jobs/{job_id}/trace/operations"): Role.VIEWER,
    ("GET", "/api/v1/jobs/{job_id}/trace/perfetto"): Role.VIEWER,
    ("GET", "/api/v1/backups"): Role.VIEWER,
    ("GET", "/api/v1/targets"): Role.VIEWER,
    ("GET", "/api/v1/sandbox-presets"): Role.VIEWER,
    ("POST", "/api/v1/jobs/restore"): Role.OPERATOR,
    ("POST", "/api/v1/jobs/backup"): Role.OPERATOR,
    ("GET", "/api/v1/jobs/{job_id}/advice"): Role.VIEWER,
    ("GET", "/api/v1/compare"): Role.VIEWER,
    ("POST", "/api/v1/jobs/{job_id}/advice/{rule}/rerun"): Role.OPERATOR,
    ("POST", "/api/v1/jobs/{job_id}/cancel"): Role.OPERATOR,
    ("POST", "/api/v1/jobs/{job_id}/retry"): Role.OPERATOR,
    ("POST", "/api/v1/traces/import"): Role.OPERATOR,
    ("POST", "/api/v1/targets/{target_id}/check"): Role.OPERATOR,
    ("POST", "/api/v1/targets"): Role.ADMIN,
    ("PATCH", "/api/v1/targets/{target_id}"): Role.ADMIN,
    ("DELETE", "/api/v1/targets/{target_id}"): Role.ADMIN,
    ("GET", "/api/v1/users"): Role.ADMIN,
    ("POST", "/api/v1/users"): Role.ADMIN,
    ("PATCH", "/api/v1/users/{user_id}"): Role.ADMIN,
    ("DELETE", "/api/v1/users/{user_id}"): Role.ADMIN,
    ("POST", "/api/v1/users/{user_id}/password"): Role.ADMIN,
    ("GET", "/api/v1/audit"): Role.ADMIN,
    ("GET", "/api/v1/protected-databases"): Role.VIEWER,
    ("GET", "/api/v1/protected-databases/{protected_id}"): Role.VIEWER,
    ("GET", "/api/v1/drills"): Role.VIEWER,
    ("GET", "/api/v1/trends"): Role.VIEWER,
    ("GET", "/api/v1/trends/runs.csv"): Role.VIEWER,
    ("GET", "/api/v1/notifications"): Role.VIEWER,
    ("POST", "/api/v1/protected-databases"): Role.OPERATOR,
    ("PATCH", "/api/v1/protected-databases/{protected_id}"): Role.OPERATOR,
    ("DELETE", "/api/v1/protected-databases/{protected_id}"): Role.OPERATOR,
    ("POST", "/api/v1/protected-databases/{protected_id}/drills"): Role.OPERATOR,
    ("POST", "/api/v1/protected-databases/{protected_id}/notifications/test"): Role.OPERATOR,
}

ROLES = [Role.VIEWER, Role.OPERATOR, Role.ADMIN]
MISSING_ID = "999999"


def openapi_routes() -> list[Route]:
    return sorted(
        (method.upper(), path)
        for path, operations in app.openapi()["paths"].items()
        if path.startswith("/api/")
        for method in operations
    )


ROUTES = openapi_routes()


def test_the_schema_lists_every_api_route() -> None:
    """A route left out of the schema (include_in_schema=False) would escape the checks below."""
    mounted = {
        (method, route.path)
        for route in iter_route_contexts(app.routes)  # included routers' routes with their full paths
        if route.path is not None and route.path.startswith("/api/")
        for method in getattr(route, "methods", None) or ()
    }
    assert mounted == set(ROUTES)


def test_every_route_is_in_the_table_once() -> None:
    tables = [OPEN, ANY_SESSION, set(MINIMUM_ROLE)]
    listed = [route for table in tables for route in table]
    assert len(listed) == len(set(listed)), "a route is in more than one table"
    missing = sorted(set(ROUTES) - set(listed))
    assert not missing, f"routes without a rule: add each to OPEN, ANY_SESSION or MINIMUM_ROLE: {missing}"
    stale = sorted(set(listed) - set(ROUTES))
    assert not stale, f"rules for routes that no longer exist: {stale}"


def _call(client: TestClient, route: Route, token: str | None) -> int:
    method, path = route
    url = re.sub(r"\{[^}]+\}", MISSING_ID, path)
    headers = bearer(token) if token is not None else {}
    return client.request(method, url, headers=headers).status_code


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    with TestClient(app) as test_client:
        yield test_client


@pytest.mark.parametrize("route", [r for r in ROUTES if r not in OPEN], ids=" ".join)
def test_no_session_gets_401(client: TestClient, route: Route) -> None:
    assert _call(client, route, None) == 401
    assert _call(client, route, "not-a-token-we-gave") == 401


@pytest.mark.parametrize("route", sorted(OPEN), ids=" ".join)
def test_open_routes_answer_without_a_session(client: TestClient, route: Route) -> None:
    assert _call(client, route, None) not in (401, 403)


@pytest.mark.parametrize("route", [r for r in ROUTES if r not in OPEN], ids=" ".join)
def test_an_ended_session_gets_401(client: TestClient, route: Route) -> None:
    token = session_token(ROLE_USERS[Role.ADMIN])
    with session_scope() as session:
        session.execute(delete(UserSession))
    assert _call(client, route, token) == 401


@pytest.mark.parametrize("route", [r for r in ROUTES if r not in OPEN], ids=" ".join)
def test_a_one_time_password_allows_only_changing_it(client: TestClient, route: Route) -> None:
    """ONE_TIME_USER is an admin: only the one-time password stands in the way."""
    status = _call(client, route, session_token(ONE_TIME_USER))
    if route in ANY_SESSION:
        assert status not in (401, 403)
    else:
        assert status == 403


@pytest.mark.parametrize("route", sorted(MINIMUM_ROLE), ids=" ".join)
@pytest.mark.parametrize("role", ROLES, ids=str)
def test_each_role_gets_403_below_the_minimum(client: TestClient, role: Role, route: Route) -> None:
    status = _call(client, route, session_token(ROLE_USERS[role]))
    if role.allows(MINIMUM_ROLE[route]):
        assert status not in (401, 403), f"{role} may call {route}"
    else:
        assert status == 403, f"{role} may not call {route}"


@pytest.mark.parametrize("route", sorted(ANY_SESSION), ids=" ".join)
@pytest.mark.parametrize("role", ROLES, ids=str)
def test_every_role_may_manage_its_own_session(client: TestClient, role: Role, route: Route) -> None:
    assert _call(client, route, session_token(ROLE_USERS[role])) not in (401, 403)
