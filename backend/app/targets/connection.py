"""Connecting to a saved server, and the 0600 option file that hands its password to command-line tools."""

import os
import ssl
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pymysql

from app.core.db import session_scope
from app.core.security import decrypt_secret
from app.models import Target


@dataclass(frozen=True)
class Credentials:
    host: str
    port: int
    socket: str | None
    user: str
    # Out of repr, so a log line or a traceback that shows the credentials does not show the password.
    password: str | None = field(repr=False)

    @classmethod
    def of(cls, target: Target) -> "Credentials":
        password = decrypt_secret(target.password_encrypted) if target.password_encrypted else None
        return cls(target.host, target.port, target.socket, target.user, password)


ConnectProblem = Literal["wrong_password", "tls_required", "unreachable", "unknown_database", "not_allowed", "other"]


class TargetUnreachable(Exception):
    """The saved server refused or could not be reached; the message says which and what to check."""

    def __init__(self, message: str, problem: ConnectProblem = "other") -> None:
        super().__init__(message)
        self.problem = problem


def saved_credentials(target_id: int) -> tuple[Credentials, str]:
    """A saved target's credentials and name, for a job that runs after the request that named it."""
    with session_scope() as session:
        target = session.get(Target, target_id)
        if target is None:
            raise TargetUnreachable(f"the saved target {target_id} was deleted after the job was queued")
        return Credentials.of(target), target.name


def connect(
    credentials: Credentials, database: str | None = None, timeout_s: int = 10, program_name: str | None = None
) -> pymysql.Connection:
    try:
        return _connect(credentials, database, timeout_s, program_name)
    except pymysql.err.MySQLError as error:
        code = error.args[0] if error.args and isinstance(error.args[0], int) else None
        detail = str(error.args[1]) if len(error.args) > 1 else str(error)
        if code == ACCESS_DENIED and _accepts_only_tls(credentials, database, timeout_s):
            code = TLS_REQUIRED_PROBED
        problem, message = explain_connect_error(credentials, code, detail, database)
        raise TargetUnreachable(message, problem) from error


def _connect(
    credentials: Credentials,
    database: str | None,
    timeout_s: int,
    program_name: str | None,
    tls: ssl.SSLContext | None = None,
) -> pymysql.Connection:
    return pymysql.connect(
        host=credentials.host,
        port=credentials.port,
        unix_socket=credentials.socket,
        user=credentials.user,
        password=credentials.password or "",
        database=database,
        connect_timeout=timeout_s,
        autocommit=True,
        local_infile=True,
        program_name=program_name,
        ssl=tls,
    )


def _accepts_only_tls(credentials: Credentials, database: str | None, timeout_s: int) -> bool:
    """Whether the login refused without TLS works with it. MariaDB answers "access denied" alike to a wrong
    password, to an account created with REQUIRE SSL and to a server with require_secure_transport=ON; only a
    second try over TLS tells them apart. The certificate is not verified: the probe only diagnoses, and the
    same credentials just went to the same address without TLS."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        # A server that offers no TLS gets a plain login again, refused again.
        _connect(credentials, database, timeout_s, "restorescope-tls-probe", tls=context).close()
    except (pymysql.err.MySQLError, OSError):
        return False
    return True


ACCESS_DENIED = 1045
# Not a server error code: what connect() found by probing with TLS after an access denied.
TLS_REQUIRED_PROBED = -1
_TLS_REQUIRED_CODES = (TLS_REQUIRED_PROBED, 3159)  # 3159: MySQL's ER_SECURE_TRANSPORT_REQUIRED
_UNREACHABLE_CODES = (2002, 2003, 2005, 2006, 2013)
_NOT_ALLOWED_CODES = (1044, 1129, 1130)  # no access to the database, host blocked, host not allowed


def explain_connect_error(
    credentials: Credentials, code: int | None, detail: str, database: str | None = None
) -> tuple[ConnectProblem, str]:
    """What a failed login means for the user, from the server's (or PyMySQL's) error code and text."""
    where = credentials.socket or f"{credentials.host}:{credentials.port}"
    user = credentials.user
    if code in _TLS_REQUIRED_CODES:
        return "tls_required", (
            f"the server at {where} accepts user '{user}' only over TLS (the account has REQUIRE SSL, or the server "
            "has require_secure_transport=ON), and restorescope and its tools connect without TLS: with "
            "require_secure_transport, save the server with its unix socket on the worker's host (sockets are "
            "allowed); with REQUIRE SSL, use an account without it"
        )
    if code == ACCESS_DENIED:
        return "wrong_password", (
            f"the server at {where} refused user '{user}': wrong password or no such user "
            f"({detail}); edit the saved target's user and password"
        )
    if code == 1049:
        return "unknown_database", (
            f"the server at {where} has no database '{database}' ({detail}); "
            "create it, or change or clear the saved target's default database"
        )
    if code in _NOT_ALLOWED_CODES:
        return "not_allowed", (
            f"the server at {where} does not let user '{user}' in from here ({detail}); "
            "grant the account access from this host (CREATE USER ... @'host'), or use another account"
        )
    if code in _UNREACHABLE_CODES:
        return "unreachable", (
            f"cannot reach a server at {where}: {_why_unreachable(credentials, detail)} ({detail}); "
            "check the saved target's host, port or socket"
        )
    return "other", f"cannot connect to {where}: {detail}"


def _why_unreachable(credentials: Credentials, detail: str) -> str:
    if "No such file or directory" in detail or "Errno 2]" in detail:
        return "no socket file there on this host (is the server running? a socket works only on its own host)"
    if "Connection refused" in detail:
        return "nothing listens there (is the server running, and on this port?)"
    if "Name or service not known" in detail or "Temporary failure in name resolution" in detail:
        return f"the host name '{credentials.host}' does not resolve"
    if "timed out" in detail:
        return "no answer in time (a firewall, or the wrong host?)"
    if "Permission denied" in detail:
        return "permission denied on the socket file"
    return "the connection failed"


@contextmanager
def option_file(credentials: Credentials, directory: Path | None = None) -> Iterator[Path]:
    """A [client] option file readable only by us, so the password never appears on a command line."""
    fd, name = tempfile.mkstemp(prefix="restorescope-", suffix=".cnf", dir=directory)
    path = Path(name)
    try:
        os.fchmod(fd, 0o600)
        lines = ["[client]", f"user={_quote(credentials.user)}"]
        if credentials.password is not None:
            lines.append(f"password={_quote(credentials.password)}")
        if credentials.socket:
            lines.append(f"socket={_quote(credentials.socket)}")
        else:
            lines += [f"host={_quote(credentials.host)}", f"port={credentials.port}", "protocol=TCP"]
        with os.fdopen(fd, "w") as handle:
            handle.write("\n".join(lines) + "\n")
        yield path
    finally:
        path.unlink(missing_ok=True)


def _quote(value: str) -> str:
    # Option files take "..." with backslash escapes, so any password survives intact.
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'
