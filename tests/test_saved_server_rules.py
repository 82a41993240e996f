"""What a failed login to a saved server means for the user, and whether a server is on a worker's host: the pure
decisions, from tables of inputs. (Against real servers: tests/integration/test_saved_servers.py.)"""

import os
import socket
from pathlib import Path

import pytest

from app.targets.connection import TLS_REQUIRED_PROBED, ConnectProblem, Credentials, explain_connect_error
from app.targets.locality import worker_host_verdict
from app.targets.service import server_flavour

TCP = Credentials("db2.example", 3307, None, "restore", "pw")
SOCKET = Credentials("127.0.0.1", 3306, "/run/mysqld/mysqld.sock", "restore", "pw")

CONNECT_ERRORS: list[tuple[Credentials, int | None, str, ConnectProblem, list[str]]] = [
    (
        TCP,
        1045,
        "Access denied for user 'restore'@'10.0.0.5' (using password: YES)",
        "wrong_password",
        ["the server at db2.example:3307 refused user 'restore': wrong password or no such user", "edit the saved"],
    ),
    (
        TCP,
        TLS_REQUIRED_PROBED,
        "Access denied for user 'restore'@'10.0.0.5' (using password: YES)",
        "tls_required",
        ["accepts user 'restore' only over TLS", "REQUIRE SSL", "require_secure_transport=ON"],
    ),
    (TCP, 3159, "Connections using insecure transport are prohibited", "tls_required", ["only over TLS"]),
    (TCP, 1049, "Unknown database 'shop'", "unknown_database", ["has no database 'shop'", "default database"]),
    (
        TCP,
        1130,
        "Host '10.0.0.5' is not allowed to connect to this MariaDB server",
        "not_allowed",
        ["does not let user 'restore' in from here", "CREATE USER"],
    ),
    (
        TCP,
        2003,
        "Can't connect to MySQL server on 'db2.example' ([Errno 111] Connection refused)",
        "unreachable",
        ["cannot reach a server at db2.example:3307: nothing listens there", "check the saved target's host"],
    ),
    (
        TCP,
        2003,
        "Can't connect to MySQL server on 'db2.example' ([Errno -2] Name or service not known)",
        "unreachable",
        ["the host name 'db2.example' does not resolve"],
    ),
    (TCP, 2003, "Can't connect to MySQL server on 'db2.example' (timed out)", "unreachable", ["no answer in time"]),
    (
        SOCKET,
        2003,
        "Can't connect to MySQL server on 'localhost' ([Errno 2] No such file or directory)",
        "unreachable",
        ["cannot reach a server at /run/mysqld/mysqld.sock: no socket file there on this host"],
    ),
    (TCP, 2013, "Lost connection to MySQL server during query", "unreachable", ["the connection failed"]),
    (TCP, 1251, "Client does not support authentication protocol", "other", ["cannot connect to db2.example:3307"]),
    (TCP, None, "something else", "other", ["cannot connect to db2.example:3307: something else"]),
]


@pytest.mark.parametrize(("credentials", "code", "detail", "problem", "words"), CONNECT_ERRORS)
def test_each_failed_login_gets_its_reason(
    credentials: Credentials, code: int | None, detail: str, problem: ConnectProblem, words: list[str]
) -> None:
    found, message = explain_connect_error(credentials, code, detail, database="shop")
    assert found == problem
    for word in words:
        assert word in message
    assert "pw" not in message.replace("password", "")


def test_a_server_is_on_a_workers_host_only_when_a_live_worker_runs_there(tmp_path: Path) -> None:
    here = socket.gethostname()
    assert worker_host_verdict("db-7", "/run/mysqld/mysqld.pid", None) == (
        None,
        "unknown: Redis did not answer, so the live workers (and their hosts) are unknown",
    )
    assert worker_host_verdict("db-7", "/run/mysqld/mysqld.pid", []) == (
        None,
        "unknown: no worker is running to compare with the server's host 'db-7'",
    )
    on_host, note = worker_host_verdict("db-7", "/run/mysqld/mysqld.pid", ["w-2", "w-1", "w-2"])
    assert on_host is False
    assert note.startswith("no: the server runs on host 'db-7' and the workers on 'w-1', 'w-2'; mysqldump --tab")
    # A worker on another host with the server's name: the API cannot look at that host's processes.
    assert worker_host_verdict("db-7", "/x.pid", ["db-7"]) == (
        True,
        "yes: it reports the host name 'db-7', where a worker runs",
    )
    # On this host, the server's pid file must name a running server: a namesake in a container is not local.
    pid_file = tmp_path / "server.pid"
    pid_file.write_text(f"{os.getpid()}\n")
    on_host, note = worker_host_verdict(here, str(pid_file), [here])
    assert on_host is False and note.endswith("not a MariaDB/MySQL server")
    on_host, note = worker_host_verdict(here, str(tmp_path / "missing.pid"), [here])
    assert on_host is False and "cannot be read on this host" in note


@pytest.mark.parametrize(
    ("version", "comment", "flavour"),
    [
        ("10.11.19-MariaDB-0+deb12u1", "Debian 12", "mariadb"),
        ("5.5.5-10.6.16-MariaDB", "MariaDB Server", "mariadb"),
        ("8.0.36", "MySQL Community Server - GPL", "mysql"),
        ("8.0.35-27", "Percona Server (GPL), Release 27", "mysql"),
    ],
)
def test_the_flavour_comes_from_the_version_and_its_comment(version: str, comment: str, flavour: str) -> None:
    assert server_flavour(version, comment) == flavour
