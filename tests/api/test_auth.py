"""Logging in and out as a browser (the cookie) and as curl (the Bearer token): what each answer says, how sessions
end, and what a one-time password allows."""

from collections.abc import Iterator
from datetime import timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select, update

from app.auth.service import MAX_FAILED_LOGINS
from app.auth.tokens import COOKIE_NAME, token_hash
from app.core.config import get_settings
from app.core.db import session_scope
from app.main import app
from app.models import AuditEvent, Role, User, UserSession
from app.models.base import utcnow
from tests.api.conftest import error_message
from tests.auth import ROLE_USERS, TEST_PASSWORD, bearer, ensure_user

OPERATOR = ROLE_USERS[Role.OPERATOR]


@pytest.fixture
def browser() -> Iterator[TestClient]:
    """Keeps cookies between requests, as a browser does."""
    with TestClient(app) as test_client:
        yield test_client


def _log_in(client: TestClient, username: str = OPERATOR, password: str = TEST_PASSWORD) -> dict[str, object]:
    response = client.post("/api/v1/auth/login", json={"username": username, "password": password})
    assert response.status_code == 200, response.text
    body: dict[str, object] = response.json()
    return body


def test_a_browser_login_sets_an_httponly_strict_cookie_that_opens_the_api(browser: TestClient) -> None:
    assert browser.get("/api/v1/jobs").status_code == 401
    response = browser.post("/api/v1/auth/login", json={"username": f" {OPERATOR.upper()} ", "password": TEST_PASSWORD})
    assert response.status_code == 200
    cookie = response.headers["set-cookie"]
    assert cookie.startswith(f"{COOKIE_NAME}={response.json()['token']};")
    for attribute in ("HttpOnly", "SameSite=strict", "Path=/api", f"Max-Age={int(get_settings().session_max_age_s)}"):
        assert attribute in cookie
    assert "Secure" not in cookie  # make run serves plain HTTP on 127.0.0.1; RESTORESCOPE_COOKIE_SECURE turns it on
    assert response.json()["user"]["username"] == OPERATOR and response.json()["user"]["role"] == "operator"
    assert browser.get("/api/v1/jobs").status_code == 200
    assert browser.get("/api/v1/auth/me").json()["username"] == OPERATOR


def test_the_same_token_works_as_a_bearer_header_and_only_its_hash_is_stored(anonymous_client: TestClient) -> None:
    token = str(_log_in(anonymous_client)["token"])
    anonymous_client.cookies.clear()
    assert anonymous_client.get("/api/v1/jobs", headers=bearer(token)).status_code == 200
    assert anonymous_client.get("/api/v1/jobs", headers={"Authorization": f"Basic {token}"}).status_code == 401
    with session_scope() as session:
        stored = list(session.scalars(select(UserSession.token_hash)))
    assert token_hash(token) in stored and token not in stored


def test_logout_ends_the_session_at_once(browser: TestClient) -> None:
    token = str(_log_in(browser)["token"])
    response = browser.post("/api/v1/auth/logout")
    assert response.status_code == 204
    assert f'{COOKIE_NAME}=""' in response.headers["set-cookie"] and "Max-Age=0" in response.headers["set-cookie"]
    answer = browser.get("/api/v1/jobs", headers=bearer(token))
    assert answer.status_code == 401
    assert "your session has ended" in answer.json()["detail"]
    assert answer.headers["www-authenticate"] == "Bearer"


def test_a_wrong_password_and_an_unknown_name_get_the_same_answer(anonymous_client: TestClient) -> None:
    wrong = anonymous_client.post("/api/v1/auth/login", json={"username": OPERATOR, "password": "not it at all"})
    unknown = anonymous_client.post("/api/v1/auth/login", json={"username": "nobody", "password": TEST_PASSWORD})
    assert wrong.status_code == unknown.status_code == 401
    assert wrong.json() == unknown.json() == {"detail": "wrong user name or password"}
    assert "set-cookie" not in wrong.headers


def test_repeated_failures_from_one_address_are_refused_unchecked(anonymous_client: TestClient) -> None:
    for _ in range(MAX_FAILED_LOGINS):
        assert (
            anonymous_client.post("/api/v1/auth/login", json={"username": OPERATOR, "password": "guess"}).status_code
            == 401
        )
    # Even the right password now waits: the guesser cannot tell when they found it.
    refused = anonymous_client.post("/api/v1/auth/login", json={"username": OPERATOR, "password": TEST_PASSWORD})
    assert refused.status_code == 429
    assert "too many failed logins for 'test-operator' from this address: wait 10 minutes" in refused.json()["detail"]
    # Other names are not held up by it.
    _log_in(anonymous_client, ROLE_USERS[Role.VIEWER])
    # Once the failures are older than the window, the user gets in.
    with session_scope() as session:
        session.execute(update(AuditEvent).values(created_at=utcnow() - timedelta(minutes=11)))
    _log_in(anonymous_client)


def test_a_session_ends_after_the_idle_timeout_and_the_maximum_age(anonymous_client: TestClient) -> None:
    token = str(_log_in(anonymous_client)["token"])
    anonymous_client.cookies.clear()
    settings = get_settings()
    with session_scope() as session:
        row = session.scalar(select(UserSession).where(UserSession.token_hash == token_hash(token)))
        assert row is not None
        assert row.expires_at - row.created_at == timedelta(seconds=settings.session_idle_timeout_s)
        # Used a minute ago: this use moves the expiry on.
        row.last_used_at = row.created_at = utcnow() - timedelta(minutes=2)
    assert anonymous_client.get("/api/v1/auth/me", headers=bearer(token)).status_code == 200
    with session_scope() as session:
        row = session.scalar(select(UserSession).where(UserSession.token_hash == token_hash(token)))
        assert row is not None
        assert row.expires_at > utcnow() + timedelta(seconds=settings.session_idle_timeout_s - 60)
        # Idle for longer than the timeout.
        row.expires_at = utcnow() - timedelta(seconds=1)
    assert anonymous_client.get("/api/v1/auth/me", headers=bearer(token)).status_code == 401

    token = str(_log_in(anonymous_client)["token"])
    anonymous_client.cookies.clear()
    with session_scope() as session:
        row = session.scalar(select(UserSession).where(UserSession.token_hash == token_hash(token)))
        assert row is not None
        # Used all the time, but logged in longer ago than the maximum age: the expiry cannot pass it.
        row.created_at = utcnow() - timedelta(seconds=settings.session_max_age_s - 30)
        row.last_used_at = utcnow() - timedelta(minutes=5)
    assert anonymous_client.get("/api/v1/auth/me", headers=bearer(token)).status_code == 200
    with session_scope() as session:
        row = session.scalar(select(UserSession).where(UserSession.token_hash == token_hash(token)))
        assert row is not None
        assert row.expires_at <= utcnow() + timedelta(seconds=30)


def test_a_one_time_password_must_be_changed_before_anything_else(anonymous_client: TestClient) -> None:
    ensure_user("first-timer", Role.OPERATOR)
    with session_scope() as session:
        session.execute(update(User).where(User.username == "first-timer").values(must_change_password=True))
    login = _log_in(anonymous_client, "first-timer")
    anonymous_client.cookies.clear()
    headers = bearer(str(login["token"]))
    assert isinstance(login["user"], dict) and login["user"]["must_change_password"] is True
    blocked = anonymous_client.get("/api/v1/jobs", headers=headers)
    assert blocked.status_code == 403
    assert "you logged in with a one-time password: choose your own first" in blocked.json()["detail"]
    assert anonymous_client.get("/api/v1/auth/me", headers=headers).json()["must_change_password"] is True

    def change(current: str, new: str) -> tuple[int, str]:
        response = anonymous_client.post(
            "/api/v1/auth/password", headers=headers, json={"current_password": current, "new_password": new}
        )
        return response.status_code, error_message(response.json()) if response.status_code != 200 else ""

    assert change("wrong", "a-new-good-password") == (422, "the current password is wrong")
    assert change(TEST_PASSWORD, "short")[0] == 422
    assert "at least 10 characters" in change(TEST_PASSWORD, "short")[1]
    assert change(TEST_PASSWORD, TEST_PASSWORD) == (422, "choose a password other than the current one")
    assert change(TEST_PASSWORD, "First-Timer") == (422, "a password must not be the user name")
    assert change(TEST_PASSWORD, "a-new-good-password") == (200, "")
    assert anonymous_client.get("/api/v1/jobs", headers=headers).status_code == 200
    assert anonymous_client.get("/api/v1/auth/me", headers=headers).json()["must_change_password"] is False
    _log_in(anonymous_client, "first-timer", "a-new-good-password")


def test_changing_the_password_ends_the_other_sessions(anonymous_client: TestClient) -> None:
    ensure_user("two-browsers", Role.VIEWER)
    first = bearer(str(_log_in(anonymous_client, "two-browsers")["token"]))
    second = bearer(str(_log_in(anonymous_client, "two-browsers")["token"]))
    anonymous_client.cookies.clear()
    changed = anonymous_client.post(
        "/api/v1/auth/password",
        headers=first,
        json={"current_password": TEST_PASSWORD, "new_password": "another-good-password"},
    )
    assert changed.status_code == 200
    assert anonymous_client.get("/api/v1/auth/me", headers=first).status_code == 200
    assert anonymous_client.get("/api/v1/auth/me", headers=second).status_code == 401


def test_a_disabled_user_is_told_so_only_with_the_right_password(
    anonymous_client: TestClient, client: TestClient
) -> None:
    user_id = ensure_user("leaver", Role.OPERATOR)
    assert client.patch(f"/api/v1/users/{user_id}", json={"disabled": True}).status_code == 200
    right = anonymous_client.post("/api/v1/auth/login", json={"username": "leaver", "password": TEST_PASSWORD})
    assert right.status_code == 401 and right.json()["detail"] == "this account is disabled: ask an admin"
    wrong = anonymous_client.post("/api/v1/auth/login", json={"username": "leaver", "password": "not the password"})
    assert wrong.json()["detail"] == "wrong user name or password"


def test_an_outdated_hash_is_replaced_at_login(anonymous_client: TestClient) -> None:
    from argon2 import PasswordHasher

    weak = PasswordHasher(time_cost=1, memory_cost=8192, parallelism=1).hash(TEST_PASSWORD)
    ensure_user("old-hash", Role.VIEWER)
    with session_scope() as session:
        session.execute(update(User).where(User.username == "old-hash").values(password_hash=weak))
    _log_in(anonymous_client, "old-hash")
    with session_scope() as session:
        stored = session.scalar(select(User.password_hash).where(User.username == "old-hash"))
    assert stored is not None and stored != weak and stored.startswith("$argon2id$v=19$m=65536,t=3,p=4$")
