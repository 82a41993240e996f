"""Translate ServerOptions into server command-line options, for MariaDB and (untested) MySQL 8.

Pure functions: no process is started here, so every translation is covered by table-driven tests.
"""

from __future__ import annotations

from collections.abc import Callable

from app.sandboxes.options import AioMode, ServerOptions
from worker.sandbox.binary import ServerBinary

MYSQL_SUPPORT_NOTE = (
    "MySQL support is UNTESTED: Oracle MySQL cannot be installed on the machine restorescope is developed "
    "on, so the MySQL 8 option names below follow the MySQL manual but have never run here."
)

# Binary log base name, relative to the datadir, so it stays inside the sandbox directory.
BINLOG_BASENAME = "binlog"

# Thread roles (which server thread did what) come from performance_schema.threads; stage events show
# what each thread is busy with. Both are cheap next to a restore.
_PERFORMANCE_SCHEMA_FLAGS = [
    "--performance-schema=ON",
    "--performance-schema-consumer-global-instrumentation=ON",
    "--performance-schema-consumer-thread-instrumentation=ON",
    "--performance-schema-consumer-events-stages-current=ON",
    "--performance-schema-instrument=stage/%=ON",
]

_MYSQL_REDO_CAPACITY_SINCE = (8, 0, 30)


def server_flags(options: ServerOptions, binary: ServerBinary) -> list[str]:
    """Command-line options for `binary` that apply `options`; None options are left out."""
    flags: list[str] = []
    for translate in _TRANSLATIONS:
        flags += translate(options, binary)
    # Extras last: a user who names an option explicitly wins over the typed settings above.
    flags += [f"--{name}={value}" for name, value in options.extra.items()]
    return flags


def mysql_untested_warning(binary: ServerBinary) -> str | None:
    """A line to show the user when the sandbox will run Oracle MySQL, which is untested here."""
    if binary.flavour != "mysql":
        return None
    return (
        f"Warning: {binary.path} is MySQL {binary.version}. restorescope is only tested with MariaDB; "
        "MySQL sandboxes may fail to start or ignore settings. Install MariaDB for reliable results."
    )


def _buffer_pool(options: ServerOptions, binary: ServerBinary) -> list[str]:
    size = options.innodb_buffer_pool_size
    return [] if size is None else [f"--innodb-buffer-pool-size={size}"]


def _redo_log_size(options: ServerOptions, binary: ServerBinary) -> list[str]:
    size = options.innodb_log_file_size
    if size is None:
        return []
    # MySQL 8.0.30 replaced innodb_log_file_size (per file) with innodb_redo_log_capacity (total);
    # MariaDB 10.5+ has a single redo file, so its log_file_size is the total too.
    if binary.flavour == "mysql" and binary.version_tuple >= _MYSQL_REDO_CAPACITY_SINCE:
        return [f"--innodb-redo-log-capacity={size}"]
    return [f"--innodb-log-file-size={size}"]


def _doublewrite(options: ServerOptions, binary: ServerBinary) -> list[str]:
    if options.innodb_doublewrite is None:
        return []
    if binary.flavour == "mysql":
        # MySQL 8.0.30 made it an enum (ON, OFF, DETECT_ONLY, ...), where 0/1 are not names.
        return [f"--innodb-doublewrite={'ON' if options.innodb_doublewrite else 'OFF'}"]
    return [f"--innodb-doublewrite={int(options.innodb_doublewrite)}"]


def _aio(options: ServerOptions, binary: ServerBinary) -> list[str]:
    mode = options.aio_mode
    if mode is None:
        return []
    if binary.flavour == "mysql":
        return _mysql_aio(mode)
    if mode == "off":
        return ["--innodb-use-native-aio=0"]
    return ["--innodb-use-native-aio=1", f"--innodb-linux-aio={mode}"]


def _mysql_aio(mode: AioMode) -> list[str]:
    # MySQL has no innodb_linux_aio: native AIO there is always libaio, so io_uring falls back to it.
    return ["--innodb-use-native-aio=0"] if mode == "off" else ["--innodb-use-native-aio=1"]


def _performance_schema(options: ServerOptions, binary: ServerBinary) -> list[str]:
    if options.performance_schema is None:
        return []
    return list(_PERFORMANCE_SCHEMA_FLAGS) if options.performance_schema else ["--performance-schema=OFF"]


def _binlog(options: ServerOptions, binary: ServerBinary) -> list[str]:
    if options.log_bin:
        return [f"--log-bin={BINLOG_BASENAME}", "--server-id=1"]
    # Off unless asked: MariaDB's default already, but MySQL 8 turns the binary log on by default and
    # a sandbox must not spend a restore writing one. --skip-log-bin is understood by both.
    return ["--skip-log-bin"]


Translation = Callable[[ServerOptions, ServerBinary], list[str]]


def _as_is(field: str, flag: str) -> Translation:
    """Options that both flavours spell the same way and take verbatim."""

    def translate(options: ServerOptions, _binary: ServerBinary) -> list[str]:
        value = getattr(options, field)
        return [] if value is None else [f"--{flag}={value}"]

    return translate


_TRANSLATIONS: list[Translation] = [
    _buffer_pool,
    _redo_log_size,
    _doublewrite,
    _as_is("innodb_flush_log_at_trx_commit", "innodb-flush-log-at-trx-commit"),
    _as_is("innodb_autoinc_lock_mode", "innodb-autoinc-lock-mode"),
    _aio,
    _as_is("innodb_flush_method", "innodb-flush-method"),
    _as_is("innodb_io_capacity", "innodb-io-capacity"),
    _performance_schema,
    _binlog,
]
