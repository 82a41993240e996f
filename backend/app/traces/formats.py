"""Tell a JuiceFS access log from strace output by their first lines, and parse either."""

import itertools
from collections.abc import Iterable, Iterator
from typing import Protocol

from app.traces import juicefs_log, strace_log
from app.traces.operation import Malformed, Operation, ParseResult

HEAD_LINES = 50


class UnknownTraceFormat(ValueError):
    """The file is neither a JuiceFS access log nor strace output."""

    def __init__(self) -> None:
        super().__init__(
            "this file is neither a JuiceFS access log nor an strace -f -tt -T log: the first lines do not "
            "parse as either; see the import page for the expected formats"
        )


def detect_trace_format(head_lines: list[str]) -> str | None:
    """ "juicefs", "strace", or None when none of the first 50 non-empty lines parses as either."""
    votes = {juicefs_log.FORMAT: 0, strace_log.FORMAT: 0}
    for line in itertools.islice((line for line in head_lines if line.strip()), HEAD_LINES):
        if not isinstance(juicefs_log.parse_line(line), str):
            votes[juicefs_log.FORMAT] += 1
        elif strace_log.looks_like_strace(line):
            votes[strace_log.FORMAT] += 1
    best = max(votes, key=lambda name: votes[name])
    return best if votes[best] else None


def _head(lines: Iterator[str]) -> list[str]:
    """Lines up to and including the 50th non-empty one."""
    head: list[str] = []
    non_empty = 0
    for line in lines:
        head.append(line)
        non_empty += bool(line.strip())
        if non_empty >= HEAD_LINES:
            break
    return head


class LineParser(Protocol):
    """A parser fed one line at a time (strace_log.StraceLogParser, juicefs_log.JuiceFsLogParser)."""

    format: str
    lines: int
    malformed: list[Malformed]

    def feed(self, line: str) -> list[Operation]: ...

    def finish(self) -> None: ...


def open_trace(lines: Iterable[str]) -> tuple[LineParser, Iterator[str]]:
    """Detect the format from the first lines; returns its parser and every line, the head included."""
    stream = iter(lines)
    head = _head(stream)
    found = detect_trace_format(head)
    if found is None:
        raise UnknownTraceFormat()
    parser: LineParser = juicefs_log.JuiceFsLogParser() if found == juicefs_log.FORMAT else strace_log.StraceLogParser()
    return parser, itertools.chain(head, stream)


def parse_trace(lines: Iterable[str]) -> ParseResult:
    """Detect the format, then parse the whole stream into memory (for tests and small files)."""
    parser, everything = open_trace(lines)
    operations = [operation for line in everything for operation in parser.feed(line)]
    parser.finish()
    return ParseResult(parser.format, operations, parser.malformed, parser.lines)
