"""Run a DBA's command-line tool (myloader, mysqlimport) for a job: its output lines go to a callback on the
calling thread, should_stop() is honoured while it runs, and connection options reach it without a
password on its command line."""

from __future__ import annotations

import contextlib
import queue
import subprocess
import threading
from collections import deque
from collections.abc import Callable
from typing import IO

from worker.runners.mysql_client import RestoreCancelled

STOP_CHECK_SECONDS = 0.25
LINES_KEPT = 50


class ToolError(Exception):
    """The tool failed; the message quotes what it said."""


def run_tool(
    args: list[str],
    popen: Callable[..., subprocess.Popen[bytes]],
    on_line: Callable[[str], None],
    should_stop: Callable[[], bool],
    *,
    stdin: bytes | None = None,
) -> list[str]:
    """Run `args` to the end; return its last output lines. RestoreCancelled (the process group's member is
    killed) when should_stop() turns True; ToolError when it exits non-zero."""
    try:
        process = popen(
            args,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
    except FileNotFoundError as error:
        raise ToolError(f"{args[0]} is not installed on this worker") from error
    lines: queue.SimpleQueue[str | None] = queue.SimpleQueue()
    assert process.stdout is not None
    reader = threading.Thread(target=_collect, args=(process.stdout, lines), daemon=True)
    reader.start()
    if stdin is not None:
        writer = threading.Thread(target=_feed, args=(process, stdin), daemon=True)
        writer.start()
    tail: deque[str] = deque(maxlen=LINES_KEPT)
    try:
        finished = False
        while not finished:
            if should_stop():
                raise RestoreCancelled(f"the restore was cancelled; {args[0]} was stopped")
            try:
                line = lines.get(timeout=STOP_CHECK_SECONDS)
            except queue.Empty:
                continue
            if line is None:
                finished = True
                continue
            tail.append(line)
            on_line(line)
        return_code = process.wait()
    except BaseException:
        if process.poll() is None:
            process.kill()
        process.wait()
        raise
    finally:
        reader.join(timeout=5)
        with contextlib.suppress(Exception):
            process.stdout.close()
    if return_code != 0:
        said = " | ".join(list(tail)[-5:]) or "no output"
        raise ToolError(f"{args[0]} exited with code {return_code}: {said}")
    return list(tail)


def _collect(stream: IO[bytes], lines: queue.SimpleQueue[str | None]) -> None:
    for raw in stream:
        lines.put(raw.decode("utf-8", errors="replace").rstrip("\r\n"))
    lines.put(None)


def _feed(process: subprocess.Popen[bytes], data: bytes) -> None:
    assert process.stdin is not None
    with contextlib.suppress(BrokenPipeError, OSError):
        process.stdin.write(data)
    with contextlib.suppress(BrokenPipeError, OSError):
        process.stdin.close()


def connection_options(client_args: list[str]) -> dict[str, str]:
    """--defaults-file, --socket, --host, --port, --user from mysql-style client arguments (--no-defaults and
    the rest dropped): the way tools that do not take every mysql option get the same connection."""
    options: dict[str, str] = {}
    for argument in client_args:
        if argument.startswith("--") and "=" in argument:
            name, value = argument[2:].split("=", 1)
            if name in ("defaults-file", "socket", "host", "port", "user"):
                options[name] = value
    return options
