"""Restore a mydumper directory with the real myloader, as DBAs do, for comparison with restorescope's loader.

Written for and tested with myloader 0.10 (Debian 12): -d/--directory, -t/--threads, -B/--database,
-o/--overwrite-tables, -v/--verbose, --defaults-file, -S/-h/-P/-u. Its log lines "Thread N restoring `db`.`t`
part P" give the progress.

myloader 0.14+/1.x (UNTESTED here: it cannot be installed on this machine) keeps these options and adds,
among others, --max-threads-per-table, --innodb-optimize-keys (builds secondary indexes after the data, as
restorescope's loader does), --defaults-extra-file and reading the [myloader] group of option files, and it
loads --load-data dumps (.sql + .dat) itself; its log lines changed wording, so progress falls back to the
start and the end of the run.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path

from worker.runners.loader.counting import rows_in_plan
from worker.runners.loader.layouts.mydumper import read_mydumper
from worker.runners.mysql_client import RestoreOutcome, RestoreProgress
from worker.runners.tool_process import connection_options, run_tool

_RESTORING = re.compile(r"Thread \d+ restoring `(?P<db>(?:[^`]|``)+)`\.`(?P<table>(?:[^`]|``)+)` part (?P<part>\d+)")
_THREAD = re.compile(r"Thread (?P<thread>\d+) ")


def restore_with_myloader(
    dump: Path,
    client_args: list[str],
    popen: Callable[..., subprocess.Popen[bytes]],
    on_progress: Callable[[RestoreProgress], None],
    on_log: Callable[[str], None],
    should_stop: Callable[[], bool],
    *,
    threads: int = 2,
    database: str | None = None,
    overwrite: bool = False,
    myloader_binary: str = "myloader",
) -> RestoreOutcome:
    """Run myloader on `dump`; the dump is checked first with the loader's reader (unfinished dumps and
    missing chunks are refused before myloader touches the server)."""
    plan = read_mydumper(dump)
    sizes = {}
    for table in plan.tables:
        for part, file in enumerate(table.data):
            sizes[(table.database, table.name, part)] = file.total_size
    total = sum(sizes.values())
    started: dict[str, int] = {}  # thread -> size of the part it is loading
    done = 0

    def on_line(line: str) -> None:
        nonlocal done
        on_log(line)
        match = _RESTORING.search(line)
        thread = _THREAD.search(line)
        if thread is not None and thread["thread"] in started:
            done += started.pop(thread["thread"])
        if match is not None and thread is not None:
            key = (match["db"].replace("``", "`"), match["table"].replace("``", "`"), int(match["part"]))
            started[thread["thread"]] = sizes.get(key, 0)
        on_progress(RestoreProgress(min(done, total), total, 0))

    args = [myloader_binary, *_connection(client_args), "--directory", str(dump), "--threads", str(threads)]
    args += ["--verbose", "3"]
    if database:
        args += ["--database", database]
    if overwrite:
        args.append("--overwrite-tables")
    run_tool(args, popen, on_line, should_stop)
    expected = rows_in_plan(plan, should_stop)
    on_progress(RestoreProgress(total, total, sum(expected.values())))
    databases = [database] if database else plan.databases
    if database:
        expected = {(database, name): rows for (_db, name), rows in expected.items()}
    return RestoreOutcome(dict(expected), databases, True)


def _connection(client_args: list[str]) -> list[str]:
    options = connection_options(client_args)
    # myloader 0.10 reads its connection from --defaults-file ([client] group) like the mysql client.
    return [f"--{name}={value}" for name, value in options.items()]
