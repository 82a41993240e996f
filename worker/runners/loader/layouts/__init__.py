"""Readers of dump directories into a DumpPlan: mysqldump --tab, mydumper (0.10 and 0.14+/1.x), MySQL Shell."""

from __future__ import annotations

from pathlib import Path

from worker.runners.loader.layouts.mydumper import is_mydumper, read_mydumper
from worker.runners.loader.layouts.mysqlsh import is_mysqlsh, read_mysqlsh
from worker.runners.loader.layouts.tab import is_tab, read_tab
from worker.runners.loader.plan import DumpPlan, LayoutError


def read_layout(directory: Path, database: str | None = None) -> DumpPlan:
    """The plan of the dump in `directory`; LayoutError (with what to do) when it cannot be restored."""
    if not directory.is_dir():
        raise LayoutError(f"{directory} is not a directory")
    names = {child.name for child in directory.iterdir()}
    if is_mysqlsh(names):
        return read_mysqlsh(directory)
    if is_mydumper(names):
        return read_mydumper(directory)
    if is_tab(names):
        if not database:
            raise LayoutError(
                f"{directory.name} is a mysqldump --tab directory, which does not name its database: "
                "choose the database to restore into"
            )
        return read_tab(directory, database)
    raise LayoutError(
        f"{directory} holds no dump restorescope knows: expected a mysqldump --tab directory (table.sql with "
        "table.txt), a mydumper directory (with its metadata file) or a MySQL Shell dump (with @.json)"
    )
