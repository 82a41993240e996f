"""Logging in and out, sessions and changing one's own password. Services flush; the caller commits."""

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import NoReturn

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from app.audit.service import count_since, record
from app.auth.passwords import hash_password, needs_rehash, spend_verification_time, verify_password
from app.auth.tokens import new_token, token_hash
from app.core.config import Settings
from app.core.errors import InvalidRequest
from app.models import AuditAction, User, UserSession
from app.models.base import utcnow
from app.users.service import check_new_password

# Failed logins for one name from one address before further tries are refused unchecked, and for how long.
MAX_FAILED_LOGINS = 10
FAILED_LOGIN_WINDOW = timedelta(minutes=10)
# A session's last use is written at most this often, so polling pages do not write on every request.
TOUCH_EVERY = timedelta(seconds=60)


class LoginRefused(Exception):
    """Wrong name or password, or a disabled account: 401, with a message that does not say which name exists."""


class TooManyFailedLogins(Exception):
    """429: the name has failed from this address too often lately."""


@dataclass(frozen=True)
class Login:
    user: User
    token: str
    expires_at: datetime


def _refuse(session: Session, username: str, user: User | None, client: str | None, why: str, message: str) -> NoReturn:
    record(session, AuditAction.LOGIN_FAILED, user, username=username, client=client, detail=why)
    raise LoginRefused(message)


def log_in(
    session: Session, username: str, password: str, settings: Settings, client: str | None, user_agent: str | None
) -> Login:
    """The failure is recorded before LoginRefused is raised: the caller commits it anyway."""
    failures = count_since(
        session, AuditAction.LOGIN_FAILED, utcnow() - FAILED_LOGIN_WINDOW, username=username, client=client
    )
    if failures >= MAX_FAILED_LOGINS:
        minutes = int(FAILED_LOGIN_WINDOW.total_seconds() // 60)
        record(
            session,
            AuditAction.LOGIN_FAILED,
            None,
            username=username,
            client=client,
            detail=f"refused unchecked: {failures} failed logins in {minutes} minutes",
        )
        raise TooManyFailedLogins(
            f"too many failed logins for '{username}' from this address: wait {minutes} minutes and try again, "
            "or ask an admin to reset the password"
        )
    wrong = "wrong user name or password"
    user = session.scalar(select(User).where(User.username == username))
    if user is None:
        spend_verification_time(password)
        _refuse(session, username, None, client, "no such user", wrong)
    if not verify_password(user.password_hash, password):
        _refuse(session, username, user, client, "wrong password", wrong)
    if user.disabled:
        _refuse(session, username, user, client, "account disabled", "this account is disabled: ask an admin")
    if needs_rehash(user.password_hash):
        user.password_hash = hash_password(password)
    now = utcnow()
    user.last_login_at = now
    session.execute(delete(UserSession).where(UserSession.expires_at <= now))
    token, user_session = start_session(session, user, settings, client, user_agent)
    record(session, AuditAction.LOGIN, user, client=client, detail=_agent_detail(user_agent))
    return Login(user=user, token=token, expires_at=user_session.expires_at)


def _agent_detail(user_agent: str | None) -> str | None:
    return f"with {user_agent[:200]}" if user_agent else None


def start_session(
    session: Session, user: User, settings: Settings, client: str | None = None, user_agent: str | None = None
) -> tuple[str, UserSession]:
    now = utcnow()
    token = new_token()
    user_session = UserSession(
        user_id=user.id,
        token_hash=token_hash(token),
        created_at=now,
        last_used_at=now,
        expires_at=now + timedelta(seconds=min(settings.session_idle_timeout_s, settings.session_max_age_s)),
        client=client,
        user_agent=user_agent[:255] if user_agent else None,
    )
    session.add(user_session)
    session.flush()
    return token, user_session


def resolve_session(session: Session, token: str, settings: Settings) -> UserSession | None:
    """The live session the token opens, its expiry moved on by this use; None if there is none."""
    found = session.scalar(select(UserSession).where(UserSession.token_hash == token_hash(token)))
    now = utcnow()
    if found is None or found.expires_at <= now or found.user.disabled:
        return None
    if now - found.last_used_at >= TOUCH_EVERY:
        found.last_used_at = now
        found.expires_at = min(
            now + timedelta(seconds=settings.session_idle_timeout_s),
            found.created_at + timedelta(seconds=settings.session_max_age_s),
        )
    return found


def log_out(session: Session, user_session: UserSession, client: str | None) -> None:
    record(session, AuditAction.LOGOUT, user_session.user, client=client)
    session.delete(user_session)


def change_password(session: Session, user_session: UserSession, current: str, new: str) -> User:
    """The user's own change: their other sessions end, this one goes on."""
    user = user_session.user
    if not verify_password(user.password_hash, current):
        raise InvalidRequest("the current password is wrong", field="current_password")
    if new == current:
        raise InvalidRequest("choose a password other than the current one", field="new_password")
    check_new_password(user.username, new, field="new_password")
    user.password_hash = hash_password(new)
    user.must_change_password = False
    user.password_changed_at = utcnow()
    session.execute(delete(UserSession).where(UserSession.user_id == user.id, UserSession.id != user_session.id))
    record(session, AuditAction.PASSWORD_CHANGED, user, object_type="user", object_id=user.id)
    session.flush()
    return user
