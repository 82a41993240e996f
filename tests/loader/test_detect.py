"""Format detection of dump directories, on dumps made by the real tools and by the layout helpers."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.backups.detect import detect_directory, detect_file, is_restorable
from tests.loader.conftest import Dumps, copy_dump

pytestmark = pytest.mark.integration  # the dumps come from a real server


@pytest.mark.parametrize(
    ("dump", "format_name", "expected"),
    [
        ("tab", "mysqldump-tab", {"tables": 7, "has_use_statements": False, "restorable": True}),
        ("mydumper_010", "mydumper", {"layout": "0.10", "databases": ["shop"], "restorable": True}),
        ("mydumper_1x", "mydumper", {"layout": "0.14+", "load_data": False, "restorable": True}),
        ("mydumper_1x_load_data", "mydumper", {"layout": "0.14+", "load_data": True, "restorable": True}),
        ("mysqlsh", "mysqlsh", {"complete": True, "schemas": ["shop"], "restorable": True}),
    ],
)
def test_directories(dump: str, format_name: str, expected: dict[str, object], dumps: Dumps) -> None:
    found = detect_directory(getattr(dumps, dump))
    assert found is not None
    assert found.format == format_name
    assert {key: found.details[key] for key in expected} == expected
    assert is_restorable(found.format, found.details)


def test_files(dumps: Dumps) -> None:
    for path, compression in ((dumps.sql, None), (dumps.sql_zst, "zstd")):
        found = detect_file(path)
        assert found is not None and (found.format, found.compression) == ("mysqldump", compression)
        assert is_restorable(found.format, found.details)


def test_unfinished_dumps_are_marked_not_restorable(dumps: Dumps, tmp_path: Path) -> None:
    shell = copy_dump(dumps.mysqlsh, tmp_path)
    (shell / "@.done.json").unlink()
    mydumper = copy_dump(dumps.mydumper_010, tmp_path)
    (mydumper / "metadata").rename(mydumper / "metadata.partial")

    for path, problem in (
        (shell, "@.done.json is missing: the dump is unfinished (interrupted, or still running)"),
        (mydumper, "metadata.partial without metadata: mydumper did not finish this dump"),
    ):
        found = detect_directory(path)
        assert found is not None
        assert found.details["problems"] == [problem]
        assert not is_restorable(found.format, found.details)
