"""Users from the command line, for what cannot be done in the browser:

    python -m app.users.cli first-admin            the first admin, when the job store has no user (make run)
    python -m app.users.cli reset-password NAME    a new one-time password for NAME, e.g. a locked-out admin
    python -m app.users.cli create-user NAME --role operator [--if-missing] < password
                                                   a user with the password read from standard input (scripts)

first-admin takes RESTORESCOPE_ADMIN_PASSWORD (and RESTORESCOPE_ADMIN_USER, default admin) from the
environment; without a password it makes a one-time password, prints it once, and the admin must change it at the
first login. With a user already there it does nothing, so it is safe to run on every start.
"""

import argparse
import sys

from pydantic import ValidationError
from sqlalchemy import select

from app.audit.service import record
from app.core.config import get_settings
from app.core.db import session_scope
from app.core.errors import DomainError
from app.models import AuditAction, Role, User
from app.users import service
from app.users.schemas import PasswordReset, UserCreate

CLI_ACTOR = "(command line)"


def first_admin() -> int:
    settings = get_settings()
    try:
        with session_scope() as session:
            made = service.ensure_first_admin(
                session, settings.admin_user, settings.admin_password.get_secret_value() or None
            )
    except (ValidationError, DomainError) as error:
        print(f"users: cannot create the first admin from RESTORESCOPE_ADMIN_USER/PASSWORD: {error}", file=sys.stderr)
        return 1
    if made is None:
        print("users: the job store has users already; no first admin made")
        return 0
    user, shown = made
    if shown is None:
        print(f"users: created the first admin '{user.username}' with the password in RESTORESCOPE_ADMIN_PASSWORD")
    else:
        print(
            f"users: created the first admin '{user.username}' with this one-time password (shown only now; "
            f"you choose your own at the first login):\n\n    {shown}\n"
        )
    return 0


def reset_password(username: str) -> int:
    with session_scope() as session:
        user = session.scalar(select(User).where(User.username == username.strip().lower()))
        if user is None:
            print(f"users: no user named '{username}'", file=sys.stderr)
            return 1
        if user.disabled:
            # Recovery must work when nobody can log in: the user is enabled again too.
            user.disabled = False
            record(
                session,
                AuditAction.USER_UPDATE,
                None,
                username=CLI_ACTOR,
                object_type="user",
                object_id=user.id,
                detail=f"{user.username}: enabled",
            )
        _, shown = service.reset_password(session, user.id, PasswordReset(), None, CLI_ACTOR)
    print(f"users: '{user.username}' has a new one-time password (their sessions ended):\n\n    {shown}\n")
    return 0


def create_user(username: str, role: str, if_missing: bool) -> int:
    """The password comes from standard input (its first line), never from the command line."""
    password = sys.stdin.readline().rstrip("\n")
    try:
        data = UserCreate(username=username, role=Role(role), password=password, must_change_password=False)
        with session_scope() as session:
            if if_missing and session.scalar(select(User).where(User.username == data.username)) is not None:
                print(f"users: '{data.username}' exists already; left as it is")
                return 0
            user, _ = service.create_user(session, data, None, CLI_ACTOR)
    except (ValidationError, DomainError) as error:
        print(f"users: cannot create '{username}': {error}", file=sys.stderr)
        return 1
    print(f"users: created '{user.username}' as {user.role}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m app.users.cli", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("first-admin", help="create the first admin if there is no user yet")
    reset = commands.add_parser("reset-password", help="give a user a new one-time password and enable them")
    reset.add_argument("username")
    create = commands.add_parser("create-user", help="create a user; the password is read from standard input")
    create.add_argument("username")
    create.add_argument("--role", choices=[r.value for r in Role], required=True)
    create.add_argument("--if-missing", action="store_true", help="do nothing if the user exists")
    args = parser.parse_args(argv)
    if args.command == "first-admin":
        return first_admin()
    if args.command == "create-user":
        return create_user(args.username, args.role, args.if_missing)
    return reset_password(args.username)


if __name__ == "__main__":
    sys.exit(main())
