"""mysqldump --tab directories: table.sql (DROP and CREATE TABLE, then its triggers) next to table.txt (the
rows, as SELECT ... INTO OUTFILE writes them: each column's own bytes, CHARACTER SET binary, unless the
dump was made with --default-character-set); a view has only view.sql. mysqldump writes routines and
events to its standard output, not into the directory: other .sql files found there (a DBA's routines
file) run after the data."""

from __future__ import annotations

from pathlib import Path

from worker.runners.loader.delimited import DEFAULT_DIALECT
from worker.runners.loader.layouts.common import read_text, without_compression
from worker.runners.loader.plan import DataFile, DataKind, DumpPlan, IncompleteDumpError, Script, TablePlan
from worker.runners.loader.sql_script import ScriptError, split_script
from worker.runners.loader.statements import Action, classify, quote_name


def is_tab(names: set[str]) -> bool:
    stems = {without_compression(n)[:-4] for n in names if without_compression(n).endswith(".sql")}
    return any(without_compression(n).endswith(".txt") and without_compression(n)[:-4] in stems for n in names)


def read_tab(directory: Path, database: str) -> DumpPlan:
    plan = DumpPlan("mysqldump-tab", directory)
    # mysqldump dumps with --tz-utc: TIMESTAMP values in the .txt files are in UTC.
    plan.session = {"time_zone": "+00:00", "sql_mode": "NO_AUTO_VALUE_ON_ZERO"}
    plan.before.append(Script("(database)", f"CREATE DATABASE IF NOT EXISTS {quote_name(database)}".encode()))
    files = {without_compression(p.name): p for p in directory.iterdir() if p.is_file()}
    data = {name[:-4]: path for name, path in files.items() if name.endswith(".txt")}
    scripts = {name[:-4]: path for name, path in files.items() if name.endswith(".sql")}
    for stem in sorted(set(data) - set(scripts)):
        raise IncompleteDumpError(
            f"{data[stem].name} has no {stem}.sql next to it: the table's definition is missing from {directory}; "
            "copy the whole dump directory again"
        )
    for stem in sorted(scripts):
        path = scripts[stem]
        text = read_text(path)
        creates = _created(text, path.name)
        if stem in data:
            rows = data[stem]
            name = creates.get("TABLE", stem)
            table = TablePlan(database, name, [Script(path.name, text, database)])
            table.data.append(
                DataFile(rows, DataKind.DELIMITED, rows.stat().st_size, DEFAULT_DIALECT, "binary", splittable=True)
            )
            plan.tables.append(table)
        elif "TABLE" in creates:
            raise IncompleteDumpError(
                f"{path.name} creates table `{creates['TABLE']}` but its data file {stem}.txt is missing; "
                "copy the whole dump directory again"
            )
        elif "VIEW" in creates:
            plan.views.append(Script(path.name, text, database))
        else:
            plan.routines.append(Script(path.name, text, database))
    return plan


def _created(text: bytes, name: str) -> dict[str, str]:
    """What the script creates: {"TABLE": name} and/or {"VIEW": name}."""
    try:
        statements = split_script(text)
    except ScriptError as error:
        raise IncompleteDumpError(f"{name}: {error}") from error
    created: dict[str, str] = {}
    for statement in statements:
        classified = classify(statement.text)
        if classified.action is Action.CREATE_TABLE and classified.name:
            created.setdefault("TABLE", classified.name)
        elif classified.action is Action.POST_DATA and classified.what == "VIEW" and classified.name:
            created.setdefault("VIEW", classified.name)
    return created
