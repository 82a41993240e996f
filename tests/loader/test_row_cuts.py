"""Cutting a plain --tab file into chunks before loading it: the cuts must be the ones the streaming cutter
makes from the whole file (a resume finds its chunks by name), and every row must land in exactly one chunk,
including rows with escaped newlines behind long runs of backslashes and rows longer than the read window."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest

from worker.runners.loader import delimited


def _rows(count: int) -> bytes:
    chooser = random.Random(7)
    rows = []
    for number in range(count):
        value = "".join(chooser.choice("ab\\\n\t") for _ in range(chooser.randint(0, 30)))
        if number == 700:
            value = "\\" * 9001 + "\n" + "x" * 3_000_000  # beyond the 4 KiB looked back and the 1 MiB ahead
        escaped = value.replace("\\", "\\\\").replace("\n", "\\\n")
        rows.append(f"{number}\t{escaped}\n")
    return "".join(rows).encode()


def _streaming_cuts(data: bytes, chunk_size: int) -> list[int]:
    cuts = [0]
    while cuts[-1] < len(data):
        target = cuts[-1] + chunk_size - 1
        end = delimited.row_end_at_or_after(data, target) if target < len(data) else None
        cuts.append(len(data) if end is None else end)
    return cuts


@pytest.mark.parametrize("chunk_size", [7, 4096, 50_000, 10_000_000])
def test_cuts_are_the_streaming_cutters_and_keep_every_row_whole(tmp_path: Path, chunk_size: int) -> None:
    data = _rows(3000)
    path = tmp_path / "t.txt"
    path.write_bytes(data)

    with path.open("rb") as file:
        cuts = delimited.row_cuts(file, len(data), chunk_size)

    assert cuts == _streaming_cuts(data, chunk_size)
    assert sum(delimited.count_rows(data[start:end]) for start, end in itertools.pairwise(cuts)) == 3000
