"""Delimited data (what SELECT ... INTO OUTFILE, mysqldump --tab, mydumper --load-data and MySQL Shell write):
the LOAD DATA clause for a dialect, and rows and safe cut points in the default dialect.

In the default dialect (fields ended by tab, no enclosure, `\\` escapes, lines ended by newline) a newline in
a value is written escaped (`\\` then the newline), so a row ends at every newline not preceded by an odd
run of backslashes: a stream can be cut there into chunks that load independently.
"""

from __future__ import annotations

import itertools
import os
import re
from dataclasses import dataclass
from typing import BinaryIO

_ESCAPED_NEWLINE = re.compile(rb"(?<!\\)(?:\\\\)*\\\n")


@dataclass(frozen=True)
class Dialect:
    fields_terminated_by: str = "\t"
    fields_enclosed_by: str = ""
    optionally_enclosed: bool = False
    fields_escaped_by: str = "\\"
    lines_starting_by: str = ""
    lines_terminated_by: str = "\n"

    @property
    def splittable(self) -> bool:
        """Whether rows can be counted and the data cut at row ends without parsing values."""
        return (
            self.fields_enclosed_by == ""
            and self.fields_escaped_by == "\\"
            and self.lines_terminated_by == "\n"
            and self.lines_starting_by == ""
        )

    def clause(self) -> str:
        enclosed = "OPTIONALLY ENCLOSED" if self.optionally_enclosed else "ENCLOSED"
        return (
            f"FIELDS TERMINATED BY {sql_string(self.fields_terminated_by)} "
            f"{enclosed} BY {sql_string(self.fields_enclosed_by)} "
            f"ESCAPED BY {sql_string(self.fields_escaped_by)} "
            f"LINES STARTING BY {sql_string(self.lines_starting_by)} "
            f"TERMINATED BY {sql_string(self.lines_terminated_by)}"
        )


DEFAULT_DIALECT = Dialect()


def sql_string(value: str) -> str:
    escaped = (
        value.replace("\\", "\\\\")
        .replace("'", "\\'")
        .replace("\n", "\\n")
        .replace("\r", "\\r")
        .replace("\t", "\\t")
        .replace("\0", "\\0")
    )
    return f"'{escaped}'"


def count_rows(data: bytes) -> int:
    """Rows in default-dialect data: newlines that are not escaped."""
    rows = data.count(b"\n")
    if b"\\\n" in data:
        rows -= len(_ESCAPED_NEWLINE.findall(data))
    return rows


def row_end_at_or_after(data: bytes, position: int) -> int | None:
    """The position just after the first row end at or after `position`, or None if there is none yet."""
    while True:
        newline = data.find(b"\n", position)
        if newline == -1:
            return None
        backslashes = 0
        while newline - backslashes - 1 >= 0 and data[newline - backslashes - 1] == 0x5C:
            backslashes += 1
        if backslashes % 2 == 0:
            return newline + 1
        position = newline + 1


def trailing_backslashes(block: bytes) -> int:
    return len(block) - len(block.rstrip(b"\\"))


def count_rows_in_blocks(blocks: list[bytes]) -> int:
    """count_rows of the blocks joined, without joining them (an escaped newline may straddle two blocks)."""
    rows = sum(count_rows(block) for block in blocks)
    for before, after in itertools.pairwise(blocks):
        # An odd run of backslashes ending `before` flips whether a newline right after the backslashes that
        # start `after` is escaped; nothing else in `after` depends on `before`.
        if trailing_backslashes(before) % 2 == 0:
            continue
        lead = len(after) - len(after.lstrip(b"\\"))
        if after[lead : lead + 1] == b"\n":
            rows += 1 if lead % 2 == 1 else -1
    return rows


def row_end_in_blocks(blocks: list[bytes], index: int, position: int) -> int | None:
    """Like row_end_at_or_after in blocks[index], also looking at the backslashes that end the block before."""
    block = blocks[index]
    while True:
        newline = block.find(b"\n", position)
        if newline == -1:
            return None
        backslashes = newline - len(block[:newline].rstrip(b"\\"))
        if backslashes == newline and index > 0:
            backslashes += trailing_backslashes(blocks[index - 1])
        if backslashes % 2 == 0:
            return newline + 1
        position = newline + 1


def row_cuts(file: BinaryIO, size: int, chunk_size: int) -> list[int]:
    """Where a plain default-dialect file is cut into chunks, found by reading only around each cut: 0, then
    just after the first row end at or after `chunk_size - 1` bytes past the cut before, ..., then `size`.
    These are the cuts the streaming cutter makes, so a resume finds the same chunks under the same names."""
    cuts = [0]
    while cuts[-1] < size:
        target = cuts[-1] + chunk_size - 1
        end = _row_end_in_file(file, size, target, cuts[-1]) if target < size else None
        cuts.append(size if end is None else end)
    return cuts


def _row_end_in_file(file: BinaryIO, size: int, position: int, floor: int) -> int | None:
    """row_end_at_or_after for a file, reading a window around `position` (no further back than `floor`, a
    row start), grown while a newline's run of backslashes reaches the window's start or no row ends in it."""
    back, ahead = 4096, 1 << 20
    while True:
        start = max(floor, position - back)
        stop = min(size, position + ahead)
        data = os.pread(file.fileno(), stop - start, start)
        end = row_end_at_or_after(data, position - start)
        if end is not None:
            newline = end - 1
            run_start = len(data[:newline].rstrip(b"\\"))
            if run_start > 0 or start == floor:
                return start + end
            back *= 16
            continue
        if stop == size:
            return None
        ahead *= 16
