"""Parse ``strace -f -tt -T`` output (``-ttt`` and ``-y``/``-yy`` accepted too).

A line is ``[pid N] TIME call(args) = result <seconds>``; with ``-o file`` strace writes ``N TIME ...``
instead, and lines of the traced process carry no pid at all when it is the only one (tid 0 here, since
its pid is not in the log). TIME is ``HH:MM:SS.ffffff`` (``-tt``: microseconds since midnight, or since
the epoch when a date is given; a jump back of more than 12 hours is taken as the next day) or
``seconds.ffffff`` (``-ttt``: since the epoch).

A call another thread interrupted is split into ``call(args <unfinished ...>`` and, later on the same
pid, ``<... call resumed>rest) = result <seconds>``: the two are joined, the start taken from the first.
Signals (``--- SIGCHLD {...} ---``), exits (``+++ exited with 0 +++``) and strace's own messages are
skipped. ``io_submit`` gives one operation per iocb (path, offset and bytes requested from the iocb; the
result is io_submit's own). ``io_uring_enter`` carries no file information: kind "other".
"""

import re
from collections.abc import Iterable
from datetime import date as Date

from app.traces.operation import Malformed, Operation, ParseResult, kind_of, seconds_to_us

FORMAT = "strace"

_HEAD = re.compile(r"(?:\[pid\s+(\d+)\] |(\d+)\s+)?(?:(\d\d):(\d\d):(\d\d)\.(\d+)|(\d{9,})\.(\d+)) (.*)")
_DURATION = re.compile(r" <(?:(\d+)\.(\d+)|(unavailable))>$")
_RESULT = re.compile(r"(-?\d+|0x[0-9a-fA-F]+|\?)(?:<.*?>)?(?: (E[A-Z0-9]+))?")
_CALL = re.compile(r"(\w+)\((.*)\)$", re.DOTALL)
_UNFINISHED = re.compile(r"(\w+)\((.*?) ?<unfinished \.\.\.>$")
_RESUMED = re.compile(r"<\.\.\. (\w+) resumed> ?(.*)$")
_FD = re.compile(r"-?\d+<(.*?)>(?:,|$)")
_RESULT_PATH = re.compile(r"-?\d+<(.*)>")
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')
_IOCB_FD = re.compile(r"aio_fildes=\d+(?:<(.*?)>)?")
_IOCB_NBYTES = re.compile(r"aio_nbytes=(\d+)")
_IOCB_OFFSET = re.compile(r"aio_offset=(-?\d+)")

_DAY_US = 86_400_000_000
_HALF_DAY_US = _DAY_US // 2
_IOCB_KINDS = {"PREAD": "read", "PREADV": "read", "PWRITE": "write", "PWRITEV": "write",
               "FSYNC": "fsync", "FDSYNC": "fsync"}  # fmt: skip
# (fd, buf, count, offset) and (fd, iov, iovcnt, offset): offset is the last argument.
_POSITIONAL = frozenset(("pread64", "pwrite64", "preadv", "pwritev", "preadv2", "pwritev2"))
_COUNT_LAST = frozenset(("read", "write"))
_OPENS = frozenset(("open", "openat", "openat2", "creat"))


class _Bad(Exception):
    """A line that cannot be read; its message is the reason."""


def _transferred(result: str, errno: str | None) -> int | None:
    if errno is None and result.isdigit():
        return int(result)
    return None


def _path(call: str, args: str, result_text: str) -> str | None:
    if call in _OPENS:
        decoded = _RESULT_PATH.match(result_text)
        if decoded:
            return decoded.group(1)
        quoted = _QUOTED.search(args)
        return quoted.group(1) if quoted else None
    fd = _FD.match(args)
    return fd.group(1) if fd else None


def _offset_size(call: str, args: str, result: str, errno: str | None) -> tuple[int | None, int | None]:
    done = _transferred(result, errno)
    try:
        if call in _POSITIONAL:
            last = args.rpartition(", ")[2]
            if call.startswith(("pread", "pwrite")):
                count = int(args.rsplit(", ", 2)[1])
                return int(last), done if done is not None else count
            return int(last), done
        if call in _COUNT_LAST:
            return None, done if done is not None else int(args.rpartition(", ")[2])
        if call == "sync_file_range":
            _, offset, nbytes, _ = args.split(", ")
            return int(offset), int(nbytes)
    except (ValueError, IndexError) as e:
        raise _Bad(f"bad number in the arguments of {call}") from e
    if kind_of(call) in ("read", "write"):
        return None, done
    return None, None


def _iocbs(args: str, start: int, duration: int, tid: int, result: str) -> list[Operation]:
    ops = []
    for iocb in args.split("aio_lio_opcode=")[1:]:
        opcode = iocb.partition(",")[0].removeprefix("IOCB_CMD_")
        fd, nbytes, offset = _IOCB_FD.search(iocb), _IOCB_NBYTES.search(iocb), _IOCB_OFFSET.search(iocb)
        ops.append(Operation(
            start_us=start, duration_us=duration, tid=tid, op="io_submit",
            kind=_IOCB_KINDS.get(opcode, "other"),
            path=fd.group(1) if fd else None,
            offset=int(offset.group(1)) if offset else None,
            size=int(nbytes.group(1)) if nbytes else None,
            result=result,
        ))  # fmt: skip
    return ops


def _operations(text: str, start: int, tid: int) -> list[Operation]:
    """The operations of one complete ``call(args) = result <seconds>``."""
    dur = _DURATION.match(text, max(text.rfind(" <"), 0))
    if dur is None:
        if text.endswith(" = ?"):  # exit_group and calls cut short by the process's death
            text, duration = text + " ", 0
        else:
            raise _Bad("missing duration '<seconds>' at the end (was strace run with -T?)")
    else:
        duration = 0 if dur.group(3) else seconds_to_us(dur.group(1), dur.group(2))
        text = text[: dur.start()]
    call_text, sep, result_text = text.rpartition(" = ")
    if not sep:
        raise _Bad("no ' = result' after the call")
    call_m = _CALL.match(call_text.rstrip())
    if call_m is None:
        raise _Bad("cannot read the call: expected 'name(args)'")
    result_m = _RESULT.match(result_text)
    if result_m is None:
        raise _Bad(f"cannot read the result {result_text!r}")
    call, args = call_m.groups()
    result, errno = result_m.groups()
    shown = errno or result
    if call == "io_submit" and "aio_lio_opcode=" in args:
        return _iocbs(args, start, duration, tid, shown)
    offset, size = _offset_size(call, args, result, errno)
    path = _path(call, args, result_text)
    return [Operation(start, duration, tid, call, kind_of(call), path, offset, size, shown)]


class StraceLogParser:
    """Reads strace output one line at a time, so a live capture or a big upload never sits in memory.

    ``feed`` returns the operations a line completes (none for an ``<unfinished ...>`` line, which waits
    for its resumption); lines that cannot be read go to ``malformed``. Call ``finish`` at the end: calls
    that never resumed become malformed lines too.
    """

    format = "strace"

    def __init__(self, day: Date | None = None) -> None:
        self.lines = 0
        self.base_us = 0 if day is None else (day.toordinal() - 719_163) * _DAY_US
        self.last_clock = -1
        self.pending: dict[int, tuple[int, int, str, str]] = {}  # tid -> (line_no, start, call, args so far)
        self.malformed: list[Malformed] = []

    def _start(self, m: re.Match[str]) -> int:
        hh, mm, ss, frac, epoch_s, epoch_f = m.group(3, 4, 5, 6, 7, 8)
        if epoch_s is not None:
            return seconds_to_us(epoch_s, epoch_f)
        clock = (int(hh) * 3600 + int(mm) * 60 + int(ss)) * 1_000_000 + int(frac[:6].ljust(6, "0"))
        if clock < self.last_clock - _HALF_DAY_US:  # past midnight
            self.base_us += _DAY_US
        self.last_clock = clock
        return self.base_us + clock

    def feed(self, line: str) -> list[Operation]:
        self.lines += 1
        try:
            return self._line(self.lines, line)
        except _Bad as bad:
            self.malformed.append(Malformed(self.lines, str(bad), line.rstrip("\r\n")))
            return []

    def _line(self, line_no: int, line: str) -> list[Operation]:
        m = _HEAD.match(line)
        if m is None:
            if line.startswith("strace: ") or not line.strip():
                return []
            raise _Bad("not an strace line (expected '[pid N] HH:MM:SS.ffffff call(...) = result <seconds>')")
        rest = m.group(9).rstrip()
        if rest.startswith(("---", "+++")):
            return []
        tid = int(m.group(1) or m.group(2) or 0)
        start = self._start(m)
        if rest.endswith("<unfinished ...>"):
            u = _UNFINISHED.match(rest)
            if u is None:
                raise _Bad("cannot read the unfinished call")
            self.pending[tid] = (line_no, start, u.group(1), u.group(2))
            return []
        if rest.startswith("<..."):
            r = _RESUMED.match(rest)
            if r is None:
                raise _Bad("cannot read the resumed call")
            first = self.pending.pop(tid, None)
            if first is None or first[2] != r.group(1):
                raise _Bad(f"{r.group(1)} resumed without its '<unfinished ...>' line on pid {tid}")
            _, start, call, head = first
            joined_args = head.rstrip()
            tail = r.group(2)
            if joined_args and not joined_args.endswith(",") and not tail.startswith(")"):
                joined_args += " "
            rest = f"{call}({joined_args}{tail}"
        return _operations(rest, start, tid)

    def finish(self) -> None:
        for line_no, _, call, head in self.pending.values():
            self.malformed.append(Malformed(line_no, f"{call} never resumed", f"{call}({head} <unfinished ...>"))
        self.pending.clear()
        self.malformed.sort(key=lambda bad: bad.line_no)


def looks_like_strace(line: str) -> bool:
    """Whether a line has strace's shape (a time, then a call, a signal, an exit or a resumption)."""
    m = _HEAD.match(line)
    if m is None:
        return False
    rest = m.group(9).rstrip()
    if rest.startswith(("--- SIG", "+++ ", "<... ")) or rest.endswith("<unfinished ...>"):
        return True
    return _CALL.match(rest.rpartition(" = ")[0].rstrip()) is not None


def parse_strace_log(lines: Iterable[str], date: Date | None = None) -> ParseResult:
    """Parse strace output as it streams by; ``date`` turns ``-tt`` clock times into epoch times."""
    parser = StraceLogParser(date)
    operations = [operation for line in lines for operation in parser.feed(line)]
    parser.finish()
    return ParseResult(FORMAT, operations, parser.malformed, parser.lines)
