"""Restore a mysqldump --tab directory with the tools DBAs use: the table definitions through the mysql
client, the rows with `mysqlimport --local --use-threads=N` (one file per thread), then the triggers, views
and routines. The triggers are taken out of the table scripts and created after the rows, so they do not
fire on restored rows (run as `mysql < t.sql; mysqlimport`, a --tab restore would fire them).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

from worker.runners.dump_stream import UnreadableDumpError
from worker.runners.loader.counting import rows_in_plan
from worker.runners.loader.layouts.tab import read_tab
from worker.runners.loader.plan import Script
from worker.runners.loader.sql_script import split_script
from worker.runners.loader.statements import Action, classify, quote_name
from worker.runners.mysql_client import RestoreOutcome, RestoreProgress
from worker.runners.tool_process import run_tool


def restore_with_mysqlimport(
    dump: Path,
    client_args: list[str],
    popen: Callable[..., subprocess.Popen[bytes]],
    on_progress: Callable[[RestoreProgress], None],
    on_log: Callable[[str], None],
    should_stop: Callable[[], bool],
    *,
    database: str,
    threads: int = 2,
    mysql_binary: str = "mysql",
    mysqlimport_binary: str = "mysqlimport",
) -> RestoreOutcome:
    plan = read_tab(dump, database)
    files = [f.path for t in plan.tables for f in t.data]
    if any(f.suffix != ".txt" for f in files):
        raise UnreadableDumpError(
            f"mysqlimport reads only plain .txt files and {dump.name} has compressed ones: decompress them, or "
            "restore with restorescope's loader, which reads .gz, .zst and .bz2"
        )
    total = sum(f.stat().st_size for f in files)
    sizes = {f"{database}.{f.stem}": f.stat().st_size for f in files}
    done = 0
    mysql = [mysql_binary, *client_args, "--batch"]
    use = f"USE {quote_name(database)};\n".encode()
    # --tab table scripts come in name order, not in the order their foreign keys need (mysqldump sets
    # FOREIGN_KEY_CHECKS=0 in a single-file dump only): create them, and load the rows, with the checks off.
    schema = b"SET FOREIGN_KEY_CHECKS=0;\n" + b"".join(_script(s, keep_post_data=False) for s in plan.before) + use
    schema += b"".join(_script(d, keep_post_data=False) for t in plan.tables for d in t.ddl)
    run_tool(mysql, popen, on_log, should_stop, stdin=schema)

    def on_line(line: str) -> None:
        nonlocal done
        on_log(line)
        name = line.split(":", 1)[0]
        if ": Records:" in line and name in sizes:
            done += sizes.pop(name)
            on_progress(RestoreProgress(done, total, 0))

    run_tool(
        [
            mysqlimport_binary,
            *client_args,
            "--local",
            f"--use-threads={threads}",
            "--default-character-set=binary",  # mysqldump --tab writes each column's own bytes
            "--ignore-foreign-keys",  # MariaDB's mysqlimport: a child table may load before its parent
            database,
            *(str(f) for f in files),
        ],
        popen,
        on_line,
        should_stop,
    )
    post = b"".join(_script(d, keep_post_data=True) for t in plan.tables for d in t.ddl)
    post += b"".join(s.text + b"\n" for s in [*plan.routines, *plan.views, *plan.triggers, *plan.after])
    run_tool(mysql, popen, on_log, should_stop, stdin=use + post)
    expected = rows_in_plan(plan, should_stop)
    on_progress(RestoreProgress(total, total, sum(expected.values())))
    return RestoreOutcome(dict(expected), [database], True)


def _script(script: Script, *, keep_post_data: bool) -> bytes:
    """The script's statements for the mysql client: without its triggers (keep_post_data=False), or only
    the triggers and the SET statements they depend on (keep_post_data=True)."""
    out: list[bytes] = []
    for statement in split_script(script.text):
        action = classify(statement.text).action
        if action is Action.SESSION or (action is Action.POST_DATA) == keep_post_data:
            if statement.delimiter != b";":
                out.append(b"DELIMITER " + statement.delimiter + b"\n")
            out.append(statement.text + statement.delimiter + b"\n")
            if statement.delimiter != b";":
                out.append(b"DELIMITER ;\n")
    return b"".join(out)
