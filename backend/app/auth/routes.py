from typing import Annotated

from fastapi import APIRouter, Header, HTTPException, Response, status

from app.api.deps import ClientAddress, LoginSession, SessionDep, SessionUser, SettingsDep
from app.auth import service
from app.auth.schemas import LoginPublic, LoginRequest, PasswordChange
from app.auth.tokens import COOKIE_NAME, COOKIE_PATH
from app.users.schemas import UserPublic

router = APIRouter(prefix="/auth", tags=["auth"])


@router.post("/login", operation_id="auth-log_in")
def log_in(
    session: SessionDep,
    settings: SettingsDep,
    data: LoginRequest,
    response: Response,
    client: ClientAddress,
    user_agent: Annotated[str | None, Header()] = None,
) -> LoginPublic:
    """Start a session: an HttpOnly cookie for the browser, and the same token in the answer for API clients."""
    try:
        login = service.log_in(session, data.username, data.password, settings, client, user_agent)
    except service.LoginRefused as refused:
        session.commit()  # the failed attempt stays on record although the request fails
        raise HTTPException(status.HTTP_401_UNAUTHORIZED, str(refused)) from None
    except service.TooManyFailedLogins as refused:
        session.commit()
        raise HTTPException(status.HTTP_429_TOO_MANY_REQUESTS, str(refused)) from None
    response.set_cookie(
        COOKIE_NAME,
        login.token,
        max_age=int(settings.session_max_age_s),
        path=COOKIE_PATH,
        secure=settings.cookie_secure,
        httponly=True,
        samesite="strict",
    )
    return LoginPublic(token=login.token, expires_at=login.expires_at, user=UserPublic.model_validate(login.user))


@router.post("/logout", status_code=status.HTTP_204_NO_CONTENT, operation_id="auth-log_out")
def log_out(session: SessionDep, settings: SettingsDep, login: LoginSession, client: ClientAddress) -> Response:
    """End this session: its token stops working at once."""
    service.log_out(session, login, client)
    response = Response(status_code=status.HTTP_204_NO_CONTENT)
    response.delete_cookie(
        COOKIE_NAME, path=COOKIE_PATH, secure=settings.cookie_secure, httponly=True, samesite="strict"
    )
    return response


@router.get("/me", operation_id="auth-read_me")
def read_me(user: SessionUser) -> UserPublic:
    """Who is logged in, with their role, and whether they must change a one-time password first."""
    return UserPublic.model_validate(user)


@router.post("/password", operation_id="auth-change_password")
def change_password(session: SessionDep, login: LoginSession, data: PasswordChange) -> UserPublic:
    """Change your own password (required after logging in with a one-time password); your other sessions end."""
    user = service.change_password(session, login, data.current_password, data.new_password)
    return UserPublic.model_validate(user)
