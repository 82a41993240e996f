"""Users and sessions for tests, made straight in the job store (one argon2 hash per user, not per test)."""

from sqlalchemy import select

from app.auth.service import start_session
from app.core.config import get_settings
from app.core.db import session_scope
from app.models import Role, User
from app.users.schemas import UserCreate
from app.users.service import create_user

# One password for every test user; long enough for the rules, and never a saved server's password.
TEST_PASSWORD = "test-user-password-1"
# One user per role, and an admin who still has to change a one-time password (tests/api/conftest.py keeps them).
ROLE_USERS = {Role.ADMIN: "test-admin", Role.OPERATOR: "test-operator", Role.VIEWER: "test-viewer"}
ONE_TIME_USER = "test-one-time"


def ensure_user(username: str, role: Role, password: str = TEST_PASSWORD) -> int:
    """The user's id, made with `password` and no password change pending if it did not exist yet."""
    with session_scope() as session:
        existing = session.scalar(select(User).where(User.username == username))
        if existing is not None:
            return existing.id
        user, _ = create_user(
            session, UserCreate(username=username, role=role, password=password, must_change_password=False), None
        )
        return user.id


def session_token(username: str) -> str:
    """A new session of an existing user, as a login would start it."""
    with session_scope() as session:
        user = session.scalar(select(User).where(User.username == username))
        assert user is not None, f"no test user {username}"
        token, _ = start_session(session, user, get_settings())
        return token


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}
