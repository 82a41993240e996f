"""Read a mysqldump file (plain, gzip, zstd or bzip2) and count the rows it will insert, without a server.

The restore streams the dump through the `mysql` client and this module at the same time: `DumpReader`
yields decompressed chunks and `RowCounter` learns from them which tables exist and how many rows each
should end up with, so a restore can be verified with `SELECT COUNT(*)` afterwards.

Exceptions:

    DumpError                 the dump itself cannot be used; the message says what to do
    ├── UnreadableDumpError   missing, unreadable, or compressed with a format we do not read
    ├── TruncatedDumpError    a compressed stream ends early (partial copy or upload)
    └── CorruptDumpError      compressed data fails to decode (damaged bytes)
"""

from __future__ import annotations

import bz2
import re
import zlib
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import BinaryIO, Protocol

import zstandard

from app.backups.detect import GZIP_MAGIC, HEAD_MAGIC_BYTES, compression_of_head

# Formats people do send us; naming them beats letting `mysql` choke on binary garbage.
_UNSUPPORTED_MAGIC = {
    b"\xfd7zXZ\x00": "xz",
    b"PK\x03\x04": "zip",
    b"7z\xbc\xaf\x27\x1c": "7z",
}


class DumpError(Exception):
    """The dump cannot be restored; `str(error)` tells the user what happened and what to do."""


class UnreadableDumpError(DumpError):
    """The file cannot be opened or read, or uses a compression format we do not read."""


class TruncatedDumpError(DumpError):
    """A compressed stream ends before its end marker: the file was cut short."""


class CorruptDumpError(DumpError):
    """Compressed data fails to decode or fails its checksum."""


class _Decoder(Protocol):
    def decode(self, block: bytes) -> Iterator[bytes]: ...

    def ended_mid_stream(self) -> bool: ...


class _GzipDecoder:
    """Decodes one or more concatenated gzip members (pigz and `cat a.gz b.gz` produce several)."""

    name = "gzip"

    def __init__(self, path: Path, max_output: int) -> None:
        self._path = path
        self._max_output = max_output
        self._stream = zlib.decompressobj(wbits=31)
        self._inside_member = False

    def decode(self, block: bytes) -> Iterator[bytes]:
        if block and not self._stream.eof:
            self._inside_member = True
        while True:
            try:
                # max_length keeps memory bounded even for highly compressible data.
                output = self._stream.decompress(block, self._max_output)
            except zlib.error as error:
                raise CorruptDumpError(_corrupt_message(self._path, "gzip", str(error))) from error
            if output:
                yield output
            if self._stream.eof:
                self._inside_member = False
                block = self._start_next_member(self._stream.unused_data)
                if not block:
                    return
                continue
            block = self._stream.unconsumed_tail
            if not block and len(output) < self._max_output:
                return  # a full output buffer may mean more output is pending even without input

    def _start_next_member(self, rest: bytes) -> bytes:
        """Switch to the next gzip member in `rest`; return the bytes still to decode (b"" if none)."""
        if not rest.strip(b"\x00"):
            return b""  # some tools pad gzip files with zeros; gzip(1) ignores them too
        if not rest.startswith(GZIP_MAGIC[: len(rest)]):
            raise CorruptDumpError(_corrupt_message(self._path, "gzip", "unexpected bytes after the end of the data"))
        self._stream = zlib.decompressobj(wbits=31)
        self._inside_member = True
        return rest

    def ended_mid_stream(self) -> bool:
        return self._inside_member


class _ZstdDecoder:
    """Decodes one or more zstd frames.

    zstandard's `stream_reader` returns short data without any error when a frame is cut off (checked
    with zstandard 0.25), so we use `decompressobj`, whose `eof` tells whether the frame was finished.
    It has no output limit: memory per call is bounded by the input block times the compression ratio.
    """

    name = "zstd"

    def __init__(self, path: Path) -> None:
        self._path = path
        self._decompressor = zstandard.ZstdDecompressor()
        self._frame = self._decompressor.decompressobj()
        self._inside_frame = False

    def decode(self, block: bytes) -> Iterator[bytes]:
        while block:
            if self._frame.eof:
                self._frame = self._decompressor.decompressobj()  # `block` starts the next frame
            self._inside_frame = True
            try:
                output = self._frame.decompress(block)
            except zstandard.ZstdError as error:
                raise CorruptDumpError(_corrupt_message(self._path, "zstd", str(error))) from error
            if output:
                yield output
            block = b""
            if self._frame.eof:
                self._inside_frame = False
                block = self._frame.unused_data

    def ended_mid_stream(self) -> bool:
        return self._inside_frame


class _Bzip2Decoder:
    """Decodes one or more concatenated bzip2 streams (pbzip2 writes one per block of its threads)."""

    name = "bzip2"

    def __init__(self, path: Path, max_output: int) -> None:
        self._path = path
        self._max_output = max_output
        self._stream = bz2.BZ2Decompressor()
        self._between_streams = False  # the last stream ended: what follows must be another one
        self._pending = b""  # the next stream's first bytes, too few to check its header: wait for more
        self._inside_stream = False

    def decode(self, block: bytes) -> Iterator[bytes]:
        data, self._pending = self._pending + block, b""
        while True:
            if self._between_streams:
                if not data.strip(b"\x00"):
                    return  # nothing, or padding
                if len(data) < HEAD_MAGIC_BYTES:
                    self._pending = data
                    return
                if compression_of_head(data[:HEAD_MAGIC_BYTES]) != "bzip2":
                    raise CorruptDumpError(_corrupt_message(self._path, "bzip2", "unexpected bytes after the end"))
                self._stream, self._between_streams = bz2.BZ2Decompressor(), False
            if not data and self._stream.needs_input:
                return
            if data:
                self._inside_stream = True
            try:
                # max_length keeps memory bounded; what it holds back comes out on the next call with b"".
                output = self._stream.decompress(data, self._max_output)
            except (OSError, EOFError) as error:
                raise CorruptDumpError(_corrupt_message(self._path, "bzip2", str(error))) from error
            data = b""
            if output:
                yield output
            if self._stream.eof:
                self._inside_stream, self._between_streams = False, True
                data = self._stream.unused_data
            elif self._stream.needs_input:
                return

    def ended_mid_stream(self) -> bool:
        return self._inside_stream or bool(self._pending)


def _corrupt_message(path: Path, kind: str, detail: str) -> str:
    return (
        f"{path} is not valid {kind} data ({detail}): the file is damaged; "
        "copy the backup again, or take a new one if the source copy is damaged too"
    )


class DumpReader:
    """An open dump file; iterate `chunks()` for the decompressed SQL."""

    def __init__(self, path: Path, file: BinaryIO, compression: str, total_bytes: int) -> None:
        self.path = path
        self.compression = compression  # "gzip", "zstd", "bzip2" or "plain"
        self.total_bytes = total_bytes  # size on disk, for a progress percentage
        self.compressed_bytes_read = 0  # position in the file on disk
        self._file = file

    def __enter__(self) -> DumpReader:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self._file.close()

    def chunks(self, size: int = 1 << 20) -> Iterator[bytes]:
        """Yield the decompressed dump in pieces of roughly `size` bytes (never empty)."""
        if self.compression == "plain":
            yield from self._read_blocks(size)
            return
        # Compressed input is read in smaller blocks so each decoded piece stays near `size`.
        decoder = self._decoder(size)
        for block in self._read_blocks(max(size // 8, 1 << 16)):
            yield from decoder.decode(block)
        if decoder.ended_mid_stream():
            raise TruncatedDumpError(
                f"{self.path} ends before the end of its {self.compression} stream after "
                f"{self.compressed_bytes_read} bytes: the file is truncated or still being copied; "
                "copy the backup again"
            )

    def _decoder(self, size: int) -> _Decoder:
        if self.compression == "gzip":
            return _GzipDecoder(self.path, size)
        if self.compression == "bzip2":
            return _Bzip2Decoder(self.path, size)
        return _ZstdDecoder(self.path)

    def _read_blocks(self, size: int) -> Iterator[bytes]:
        while True:
            try:
                block = self._file.read(size)
            except OSError as error:
                raise UnreadableDumpError(_unreadable_message(self.path, error)) from error
            if not block:
                return
            self.compressed_bytes_read += len(block)
            yield block


def _unreadable_message(path: Path, error: OSError) -> str:
    reason = error.strerror or str(error)
    return f"cannot read {path}: {reason}; check that the file exists and the worker's user can read it"


def open_dump(path: Path) -> DumpReader:
    """Open a dump, detecting gzip, zstd or bzip2 compression from its first bytes (the name may lie)."""
    try:
        file = path.open("rb")
    except OSError as error:
        raise UnreadableDumpError(_unreadable_message(path, error)) from error
    try:
        total_bytes = path.stat().st_size
        head = file.read(HEAD_MAGIC_BYTES)
        file.seek(0)
    except OSError as error:
        file.close()
        raise UnreadableDumpError(_unreadable_message(path, error)) from error
    try:
        compression = _detect_compression(path, head)
    except DumpError:
        file.close()
        raise
    return DumpReader(path, file, compression, total_bytes)


def _detect_compression(path: Path, head: bytes) -> str:
    if (compression := compression_of_head(head)) is not None:
        return compression
    for magic, name in _UNSUPPORTED_MAGIC.items():
        if head.startswith(magic):
            raise UnreadableDumpError(
                f"{path} is {name}-compressed, which restorescope does not read; "
                "decompress it, or recompress it with gzip, zstd or bzip2, and upload it again"
            )
    return "plain"


# --- counting rows ---------------------------------------------------------------------------------

_NAME = rb"`(?:[^`]|``)+`|\w+"
_INSERT_HEADER = re.compile(
    rb"(?:INSERT|REPLACE)(?:\s+(?:LOW_PRIORITY|DELAYED|HIGH_PRIORITY|IGNORE))*\s+(?:INTO\s+)?"
    rb"(?P<first>" + _NAME + rb")(?:\s*\.\s*(?P<second>" + _NAME + rb"))?\s*"
    rb"(?:\((?:`(?:[^`]|``)*`|[^)`])*\)\s*)?"  # --complete-insert column list
    rb"VALUES?",
    re.IGNORECASE,
)
_CREATE_TABLE = re.compile(
    rb"CREATE\s+(?:OR\s+REPLACE\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?"
    rb"(?P<first>" + _NAME + rb")(?:\s*\.\s*(?P<second>" + _NAME + rb"))?",
    re.IGNORECASE,
)
_CREATE_DATABASE = re.compile(
    rb"CREATE\s+(?:DATABASE|SCHEMA)\s+(?:/\*!32312\s+)?(?:IF\s+NOT\s+EXISTS\s*)?(?:\*/\s*)?(?P<name>" + _NAME + rb")",
    re.IGNORECASE,
)
_USE = re.compile(rb"USE\s+(?P<name>" + _NAME + rb")\s*;?\s*$", re.IGNORECASE)
_DELIMITER = re.compile(rb"DELIMITER\s+(?P<delimiter>\S+)", re.IGNORECASE)
_DUMP_COMPLETED = b"-- Dump completed"
# A line without a newline this long is parsed before it ends (only long INSERTs grow this long).
LONG_LINE = 1 << 14

# Counting tuples only needs quotes (to skip strings) and opening parentheses: deleting every other
# byte first shrinks the text the regex has to walk by ~40x on typical rows.
_ALL_BUT_QUOTE_AND_PAREN = bytes(b for b in range(256) if b not in b"'(")
_QUOTED = re.compile(rb"'[^']*'")


def count_tuples(values: bytes) -> int | None:
    """Count the row tuples in the VALUES part of INSERT statements, or None if it ends inside a string.

    Counts `(` outside string literals: mysqldump writes only literals (numbers, NULL, 'strings',
    0x.., b'..'), never function calls, so every `(` outside a string opens a row.
    """
    if b"\\" in values:
        # Escaped backslashes and quotes cannot end a string; dropping them first makes every
        # remaining quote a real delimiter (a doubled '' simply closes and reopens a string).
        values = values.replace(b"\\\\", b"").replace(b"\\'", b"")
    reduced = values.translate(None, _ALL_BUT_QUOTE_AND_PAREN)
    if b"'" in reduced:
        reduced = _QUOTED.sub(b"", reduced)
        if b"'" in reduced:
            return None
    return reduced.count(b"(")


def _identifier(raw: bytes) -> str:
    if raw.startswith(b"`"):
        raw = raw[1:-1].replace(b"``", b"`")
    return raw.decode("utf-8", errors="replace")


TableKey = tuple[str | None, str]


class RowCounter:
    """Learns databases, tables and row counts from a mysqldump SQL stream fed in arbitrary chunks.

    Feed every chunk with `feed()` and call `finish()` at the end. Only whole lines are parsed, so memory
    is bounded by the longest line (mysqldump keeps extended INSERTs near --net-buffer-length, 1 MB).
    Statements inside `DELIMITER ;;` blocks (triggers, routines, events) are skipped, and view
    placeholders (`/*!50001 CREATE VIEW ...*/` here, `/*!50001 CREATE TABLE` in old versions) are
    not tables: only unversioned `CREATE TABLE` lines are.
    """

    def __init__(self, default_database: str | None = None) -> None:
        self._database = default_database
        self._databases: list[str] = []
        self._expected: dict[TableKey, int] = {}
        self._rows_seen = 0
        self._has_use = False
        self._dump_completed = False
        self._pending = b""
        self._insert_key: TableKey | None = None  # set while inside the VALUES of an INSERT
        self._in_delimiter_block = False
        self._statement_end: bytes | None = None  # b";\n", or b";\r\n" for dumps written on Windows
        self._run_patterns: dict[bytes, re.Pattern[bytes]] = {}
        self._no_run_before = 0  # position in the current data where a single-row run failed to parse

    @property
    def expected_rows(self) -> dict[TableKey, int]:
        return dict(self._expected)

    @property
    def rows_seen(self) -> int:
        return self._rows_seen

    @property
    def databases(self) -> list[str]:
        return list(self._databases)

    @property
    def has_use_statements(self) -> bool:
        return self._has_use

    @property
    def dump_completed(self) -> bool:
        """True once mysqldump's closing `-- Dump completed` comment was seen (absent with --skip-comments)."""
        return self._dump_completed

    def feed(self, chunk: bytes) -> None:
        data = self._pending + chunk if self._pending else chunk
        if self._statement_end is None:
            self._statement_end = self._detect_statement_end(data)
        self._no_run_before = 0
        consumed = self._consume(data)
        self._pending = data[consumed:]

    def finish(self) -> None:
        """Parse what is left after the last chunk (a dump may end without a final newline)."""
        if self._pending:
            self.feed(b"\r\n" if self._statement_end == b";\r\n" else b"\n")

    @staticmethod
    def _detect_statement_end(data: bytes) -> bytes | None:
        newline = data.find(b"\n")
        if newline == -1:
            return None
        return b";\r\n" if data[newline - 1 : newline] == b"\r" else b";\n"

    def _consume(self, data: bytes) -> int:
        position = 0
        while True:
            if self._insert_key is not None:
                next_position, finished = self._consume_values(data, position)
                position = next_position
                if not finished:
                    return position
                continue
            newline = data.find(b"\n", position)
            if newline == -1:
                return self._enter_long_insert(data, position)
            position = self._read_line(data, position, newline)

    def _enter_long_insert(self, data: bytes, start: int) -> int:
        """Start counting a line with no newline yet if it is a long INSERT, so it is not held whole."""
        if len(data) - start < LONG_LINE or data[start : start + 1] not in (b"I", b"i", b"R", b"r"):
            return start
        match = _INSERT_HEADER.match(data, start)
        if match is None:
            return start
        self._insert_key = self._table_key(match["first"], match["second"])
        self._expected.setdefault(self._insert_key, 0)
        return self._consume_values(data, match.end())[0]

    def _consume_values(self, data: bytes, start: int) -> tuple[int, bool]:
        """Count rows from `start`; return where to continue and whether the INSERT statement ended."""
        end_marker = self._statement_end or b";\n"
        end = data.find(end_marker, start)
        while end != -1:
            rows = count_tuples(data[start:end])
            if rows is not None:
                self._add_rows(rows)
                self._insert_key = None
                return end + len(end_marker), True
            end = data.find(end_marker, end + 1)  # that `;` and newline were inside a string
        # No statement end yet: count up to the last row boundary we have (a newline, or `),(` inside a
        # long one-line INSERT) and keep the rest, so memory stays bounded whatever the line length.
        cut = max(data.rfind(b"\n", start) + 1, data.rfind(b"),(", start) + 2)
        if cut <= start + 1:
            return start, False
        rows = count_tuples(data[start:cut])
        if rows is None:
            return start, False  # the cut is inside a string; wait for more data
        self._add_rows(rows)
        return cut, False

    def _add_rows(self, rows: int) -> None:
        assert self._insert_key is not None
        self._expected[self._insert_key] = self._expected.get(self._insert_key, 0) + rows
        self._rows_seen += rows

    def _read_line(self, data: bytes, start: int, newline: int) -> int:
        """Handle one statement-level line; return where to continue."""
        end = newline - 1 if data[newline - 1 : newline] == b"\r" else newline
        first = data[start : start + 1]
        if self._in_delimiter_block:
            match = _DELIMITER.match(data, start, end)
            if match and match["delimiter"] == b";":
                self._in_delimiter_block = False
        elif first in b"IiRr" and first:
            match = _INSERT_HEADER.match(data, start, end)
            if match:
                self._insert_key = self._table_key(match["first"], match["second"])
                self._expected.setdefault(self._insert_key, 0)
                return self._consume_single_row_run(data, start, match.end()) or match.end()
        elif first in b"Cc" and first:
            self._read_create(data, start, end)
        elif first in b"Uu" and first:
            match = _USE.match(data, start, end)
            if match:
                self._has_use = True
                self._use_database(_identifier(match["name"]))
        elif first in b"Dd" and first:
            match = _DELIMITER.match(data, start, end)
            self._in_delimiter_block = bool(match and match["delimiter"] != b";")
        elif first == b"-" and data.startswith(_DUMP_COMPLETED, start):
            self._dump_completed = True
        return newline + 1

    def _consume_single_row_run(self, data: bytes, start: int, values_start: int) -> int | None:
        """Count a run of one-line INSERTs into the same table at once; None when there is no such run.

        With --skip-extended-insert every row is its own `INSERT INTO `t` VALUES (...);` line; parsing
        each line in Python would cost ~4 microseconds a row, so the run is found with one regex search
        (lines starting with the same header) and counted like the values of a single statement.
        """
        if start < self._no_run_before:
            return None  # already tried from an earlier line of this run; do not rescan (quadratic)
        header = data[start:values_start]
        if b"(" in header or b"'" in header or b"\\" in header:
            return None  # the header itself would be counted; rare enough to take the slow path
        last_newline = data.rfind(b"\n") + 1  # the search sees end-of-data there, so the run stops
        run_end = self._end_of_run(header).search(data, start, last_newline)
        if run_end is None or run_end.start() == data.find(b"\n", start):
            return None
        newline = run_end.start()
        rows = None
        if data[newline - 2 : newline].rstrip(b"\r")[-1:] == b";":  # else the run ends mid-statement
            rows = count_tuples(data[start:newline])
        if rows is None:
            self._no_run_before = newline
            return None
        self._add_rows(rows)
        self._insert_key = None
        return newline + 1

    def _end_of_run(self, header: bytes) -> re.Pattern[bytes]:
        pattern = self._run_patterns.get(header)
        if pattern is None:
            pattern = re.compile(rb"\n(?!" + re.escape(header) + rb")")
            self._run_patterns[header] = pattern
        return pattern

    def _read_create(self, data: bytes, start: int, end: int) -> None:
        table = _CREATE_TABLE.match(data, start, end)
        if table:
            self._expected.setdefault(self._table_key(table["first"], table["second"]), 0)
            return
        database = _CREATE_DATABASE.match(data, start, end)
        if database:
            self._note_database(_identifier(database["name"]))

    def _table_key(self, first: bytes, second: bytes | None) -> TableKey:
        if second is not None:
            database = _identifier(first)
            self._note_database(database)
            return database, _identifier(second)
        if self._database is not None:
            self._note_database(self._database)
        return self._database, _identifier(first)

    def _use_database(self, name: str) -> None:
        self._database = name
        self._note_database(name)

    def _note_database(self, name: str) -> None:
        if name not in self._databases:
            self._databases.append(name)
