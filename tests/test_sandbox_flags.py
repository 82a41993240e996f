"""Pure translations: ServerOptions -> server flags, and --version output -> flavour and version."""

import pytest

from app.sandboxes.options import ServerOptions
from worker.sandbox.binary import ServerBinary, detect_server_binary, parse_version_output
from worker.sandbox.errors import SandboxError
from worker.sandbox.flags import mysql_untested_warning, server_flags

MARIADB = ServerBinary("/usr/sbin/mariadbd", "mariadb", "10.11.19")
MYSQL_80 = ServerBinary("/usr/sbin/mysqld", "mysql", "8.0.36")
MYSQL_OLD = ServerBinary("/usr/sbin/mysqld", "mysql", "8.0.28")

PERFORMANCE_SCHEMA_ON = [
    "--performance-schema=ON",
    "--performance-schema-consumer-global-instrumentation=ON",
    "--performance-schema-consumer-thread-instrumentation=ON",
    "--performance-schema-consumer-events-stages-current=ON",
    "--performance-schema-instrument=stage/%=ON",
]


@pytest.mark.parametrize(
    ("options", "binary", "expected"),
    [
        (ServerOptions(), MARIADB, ["--skip-log-bin"]),
        (ServerOptions(innodb_buffer_pool_size="2G"), MARIADB, ["--innodb-buffer-pool-size=2G", "--skip-log-bin"]),
        (ServerOptions(innodb_log_file_size="1G"), MARIADB, ["--innodb-log-file-size=1G", "--skip-log-bin"]),
        (ServerOptions(innodb_doublewrite=False), MARIADB, ["--innodb-doublewrite=0", "--skip-log-bin"]),
        (ServerOptions(innodb_doublewrite=True), MARIADB, ["--innodb-doublewrite=1", "--skip-log-bin"]),
        (
            ServerOptions(innodb_flush_log_at_trx_commit=0),
            MARIADB,
            ["--innodb-flush-log-at-trx-commit=0", "--skip-log-bin"],
        ),
        (ServerOptions(innodb_autoinc_lock_mode=2), MARIADB, ["--innodb-autoinc-lock-mode=2", "--skip-log-bin"]),
        (
            ServerOptions(aio_mode="io_uring"),
            MARIADB,
            ["--innodb-use-native-aio=1", "--innodb-linux-aio=io_uring", "--skip-log-bin"],
        ),
        (
            ServerOptions(aio_mode="aio"),
            MARIADB,
            ["--innodb-use-native-aio=1", "--innodb-linux-aio=aio", "--skip-log-bin"],
        ),
        (ServerOptions(aio_mode="off"), MARIADB, ["--innodb-use-native-aio=0", "--skip-log-bin"]),
        (ServerOptions(innodb_flush_method="O_DSYNC"), MARIADB, ["--innodb-flush-method=O_DSYNC", "--skip-log-bin"]),
        (ServerOptions(innodb_io_capacity=5000), MARIADB, ["--innodb-io-capacity=5000", "--skip-log-bin"]),
        (ServerOptions(log_bin=True), MARIADB, ["--log-bin=binlog", "--server-id=1"]),
        (ServerOptions(log_bin=False), MARIADB, ["--skip-log-bin"]),
        (ServerOptions(performance_schema=True), MARIADB, [*PERFORMANCE_SCHEMA_ON, "--skip-log-bin"]),
        (ServerOptions(performance_schema=False), MARIADB, ["--performance-schema=OFF", "--skip-log-bin"]),
        (
            ServerOptions(extra={"max_connections": "77", "innodb-doublewrite": "1"}, innodb_doublewrite=False),
            MARIADB,
            ["--innodb-doublewrite=0", "--skip-log-bin", "--max_connections=77", "--innodb-doublewrite=1"],
        ),
        # MySQL 8 (untested against a real server): the names that differ.
        (ServerOptions(), MYSQL_80, ["--skip-log-bin"]),
        (ServerOptions(innodb_log_file_size="1G"), MYSQL_80, ["--innodb-redo-log-capacity=1G", "--skip-log-bin"]),
        (ServerOptions(innodb_log_file_size="1G"), MYSQL_OLD, ["--innodb-log-file-size=1G", "--skip-log-bin"]),
        (ServerOptions(aio_mode="io_uring"), MYSQL_80, ["--innodb-use-native-aio=1", "--skip-log-bin"]),
        (ServerOptions(aio_mode="aio"), MYSQL_80, ["--innodb-use-native-aio=1", "--skip-log-bin"]),
        (ServerOptions(aio_mode="off"), MYSQL_80, ["--innodb-use-native-aio=0", "--skip-log-bin"]),
        (ServerOptions(innodb_doublewrite=False), MYSQL_80, ["--innodb-doublewrite=OFF", "--skip-log-bin"]),
        (ServerOptions(log_bin=True), MYSQL_80, ["--log-bin=binlog", "--server-id=1"]),
    ],
)
def test_server_flags(options: ServerOptions, binary: ServerBinary, expected: list[str]) -> None:
    assert server_flags(options, binary) == expected


def test_fast_restore_preset_flags() -> None:
    options = ServerOptions(
        innodb_buffer_pool_size="2G",
        innodb_log_file_size="2G",
        innodb_doublewrite=False,
        innodb_flush_log_at_trx_commit=0,
        innodb_autoinc_lock_mode=2,
        log_bin=False,
    )
    assert server_flags(options, MARIADB) == [
        "--innodb-buffer-pool-size=2G",
        "--innodb-log-file-size=2G",
        "--innodb-doublewrite=0",
        "--innodb-flush-log-at-trx-commit=0",
        "--innodb-autoinc-lock-mode=2",
        "--skip-log-bin",
    ]


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        (
            "/usr/sbin/mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64 (Debian 12)",
            ("mariadb", "10.11.19"),
        ),
        ("mariadbd  Ver 11.4.2-MariaDB for Linux on x86_64 (MariaDB Server)", ("mariadb", "11.4.2")),
        ("/usr/sbin/mysqld  Ver 8.0.36 for Linux on x86_64 (MySQL Community Server - GPL)", ("mysql", "8.0.36")),
        ("mysqld  Ver 8.4.0-commercial for Linux on x86_64", ("mysql", "8.4.0")),
        # Debian's mysqld symlink to mariadbd still says MariaDB.
        ("/usr/sbin/mysqld  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu", ("mariadb", "10.11.19")),
    ],
)
def test_parse_version_output(output: str, expected: tuple[str, str]) -> None:
    assert parse_version_output(output) == expected


@pytest.mark.parametrize("output", ["", "command not found", "mysqld Ver eight"])
def test_unreadable_version_output_is_a_sandbox_error(output: str) -> None:
    with pytest.raises(SandboxError, match="could not read a server version"):
        parse_version_output(output)


def test_mysql_untested_warning_only_for_mysql() -> None:
    assert mysql_untested_warning(MARIADB) is None
    warning = mysql_untested_warning(MYSQL_80)
    assert warning is not None
    assert "8.0.36" in warning
    assert "only tested with MariaDB" in warning


def test_detect_server_binary_finds_the_installed_mariadb() -> None:
    binary = detect_server_binary()
    assert binary.flavour == "mariadb"
    assert binary.version_tuple >= (10, 0, 0)


def test_detect_server_binary_explains_a_missing_explicit_path() -> None:
    with pytest.raises(SandboxError, match=r"does not exist.*apt-get install mariadb-server"):
        detect_server_binary("/nonexistent/mariadbd")
