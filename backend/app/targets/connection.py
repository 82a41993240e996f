"""Connecting to a saved server, and the 0600 option file that hands its password to command-line tools."""

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pymysql

from app.core.security import decrypt_secret
from app.models import Target


@dataclass(frozen=True)
class Credentials:
    host: str
    port: int
    socket: str | None
    user: str
    password: str | None

    @classmethod
    def of(cls, target: Target) -> "Credentials":
        password = decrypt_secret(target.password_encrypted) if target.password_encrypted else None
        return cls(target.host, target.port, target.socket, target.user, password)


class TargetUnreachable(Exception):
    """The saved server refused or could not be reached; the message says which and what to check."""


def connect(credentials: Credentials, database: str | None = None, timeout_s: int = 10) -> pymysql.Connection:
    try:
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
        )
    except pymysql.err.OperationalError as error:
        raise TargetUnreachable(explain_connect_error(credentials, error)) from error


def explain_connect_error(credentials: Credentials, error: pymysql.err.OperationalError) -> str:
    code = error.args[0] if error.args else None
    where = credentials.socket or f"{credentials.host}:{credentials.port}"
    detail = error.args[1] if len(error.args) > 1 else str(error)
    if code == 1045:
        return (
            f"the server at {where} refused user '{credentials.user}': wrong password or no such user "
            f"({detail}); edit the saved target's user and password"
        )
    if code in (2002, 2003, 2005, 2006, 2013):
        return f"cannot reach a server at {where} ({detail}); check the saved target's host, port or socket"
    return f"cannot connect to {where}: {detail}"


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
