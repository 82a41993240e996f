"""Parse a JuiceFS access log (``cat .accesslog``, what ``juicefs profile`` reads).

Every line is written by ``logit`` in juicefs pkg/vfs/accesslog.go as
``"%s [uid:%d,gid:%d,pid:%d] %s <%.6f>"``: the time the operation *ended*
(``2006.01.02 15:04:05.000000``, local time, no zone), the caller's ids, the call, its duration.
Two generations of the call text (pkg/vfs/vfs.go):

- before v1.2 the status follows the argument tuple after a colon, ``strerr(err)`` being "OK" or
  Go's errno text: ``write (17669,8666,4993160): OK``, ``read (17669,4096,0): OK (4096)``,
  ``lookup (1,foo): no such file or directory``;
- from v1.2 ``logit(ctx, method, err, format, ...)`` appends ``" - " + strerr(err)``, and read/write
  also log the file handle: ``write (17669,8666,4993160,12) - OK``, ``read (17669,4096,0,12): (4096) - OK``,
  ``lookup (1,foo): (2,[-rw-r--r--:0100644,1,0,0,...]) - OK``, ``open (2,0x8002) [fh:12] - OK``.

JuiceFS logs inode numbers, not paths: ``path`` is ``inode:<n>``, or ``inode:<parent>/<name>`` for
calls that name an entry in a directory (lookup, create, mknod, mkdir, unlink, rmdir). ``pid:0`` marks
JuiceFS's own background work; those lines may overlap one another and keep tid 0.
Assumes names without ")" (JuiceFS does not escape it inside the tuple).
"""

import errno
import os
import re
from collections.abc import Iterable
from functools import lru_cache

from app.traces.operation import Malformed, Operation, ParseResult, kind_of, seconds_to_us

FORMAT = "juicefs"

_HEADER = re.compile(r"(\d{4})\.(\d\d)\.(\d\d) (\d\d):(\d\d):(\d\d)\.(\d+) \[uid:\d+,gid:\d+,pid:(\d+)\] ")
_LINE = re.compile(
    r"(\d{4})\.(\d\d)\.(\d\d) (\d\d):(\d\d):(\d\d)\.(\d+) \[uid:\d+,gid:\d+,pid:(\d+)\] "
    r"(\w+) \(([^)]*)\)(.*) <(\d+)\.(\d+)>\s*$"
)
_DURATION_AT_END = re.compile(r"<\d+\.\d+>\s*$")
_RETURNED = re.compile(r"\((\d+)\)")

# Go's syscall.Errno.Error() texts are glibc's strerror texts in lower case.
_ERRNO_BY_TEXT = {os.strerror(code).lower(): name for code, name in errno.errorcode.items()}
_ERRNO_NAME = re.compile(r"E[A-Z0-9]+")

# Calls whose tuple starts (parent, name, ...): how many fields follow the name.
_NAMED_ENTRY_TAIL = {"lookup": 0, "unlink": 0, "rmdir": 0, "create": 1, "mkdir": 1, "mknod": 2}


def errno_name(status: str) -> str:
    """'OK' -> 'OK', 'no such file or directory' -> 'ENOENT', 'ENOENT' -> 'ENOENT'; unknown text kept."""
    if status == "OK" or _ERRNO_NAME.fullmatch(status):
        return status
    return _ERRNO_BY_TEXT.get(status.lower(), status)


@lru_cache(maxsize=64)
def _day_us(year: int, month: int, day: int) -> int:
    """Microseconds from the epoch to that midnight (raises ValueError on a bad date)."""
    from datetime import date

    return (date(year, month, day).toordinal() - 719_163) * 86_400_000_000


def _status(rest: str) -> tuple[str, str] | None:
    """(status, text around it holding any returned value) of what follows the argument tuple."""
    head, sep, status = rest.rpartition(" - ")
    if sep:  # v1.2 and later
        return status.strip(), head
    if rest.startswith(": "):  # before v1.2: status first, then "(n)", an entry or "[fh:n]"
        text = rest[2:]
        end = len(text)
        for mark in (" (", " ["):
            at = text.find(mark)
            if at != -1 and at < end:
                end = at
        return text[:end].strip(), text[end:]
    return None


def _path(op: str, args: str) -> str | None:
    tail = _NAMED_ENTRY_TAIL.get(op)
    if tail is not None:
        parent, _, name = args.partition(",")
        if tail:
            name = name.rsplit(",", tail)[0]
        return f"inode:{parent}/{name}"
    first = args.partition(",")[0]
    return f"inode:{first}" if first.isdigit() else None


def parse_line(line: str) -> Operation | str:
    """An Operation, or the reason the line is malformed."""
    m = _LINE.match(line)
    if m is None:
        if not _HEADER.match(line):
            return "not a JuiceFS access log line (expected 'YYYY.MM.DD HH:MM:SS.ffffff [uid:..,gid:..,pid:..]')"
        if not _DURATION_AT_END.search(line):
            return "missing duration '<seconds>' at the end (truncated line?)"
        return "cannot read the call: expected 'name (args)'"
    year, month, day, hh, mm, ss, frac, pid, op, args, rest, dur_s, dur_f = m.groups()
    try:
        end_us = _day_us(int(year), int(month), int(day)) + (int(hh) * 3600 + int(mm) * 60 + int(ss)) * 1_000_000
    except ValueError:
        return f"bad date {year}.{month}.{day}"
    end_us += int(frac[:6].ljust(6, "0"))
    duration = seconds_to_us(dur_s, dur_f)
    found = _status(rest)
    if found is None:
        return "no status after the arguments (expected ': OK' or ' - OK')"
    status, around = found
    if not status:
        return "empty status"
    kind = kind_of(op)
    offset = size = None
    if kind in ("read", "write"):
        fields = args.split(",")
        if len(fields) < 3:
            return f"{op} needs (inode,size,offset)"
        try:
            size, offset = int(fields[1]), int(fields[2])
            if kind == "read" and status == "OK" and (got := _RETURNED.search(around)):
                size = int(got.group(1))
        except ValueError:
            return f"bad number in {op} ({args})"
    return Operation(
        start_us=end_us - duration,
        duration_us=duration,
        tid=int(pid),
        op=op,
        kind=kind,
        path=_path(op, args),
        offset=offset,
        size=size,
        result=errno_name(status),
    )


class JuiceFsLogParser:
    """Reads an access log one line at a time; blank lines and '#' keep-alives are skipped."""

    format = FORMAT

    def __init__(self) -> None:
        self.lines = 0
        self.malformed: list[Malformed] = []

    def feed(self, line: str) -> list[Operation]:
        self.lines += 1
        if not line.strip() or line.startswith("#"):
            return []
        parsed = parse_line(line)
        if isinstance(parsed, str):
            self.malformed.append(Malformed(self.lines, parsed, line.rstrip("\r\n")))
            return []
        return [parsed]

    def finish(self) -> None:
        """Nothing waits across lines in this format."""


def parse_juicefs_log(lines: Iterable[str]) -> ParseResult:
    """Parse access log lines as they stream by."""
    parser = JuiceFsLogParser()
    operations = [operation for line in lines for operation in parser.feed(line)]
    return ParseResult(FORMAT, operations, parser.malformed, parser.lines)
