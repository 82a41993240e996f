"""Trace parsers: JuiceFS access logs (both generations) and strace -f -tt -T output, line by line."""

import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest

from app.traces.formats import UnknownTraceFormat, detect_trace_format, parse_trace
from app.traces.juicefs_log import parse_juicefs_log
from app.traces.operation import Malformed, Operation, kind_of
from app.traces.strace_log import parse_strace_log

OLD = "2021.01.15 08:26:11.003330 [uid:0,gid:0,pid:4403] "  # ends 1610699171003330 us after the epoch
NEW = "2024.05.01 10:00:00.000100 [uid:0,gid:0,pid:77] "  # ends 1714557600000100
OLD_END = 1_610_699_171_003_330
NEW_END = 1_714_557_600_000_100
ENTRY = "(17670,[-rw-r-----:0100640,1,0,0,1714557600,1714557600,1714557600,0])"
NOON = 43_200_000_000  # 12:00:00 in microseconds since midnight


def op(start: int, dur: int, tid: int, name: str, kind: str, path: str | None = None,
       offset: int | None = None, size: int | None = None, result: str = "OK") -> Operation:  # fmt: skip
    return Operation(start, dur, tid, name, kind, path, offset, size, result)


JUICEFS_LINES = [
    # before v1.2: status after a colon
    ("old-write", OLD + "write (17669,8666,4993160): OK <0.000010>",
     op(OLD_END - 10, 10, 4403, "write", "write", "inode:17669", 4993160, 8666)),
    ("old-read-returned-size", OLD + "read (17669,4096,0): OK (100) <0.000010>",
     op(OLD_END - 10, 10, 4403, "read", "read", "inode:17669", 0, 100)),
    ("old-read-error-keeps-requested-size", OLD + "read (17669,4096,0): bad file descriptor (0) <0.000010>",
     op(OLD_END - 10, 10, 4403, "read", "read", "inode:17669", 0, 4096, "EBADF")),
    ("old-lookup-enoent", OLD + "lookup (1,ib_logfile0): no such file or directory <0.000010>",
     op(OLD_END - 10, 10, 4403, "lookup", "other", "inode:1/ib_logfile0", result="ENOENT")),
    ("old-lookup-entry", OLD + f"lookup (1,ibdata1): OK {ENTRY} <0.000010>",
     op(OLD_END - 10, 10, 4403, "lookup", "other", "inode:1/ibdata1")),
    ("old-fsync", OLD + "fsync (17669,1): OK <0.001000>",
     op(OLD_END - 1000, 1000, 4403, "fsync", "fsync", "inode:17669")),
    ("internal-pid-0", "2021.01.15 08:26:11.003330 [uid:0,gid:0,pid:0] write (5,4096,0): OK <0.000020>",
     op(OLD_END - 20, 20, 0, "write", "write", "inode:5", 0, 4096)),
    # v1.2 and later: method, args with the file handle, " - status"
    ("new-write", NEW + "write (5,16384,49152,12) - OK <0.000050>",
     op(NEW_END - 50, 50, 77, "write", "write", "inode:5", 49152, 16384)),
    ("new-read", NEW + "read (5,16384,0,12): (16384) - OK <0.000050>",
     op(NEW_END - 50, 50, 77, "read", "read", "inode:5", 0, 16384)),
    ("new-short-read", NEW + "read (5,16384,0,12): (100) - OK <0.000050>",
     op(NEW_END - 50, 50, 77, "read", "read", "inode:5", 0, 100)),
    ("new-lookup-enoent-text", NEW + "lookup (1,missing): - no such file or directory <0.000003>",
     op(NEW_END - 3, 3, 77, "lookup", "other", "inode:1/missing", result="ENOENT")),
    ("new-errno-name", NEW + "lookup (1,missing): - ENOENT <0.000003>",
     op(NEW_END - 3, 3, 77, "lookup", "other", "inode:1/missing", result="ENOENT")),
    ("new-create", NEW + f"create (1,t1.ibd,-rw-r-----:0100640): {ENTRY} [fh:13] - OK <0.000400>",
     op(NEW_END - 400, 400, 77, "create", "open", "inode:1/t1.ibd")),
    ("new-mknod", NEW + f"mknod (1,fifo,p---------:0010644,0x00000000): {ENTRY} - OK <0.000400>",
     op(NEW_END - 400, 400, 77, "mknod", "open", "inode:1/fifo")),
    ("new-open", NEW + "open (17669,0x8002) [fh:12] - OK <0.000100>",
     op(NEW_END - 100, 100, 77, "open", "open", "inode:17669")),
    ("new-flush", NEW + "flush (17669,12,0000000000003039) - OK <0.002000>",
     op(NEW_END - 2000, 2000, 77, "flush", "fsync", "inode:17669")),
    ("new-fsync-eio", NEW + "fsync (17669,0) - input/output error <1.500000>",
     op(NEW_END - 1_500_000, 1_500_000, 77, "fsync", "fsync", "inode:17669", result="EIO")),
    ("new-release", NEW + "release (17669,12) - OK <0.000001>",
     op(NEW_END - 1, 1, 77, "release", "close", "inode:17669")),
    ("new-getattr", NEW + f"getattr (17669): {ENTRY} - OK <0.000001>",
     op(NEW_END - 1, 1, 77, "getattr", "other", "inode:17669")),
]  # fmt: skip


@pytest.mark.parametrize(("line", "expected"), [c[1:] for c in JUICEFS_LINES], ids=[c[0] for c in JUICEFS_LINES])
def test_juicefs_line(line: str, expected: Operation) -> None:
    result = parse_juicefs_log([line + "\n"])
    assert result.malformed == []
    assert result.operations == [expected]


def test_juicefs_malformed_lines_are_counted_with_their_numbers() -> None:
    good = OLD + "write (17669,8666,4993160): OK <0.000010>"
    lines = [
        good,
        "garbage here",
        "",
        good,
        OLD + "write (17669,86",
        OLD + "write (17669,86x6,4993160): OK <0.000010>",
        OLD + "write (17669,8666,4993160): OK",
        "2021.13.15 08:26:11.003330 [uid:0,gid:0,pid:1] write (1,2,3): OK <0.000010>",
        "#",
    ]
    result = parse_juicefs_log(iter(lines))
    assert result.lines == 9
    assert len(result.operations) == 2
    assert [(bad.line_no, bad.reason.split(" ")[0]) for bad in result.malformed] == [
        (2, "not"),
        (5, "missing"),
        (6, "bad"),
        (7, "missing"),
        (8, "bad"),
    ]
    assert "duration" in result.malformed[1].reason
    assert result.malformed[2].reason == "bad number in write (17669,86x6,4993160)"


def test_malformed_text_is_truncated() -> None:
    assert len(Malformed(1, "why", "x" * 500).text) == 200


P = "/var/lib/mysql/ibdata1"
STRACE_LINES = [
    ("pid-bracket-pwrite64",
     f'[pid 12345] 12:00:00.123456 pwrite64(12<{P}>, "\\0\\0"..., 16384, 49152) = 16384 <0.000031>',
     [op(NOON + 123456, 31, 12345, "pwrite64", "write", P, 49152, 16384, "16384")]),
    ("bare-pid-short-pread64", '12345 12:00:00.123456 pread64(5, ""..., 16384, 0) = 100 <0.000031>',
     [op(NOON + 123456, 31, 12345, "pread64", "read", None, 0, 100, "100")]),
    ("no-pid-write", '12:00:00.123456 write(1</dev/pts/0>, "hello, world = 1\\n", 17) = 17 <0.000010>',
     [op(NOON + 123456, 10, 0, "write", "write", "/dev/pts/0", None, 17, "17")]),
    ("epoch-ttt-read-eof", '1700000000.123456 read(3</tmp/a b>, "", 4096) = 0 <0.000005>',
     [op(1_700_000_000_123_456, 5, 0, "read", "read", "/tmp/a b", None, 0, "0")]),
    ("openat-enoent", '[pid 7] 12:00:00.000001 openat(AT_FDCWD</var/lib/mysql>, "/var/lib/mysql/nope", O_RDONLY) '
     "= -1 ENOENT (No such file or directory) <0.000010>",
     [op(NOON + 1, 10, 7, "openat", "open", "/var/lib/mysql/nope", result="ENOENT")]),
    ("openat-decoded-result",
     f'[pid 7] 12:00:00.000001 openat(AT_FDCWD</d>, "ibdata1", O_RDWR|O_CLOEXEC) = 3<{P}> <0.000010>',
     [op(NOON + 1, 10, 7, "openat", "open", P, result="3")]),
    ("write-enospc-keeps-count",
     '[pid 7] 12:00:00.000001 write(5</x>, "abc", 3) = -1 ENOSPC (No space left on device) <0.000010>',
     [op(NOON + 1, 10, 7, "write", "write", "/x", None, 3, "ENOSPC")]),
    ("unavailable", "[pid 7] 12:00:00.000001 fsync(9</d/ib_logfile0>) = ? <unavailable>",
     [op(NOON + 1, 0, 7, "fsync", "fsync", "/d/ib_logfile0", result="?")]),
    ("fdatasync", "[pid 7] 12:00:00.000001 fdatasync(9</d/ib_logfile0>) = 0 <0.000360>",
     [op(NOON + 1, 360, 7, "fdatasync", "fsync", "/d/ib_logfile0", result="0")]),
    ("sync-file-range",
     "[pid 7] 12:00:00.000001 sync_file_range(9</d/f>, 4096, 1048576, SYNC_FILE_RANGE_WRITE) = 0 <0.000100>",
     [op(NOON + 1, 100, 7, "sync_file_range", "fsync", "/d/f", 4096, 1048576, "0")]),
    ("io-uring-enter",
     "[pid 7] 12:00:00.000001 io_uring_enter(14<anon_inode:[io_uring]>, 2, 0, 0, NULL, 8) = 2 <0.000020>",
     [op(NOON + 1, 20, 7, "io_uring_enter", "other", "anon_inode:[io_uring]", result="2")]),
    ("recvfrom-socket", '[pid 7] 12:00:00.000001 recvfrom(20<TCP:[127.0.0.1:3306->127.0.0.1:51234]>, "\\3INSERT"..., '
     "16384, MSG_DONTWAIT, NULL, NULL) = 1200 <0.000004>",
     [op(NOON + 1, 4, 7, "recvfrom", "read", "TCP:[127.0.0.1:3306->127.0.0.1:51234]", None, 1200, "1200")]),
    ("close", f"7 12:00:00.000001 close(3<{P}>)                                = 0 <0.000010>",
     [op(NOON + 1, 10, 7, "close", "close", P, result="0")]),
    ("exit-group-no-duration", "12:00:00.000001 exit_group(0)                           = ?",
     [op(NOON + 1, 0, 0, "exit_group", "other", result="?")]),
    ("signal-skipped", "[pid 7] 12:00:00.000001 --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=8} ---", []),
    ("exit-skipped", "8 12:00:00.000001 +++ exited with 0 +++", []),
    ("killed-skipped", "12:00:00.000001 +++ killed by SIGKILL +++", []),
    ("io-submit-two-iocbs",
     "[pid 42] 12:00:00.000001 io_submit(0x7f0000001000, 2, [{aio_data=0x1, aio_lio_opcode=IOCB_CMD_PWRITE, "
     f'aio_fildes=12<{P}>, aio_buf="\\0\\0"..., aio_nbytes=16384, aio_offset=49152}}, {{aio_data=0x2, '
     "aio_lio_opcode=IOCB_CMD_PREAD, aio_fildes=13</d/t1.ibd>, aio_buf=0x7f0000200000, aio_nbytes=4096, "
     "aio_offset=0}]) = 2 <0.000031>",
     [op(NOON + 1, 31, 42, "io_submit", "write", P, 49152, 16384, "2"),
      op(NOON + 1, 31, 42, "io_submit", "read", "/d/t1.ibd", 0, 4096, "2")]),
]  # fmt: skip


@pytest.mark.parametrize(("line", "expected"), [c[1:] for c in STRACE_LINES], ids=[c[0] for c in STRACE_LINES])
def test_strace_line(line: str, expected: list[Operation]) -> None:
    result = parse_strace_log([line + "\n"])
    assert result.malformed == []
    assert result.operations == expected


def test_strace_unfinished_and_resumed_join_per_pid() -> None:
    lines = [
        '[pid 101] 12:00:00.000010 pwrite64(12</d/ib_logfile0>, "x"..., 512, 1024 <unfinished ...>',
        "[pid 102] 12:00:00.000020 pread64(13</d/t1.ibd>,  <unfinished ...>",
        "[pid 101] 12:00:00.000050 <... pwrite64 resumed>) = 512 <0.000040>",
        '[pid 102] 12:00:00.000090 <... pread64 resumed>"y"..., 16384, 32768) = 16384 <0.000070>',
    ]
    result = parse_strace_log(lines)
    assert result.malformed == []
    assert result.operations == [
        op(NOON + 10, 40, 101, "pwrite64", "write", "/d/ib_logfile0", 1024, 512, "512"),
        op(NOON + 20, 70, 102, "pread64", "read", "/d/t1.ibd", 32768, 16384, "16384"),
    ]


def test_strace_malformed_lines_are_counted_with_their_numbers() -> None:
    lines = [
        "[pid 5] 12:00:00.000001 close(3) = 0 <0.000001>",
        "garbage",
        "[pid 8] 12:00:00.000001 read(3,  <unfinished ...>",
        '[pid 5] 12:00:00.000001 pwrite64(12</x>, "ab',
        '[pid 5] 12:00:00.000001 pwrite64(12</x>, "ab", 16x84, 0) = 2 <0.000001>',
        "[pid 5] 12:00:00.000001 close(3) = 0",
        '[pid 9] 12:00:00.000001 <... read resumed>"", 10) = 0 <0.000001>',
        "strace: Process 5 attached",
    ]
    result = parse_strace_log(lines)
    assert result.lines == 8
    assert len(result.operations) == 1
    assert [(bad.line_no, bad.reason) for bad in result.malformed] == [
        (2, "not an strace line (expected '[pid N] HH:MM:SS.ffffff call(...) = result <seconds>')"),
        (3, "read never resumed"),
        (4, "missing duration '<seconds>' at the end (was strace run with -T?)"),
        (5, "bad number in the arguments of pwrite64"),
        (6, "missing duration '<seconds>' at the end (was strace run with -T?)"),
        (7, "read resumed without its '<unfinished ...>' line on pid 9"),
    ]


def test_strace_date_makes_epoch_times_and_midnight_rolls_over() -> None:
    lines = ["23:59:59.999990 close(3) = 0 <0.000001>", "00:00:00.000010 close(4) = 0 <0.000001>"]
    starts = [o.start_us for o in parse_strace_log(lines, date=date(2026, 11, 22)).operations]
    midnight = 1_795_392_000_000_000  # 2026-11-23T00:00:00Z
    assert starts == [midnight - 10, midnight + 10]


@pytest.mark.parametrize(
    ("name", "kind"),
    [("pread64", "read"), ("recvfrom", "read"), ("getdents64", "other"), ("pwritev2", "write"), ("sendto", "write"),
     ("flush", "fsync"), ("sync_file_range", "fsync"), ("openat", "open"), ("create", "open"), ("lookup", "other"),
     ("release", "close"), ("io_uring_enter", "other")],
)  # fmt: skip
def test_kind_of(name: str, kind: str) -> None:
    assert kind_of(name) == kind


DETECT = [
    ("juicefs-old", [OLD + "write (17669,8666,4993160): OK <0.000010>"], "juicefs"),
    ("juicefs-new-after-keepalive", ["#", NEW + "release (17669,12) - OK <0.000001>"], "juicefs"),
    ("strace-bracket", ["", "[pid 5] 12:00:00.000001 close(3) = 0 <0.000001>"], "strace"),
    ("strace-o-file", ["31429 06:02:09.911923 brk(NULL)         = 0x55560c2aa000 <0.000094>"], "strace"),
    ("strace-ttt-unfinished", ["1700000000.123456 read(3,  <unfinished ...>"], "strace"),
    ("csv", ["id,name,price", "1,apple,3"], None),
    ("empty", ["", "  "], None),
]


@pytest.mark.parametrize(("head", "expected"), [c[1:] for c in DETECT], ids=[c[0] for c in DETECT])
def test_detect_trace_format(head: list[str], expected: str | None) -> None:
    assert detect_trace_format(head) == expected


def test_parse_trace_dispatches_and_keeps_line_numbers() -> None:
    lines = ["\n"] * 3 + ["garbage\n"] + ["[pid 5] 12:00:00.000001 close(3) = 0 <0.000001>\n"] * 60
    result = parse_trace(iter(lines))
    assert (result.format, result.lines, len(result.operations)) == ("strace", 64, 60)
    assert [bad.line_no for bad in result.malformed] == [4]
    assert parse_trace([NEW + "release (17669,12) - OK <0.000001>"]).format == "juicefs"


def test_parse_trace_rejects_an_unknown_format() -> None:
    with pytest.raises(UnknownTraceFormat, match="neither a JuiceFS access log nor an strace -f -tt -T log"):
        parse_trace(iter(["id,name\n", "1,apple\n"]))


WRITER = """
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
for i in range(3):
    os.pwrite(fd, b"x" * 16384, i * 16384)
os.fsync(fd)
os.close(fd)
"""


def test_real_strace_output(tmp_path: Path) -> None:
    target = (tmp_path / "data.bin").resolve()
    trace = tmp_path / "trace.txt"
    cmd = ["strace", "-f", "-tt", "-T", "-yy", "-o", str(trace), "--", sys.executable, "-c", WRITER, str(target)]
    subprocess.run(cmd, check=True, capture_output=True, timeout=60)
    with trace.open() as lines:
        result = parse_trace(lines)
    assert result.format == "strace"
    assert result.malformed == []
    on_target = [o for o in result.operations if o.path == str(target)]
    writes = [(o.op, o.kind, o.offset, o.size, o.result) for o in on_target if o.kind == "write"]
    assert writes == [("pwrite64", "write", i * 16384, 16384, "16384") for i in range(3)]
    assert [(o.op, o.result) for o in on_target if o.kind == "fsync"] == [("fsync", "0")]
    assert all(o.tid > 0 and o.duration_us >= 0 for o in on_target)
