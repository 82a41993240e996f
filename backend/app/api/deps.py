"""Request dependencies as Annotated aliases, so route signatures read like prose.

Who may call what: every route under /api/v1 but the health check and the login needs a session (a cookie from
the browser login, or the same token as "Authorization: Bearer"), and a role:

    SessionUser   logged in, even with a one-time password still to change (only /auth/me, logout, password)
    CurrentUser   logged in with their own password  (= ViewerUser)
    ViewerUser    viewer, operator or admin: reads
    OperatorUser  operator or admin: launch, cancel and retry jobs, import traces, check a saved server
    AdminUser     admin: users, saved servers, the audit log
"""

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, HTTPException, Request, status
from fastapi.security import APIKeyCookie, HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session

from app.auth.service import resolve_session
from app.auth.tokens import COOKIE_NAME
from app.core.config import Settings, get_settings
from app.core.db import session_scope
from app.models import Role, User, UserSession


def get_session() -> Iterator[Session]:
    """One unit of work per request: commit on success, roll back on error."""
    with session_scope() as session:
        yield session


# Committed when the route function returns, before the response is sent: a client that creates something and
# uses it at once (a saved target, then a job on it) must find it. The default ("request") commits afterwards.
SessionDep = Annotated[Session, Depends(get_session, scope="function")]
SettingsDep = Annotated[Settings, Depends(get_settings)]

_bearer = HTTPBearer(auto_error=False, description="The token POST /api/v1/auth/login returned")
_cookie = APIKeyCookie(name=COOKIE_NAME, auto_error=False, description="Set by POST /api/v1/auth/login")


def _unauthorized(message: str) -> HTTPException:
    return HTTPException(status.HTTP_401_UNAUTHORIZED, message, headers={"WWW-Authenticate": "Bearer"})


def get_login(
    session: SessionDep,
    settings: SettingsDep,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    cookie: Annotated[str | None, Depends(_cookie)],
) -> UserSession:
    """The session the request's token opens; a Bearer header wins over the cookie."""
    token = bearer.credentials if bearer is not None else cookie
    if not token:
        raise _unauthorized("log in first: POST /api/v1/auth/login, then send the token as 'Authorization: Bearer'")
    login = resolve_session(session, token, settings)
    if login is None:
        raise _unauthorized("your session has ended (logged out, expired, or the account was disabled): log in again")
    return login


LoginSession = Annotated[UserSession, Depends(get_login)]


def get_session_user(login: LoginSession) -> User:
    return login.user


SessionUser = Annotated[User, Depends(get_session_user)]


def get_current_user(user: SessionUser) -> User:
    if user.must_change_password:
        raise HTTPException(
            status.HTTP_403_FORBIDDEN,
            "you logged in with a one-time password: choose your own first (POST /api/v1/auth/password)",
        )
    return user


CurrentUser = Annotated[User, Depends(get_current_user)]


def _at_least(user: User, needed: Role) -> User:
    role = Role(user.role)
    if not role.allows(needed):
        raise HTTPException(
            status.HTTP_403_FORBIDDEN, f"this needs the {needed} role and {user.username} is {role}: ask an admin"
        )
    return user


def require_viewer(user: CurrentUser) -> User:
    return _at_least(user, Role.VIEWER)


def require_operator(user: CurrentUser) -> User:
    return _at_least(user, Role.OPERATOR)


def require_admin(user: CurrentUser) -> User:
    return _at_least(user, Role.ADMIN)


ViewerUser = Annotated[User, Depends(require_viewer)]
OperatorUser = Annotated[User, Depends(require_operator)]
AdminUser = Annotated[User, Depends(require_admin)]


def client_address(request: Request) -> str | None:
    return request.client.host if request.client is not None else None


ClientAddress = Annotated[str | None, Depends(client_address)]
