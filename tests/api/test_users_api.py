"""Users as an admin manages them: create with a role, change the role, disable, reset the password, delete; and
never lock out the last admin."""

from collections.abc import Callable

from fastapi.testclient import TestClient
from sqlalchemy import select, update

from app.core.db import session_scope
from app.models import Role, User
from tests.api.conftest import error_fields, error_message
from tests.auth import ONE_TIME_USER, ROLE_USERS, bearer, session_token


def _log_in(client: TestClient, username: str, password: str) -> TestClient:
    response = client.post("/api/v1/auth/login", json={"username": username, "password": password})
    assert response.status_code == 200, response.text
    client.cookies.clear()
    client.headers.update(bearer(response.json()["token"]))
    return client


def test_create_a_user_with_a_one_time_password(client: TestClient, anonymous_client: TestClient) -> None:
    response = client.post("/api/v1/users", json={"username": "Ann.Smith@ops", "role": "operator"})
    assert response.status_code == 201, response.text
    made = response.json()
    assert made["user"]["username"] == "ann.smith@ops"  # names are case-insensitive, kept in lower case
    assert made["user"]["role"] == "operator" and made["user"]["must_change_password"] is True
    one_time = made["one_time_password"]
    assert isinstance(one_time, str) and len(one_time) >= 16
    assert "password" not in made["user"] and "password_hash" not in str(made)
    listed = {u["username"]: u for u in client.get("/api/v1/users").json()["data"]}
    assert listed["ann.smith@ops"]["role"] == "operator"
    assert one_time not in client.get("/api/v1/users").text

    ann = _log_in(anonymous_client, "ANN.SMITH@OPS", one_time)
    assert ann.get("/api/v1/jobs").status_code == 403  # must choose her own first


def test_create_with_a_chosen_password_and_what_is_refused(client: TestClient) -> None:
    chosen = client.post(
        "/api/v1/users",
        json={"username": "bob", "role": "viewer", "password": "bobs-own-password", "must_change_password": False},
    )
    assert chosen.status_code == 201 and chosen.json()["one_time_password"] is None
    assert chosen.json()["user"]["must_change_password"] is False

    again = client.post("/api/v1/users", json={"username": "BOB", "role": "viewer"})
    assert again.status_code == 409 and error_fields(again.json()) == ["username"]
    assert error_message(again.json()) == "a user named 'bob' already exists; choose another name"

    for body, field in (
        ({"username": "-bob", "role": "viewer"}, "username"),
        ({"username": "bo b", "role": "viewer"}, "username"),
        ({"username": "carol", "role": "superuser"}, "role"),
        ({"username": "carol", "role": "viewer", "password": "short"}, "password"),
        ({"username": "carol", "role": "viewer", "password": "Carol"}, "password"),
        ({"username": "carol-the-dba", "role": "viewer", "password": "carol-the-dba"}, "password"),
    ):
        refused = client.post("/api/v1/users", json=body)
        assert refused.status_code == 422, body
        assert error_fields(refused.json()) == [field], refused.json()
    assert "carol" not in client.get("/api/v1/users").text


def test_change_role_and_disable(client: TestClient, client_as: Callable[[Role], TestClient]) -> None:
    made = client.post(
        "/api/v1/users",
        json={"username": "dave", "role": "viewer", "password": "daves-password-1", "must_change_password": False},
    ).json()["user"]
    dave = TestClient(client.app, headers=bearer(session_token("dave")))
    assert dave.post("/api/v1/jobs/999/cancel").status_code == 403

    promoted = client.patch(f"/api/v1/users/{made['id']}", json={"role": "operator"})
    assert promoted.status_code == 200 and promoted.json()["role"] == "operator"
    assert dave.post("/api/v1/jobs/999/cancel").status_code == 404  # the role is read on every request

    disabled = client.patch(f"/api/v1/users/{made['id']}", json={"disabled": True})
    assert disabled.status_code == 200 and disabled.json()["disabled"] is True
    assert dave.get("/api/v1/jobs").status_code == 401  # the session ended with the account

    enabled = client.patch(f"/api/v1/users/{made['id']}", json={"disabled": False})
    assert enabled.json()["disabled"] is False
    assert client.patch("/api/v1/users/999999", json={"role": "viewer"}).status_code == 404


def test_reset_password_ends_the_sessions_and_forces_a_change(client: TestClient, anonymous_client: TestClient) -> None:
    viewer_id = next(
        u["id"] for u in client.get("/api/v1/users").json()["data"] if u["username"] == ROLE_USERS[Role.VIEWER]
    )
    old_session = TestClient(client.app, headers=bearer(session_token(ROLE_USERS[Role.VIEWER])))
    reset = client.post(f"/api/v1/users/{viewer_id}/password", json={})
    assert reset.status_code == 200
    one_time = reset.json()["one_time_password"]
    assert reset.json()["user"]["must_change_password"] is True
    assert old_session.get("/api/v1/jobs").status_code == 401
    viewer = _log_in(anonymous_client, ROLE_USERS[Role.VIEWER], one_time)
    assert viewer.get("/api/v1/jobs").status_code == 403
    # Put the shared test user back as it was.
    from tests.auth import TEST_PASSWORD

    restored = client.post(
        f"/api/v1/users/{viewer_id}/password", json={"password": TEST_PASSWORD, "must_change_password": False}
    )
    assert restored.status_code == 200 and restored.json()["one_time_password"] is None


def _id_of(client: TestClient, username: str) -> int:
    return int(next(u["id"] for u in client.get("/api/v1/users").json()["data"] if u["username"] == username))


def test_the_last_enabled_admin_cannot_be_demoted_disabled_or_deleted(client: TestClient) -> None:
    admin_id = _id_of(client, ROLE_USERS[Role.ADMIN])
    # ONE_TIME_USER is an admin too: make it a viewer so test-admin is the only enabled admin.
    with session_scope() as session:
        session.execute(update(User).where(User.username == ONE_TIME_USER).values(role=Role.VIEWER))
    try:
        for method, path, body in (
            ("PATCH", f"/api/v1/users/{admin_id}", {"role": "operator"}),
            ("PATCH", f"/api/v1/users/{admin_id}", {"disabled": True}),
        ):
            refused = client.request(method, path, json=body)
            assert refused.status_code == 409
            assert error_message(refused.json()).startswith("test-admin is the last enabled admin: ")
            assert "make another user admin first" in error_message(refused.json())
        deputy = client.post("/api/v1/users", json={"username": "deputy", "role": "admin"}).json()["user"]
        # With a second admin, the first may step down; then the deputy is the last one.
        assert client.patch(f"/api/v1/users/{admin_id}", json={"role": "operator"}).status_code == 200
        deputy_client = TestClient(client.app, headers=bearer(session_token("deputy")))
        with session_scope() as session:
            session.execute(update(User).where(User.username == "deputy").values(must_change_password=False))
        assert deputy_client.patch(f"/api/v1/users/{deputy['id']}", json={"disabled": True}).status_code == 409
        assert deputy_client.patch(f"/api/v1/users/{admin_id}", json={"role": "admin"}).status_code == 200
        refused = deputy_client.delete(f"/api/v1/users/{deputy['id']}")
        assert refused.status_code == 409
        assert error_message(refused.json()).startswith("you cannot delete yourself")
        assert client.delete(f"/api/v1/users/{deputy['id']}").status_code == 204
        last = deputy_client.get("/api/v1/users")
        assert last.status_code == 401  # a deleted user's sessions go with them
        refused = client.delete(f"/api/v1/users/{admin_id}")
        assert refused.status_code == 409
    finally:
        with session_scope() as session:
            session.execute(update(User).where(User.username == ONE_TIME_USER).values(role=Role.ADMIN))
            session.execute(update(User).where(User.username == ROLE_USERS[Role.ADMIN]).values(role=Role.ADMIN))


def test_a_disabled_admin_does_not_count(client: TestClient) -> None:
    with session_scope() as session:
        session.execute(update(User).where(User.username == ONE_TIME_USER).values(disabled=True))
    try:
        refused = client.patch(f"/api/v1/users/{_id_of(client, ROLE_USERS[Role.ADMIN])}", json={"role": "viewer"})
        assert refused.status_code == 409
    finally:
        with session_scope() as session:
            session.execute(update(User).where(User.username == ONE_TIME_USER).values(disabled=False))
            names = list(session.scalars(select(User.username).where(User.role == Role.ADMIN)))
    assert set(names) == {ROLE_USERS[Role.ADMIN], ONE_TIME_USER}
