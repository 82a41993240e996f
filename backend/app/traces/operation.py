"""One IO operation, the common record every trace parser produces.

Times are integers in microseconds. ``start_us`` is since the Unix epoch when the log carries a date
(JuiceFS access logs, ``strace -ttt``, or ``strace -tt`` given a date), else since the midnight of the
day the trace was taken (``strace -tt`` alone). Wall-clock times without a zone are read as UTC.
"""

from dataclasses import dataclass

MALFORMED_TEXT_LIMIT = 200

# Which swimlane colour a call gets. Choices worth knowing:
# - recvfrom/sendto count as read/write: client traffic reaches the server through them.
# - getdents/readdir/lookup are metadata, not data: "other".
# - sync_file_range and JuiceFS "flush" (which uploads buffered data) count as fsync.
_KINDS: dict[str, str] = {
    **dict.fromkeys(("read", "pread64", "readv", "preadv", "preadv2", "recvfrom"), "read"),
    **dict.fromkeys(("write", "pwrite64", "writev", "pwritev", "pwritev2", "sendto"), "write"),
    **dict.fromkeys(("fsync", "fdatasync", "sync_file_range", "flush"), "fsync"),
    **dict.fromkeys(("open", "openat", "openat2", "creat", "create", "mknod"), "open"),
    **dict.fromkeys(("close", "release"), "close"),
}


def kind_of(op: str) -> str:
    """The swimlane kind of a raw call name: read, write, fsync, open, close or other."""
    return _KINDS.get(op, "other")


@dataclass(frozen=True, slots=True)
class Operation:
    """One call as a trace saw it.

    ``size`` is bytes transferred for successful reads and writes whose result says so (strace's return
    value, JuiceFS's returned read length), else the bytes requested. ``result`` is "OK", an errno name
    such as "ENOENT", or the numeric return value as text (strace reports "16384", "0", "?").
    """

    start_us: int
    duration_us: int
    tid: int
    op: str
    kind: str
    path: str | None
    offset: int | None
    size: int | None
    result: str


@dataclass
class Malformed:
    """A line that could not be read, with its 1-based number and why; ``text`` keeps 200 characters."""

    line_no: int
    reason: str
    text: str

    def __post_init__(self) -> None:
        self.text = self.text[:MALFORMED_TEXT_LIMIT]


@dataclass
class ParseResult:
    format: str
    operations: list[Operation]
    malformed: list[Malformed]
    lines: int


def seconds_to_us(whole: str, fraction: str) -> int:
    """'0', '000031' -> 31: exact, no float rounding."""
    return int(whole) * 1_000_000 + int(fraction[:6].ljust(6, "0"))
