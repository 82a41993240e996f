"""The backup tools' command lines and the worker's pure decisions, without running anything."""

import time
from pathlib import Path
from typing import Any

import pytest

from worker import backup
from worker.backup import BackupError, _mariabackup_line_matters, _require_local
from worker.runners import backup_tools

DEFAULTS = Path("/work/job.cnf")


def test_the_password_reaches_every_tool_through_its_first_argument_only() -> None:
    commands = [
        backup_tools.mysqldump_command("mysqldump", DEFAULTS, ["shop"]),
        backup_tools.tab_command("mysqldump", DEFAULTS, Path("/b/x"), "shop"),
        backup_tools.mydumper_command("mydumper", DEFAULTS, Path("/b/x"), ["shop"], 4, compress=False),
        backup_tools.mariabackup_command("mariabackup", DEFAULTS, Path("/b/x"), 4),
    ]
    for command in commands:
        assert command[1] == f"--defaults-file={DEFAULTS}"
        assert not any(arg.startswith(("--password", "-p", "--user", "-u")) for arg in command[2:]), command


def test_mydumper_takes_several_databases_through_its_regex() -> None:
    one = backup_tools.mydumper_command("mydumper", DEFAULTS, Path("/b"), ["shop"], 2, compress=True)
    assert "--database=shop" in one and "--compress" in one and "--threads=2" in one
    several = backup_tools.mydumper_command("mydumper", DEFAULTS, Path("/b"), ["shop", "a.b"], 2, compress=False)
    assert r"--regex=^(shop|a\.b)\." in several and "--compress" not in several


@pytest.mark.parametrize(
    ("compression", "threads", "level", "stream", "files"),
    [
        ("zstd", 4, None, ["zstd", "-q", "-c", "-T4", "-3"], ["zstd", "-q", "--rm", "-T4", "-3", "--", "/d/a"]),
        ("pigz", 2, 9, ["pigz", "-c", "-p", "2", "-9"], ["pigz", "-p", "2", "-9", "--", "/d/a"]),
        ("gzip", 8, 1, ["gzip", "-c", "-1"], ["gzip", "-1", "--", "/d/a"]),
        ("pbzip2", 2, None, ["pbzip2", "-c", "-p2", "-9"], ["pbzip2", "-p2", "-9", "/d/a"]),
    ],
)
def test_compressor_commands(
    compression: str, threads: int, level: int | None, stream: list[str], files: list[str]
) -> None:
    assert backup_tools.stream_compressor(compression, threads, level) == stream
    assert backup_tools.file_compressor(compression, threads, level, [Path("/d/a")]) == files


def test_mydumpers_metadata_stays_uncompressed(tmp_path: Path) -> None:
    for name in ("metadata", "shop-schema-create.sql", "shop.t.sql"):
        (tmp_path / name).write_text("x")
    assert [p.name for p in backup_tools.files_to_compress(tmp_path, "mydumper")] == [
        "shop-schema-create.sql",
        "shop.t.sql",
    ]
    assert len(backup_tools.files_to_compress(tmp_path, "mysqldump-tab")) == 3


@pytest.mark.parametrize(
    ("line", "logged"),
    [
        ("[01] 2026-11-23 Copying ./sys/statements_with_errors_or_warnings.frm to /b/sys/x.frm", False),
        ("[01] aria table file ./db/error.MAI is copied successfully.", False),
        ("[00] 2026-11-23 21:13:00 completed OK!", True),
        ("2026-11-23 0 [ERROR] InnoDB: Unable to open ./ibtmp1", True),
        ("[00] 2026-11-23 Warning: option 'x' is deprecated", True),
        ("[00] 2026-11-23 Executing BACKUP STAGE END", False),
    ],
)
def test_only_mariabackups_noteworthy_lines_are_logged(line: str, logged: bool) -> None:
    assert _mariabackup_line_matters(line) is logged


class _Remote:
    """A connection to a server on another host, as find_local_server_pid sees it."""

    def cursor(self) -> Any:
        return self

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *_exc: object) -> None: ...

    def execute(self, _query: str) -> None: ...

    def fetchone(self) -> tuple[str, str]:
        return ("db-7.example", "/run/mysqld/mysqld.pid")


@pytest.mark.parametrize(
    ("tool", "why"),
    [("mariabackup", "it must read its datadir"), ("mysqldump-tab", "the server itself writes the table data files")],
)
def test_a_server_on_another_host_cannot_be_copied_or_tab_dumped(tool: str, why: str) -> None:
    with pytest.raises(BackupError) as raised:
        _require_local(_Remote(), tool, "prod")  # type: ignore[arg-type]
    message = str(raised.value)
    assert why in message and "'prod' is not one" in message and "runs on host 'db-7.example'" in message
    assert message.endswith("Use mysqldump or mydumper, which work over the network")


class _Run:
    """What _watching uses of a JobRun: progress and log lines, recorded."""

    def __init__(self) -> None:
        self.job_id = 1
        self.progress: list[int] = []
        self.lines: list[tuple[str, str]] = []

    def report_progress(self, bytes_done: int, _rows: int, force: bool = False) -> None:
        self.progress.append(bytes_done)

    def log(self, message: str, level: str = "info") -> None:
        self.lines.append((level, message))


def test_a_tool_that_writes_nothing_for_a_while_is_reported_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(backup, "POLL_S", 0.02)
    monkeypatch.setattr(backup, "STALL_WARNING_S", 0.1)
    run = _Run()
    (tmp_path / "a.sql").write_bytes(b"x" * 10)
    with backup._watching(run, tmp_path, "stalled for {minutes} minutes"):  # type: ignore[arg-type]
        time.sleep(0.4)
    # The run page's counter follows the directory's size; the log has one warning, not one per poll.
    assert run.progress[-1] == 10
    assert run.lines == [("warning", "stalled for 0 minutes")]
