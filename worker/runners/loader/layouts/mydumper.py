"""mydumper directories, in the layout of 0.10 (Debian's, made with the real tool in the tests) and of 0.14+/1.x
(written by a test helper following mydumper's source, since only 0.10 installs here).

Both layouts:
    db-schema-create.sql            CREATE DATABASE
    db.table-schema.sql             CREATE TABLE (for a view: a placeholder table)
    db.table-schema-view.sql        the view, replacing its placeholder
    db.table-schema-triggers.sql    the table's triggers
    db-schema-post.sql              routines and events
    any of them may end in .gz (0.10 --compress, 1.x) or .zst (1.x)
0.10:
    metadata                        "Started dump at: ..." ... "Finished dump at: ..." (metadata.partial while running)
    db.table.sql or db.table.00000.sql, .00001.sql, ...   INSERT statements (numbered when --rows chunks them)
0.14+/1.x:
    metadata                        INI: [config], [myloader_session_variables], [`db`.`table`] real_table_name, rows
    db.table.00000.sql[.zst]        INSERT statements, or with --load-data a LOAD DATA LOCAL INFILE statement
    db.table.00000.dat[.zst]        that reads these rows; a fifth number (db.table.00000.00001.sql) splits a part
"""

from __future__ import annotations

import configparser
import re
from dataclasses import dataclass, field
from pathlib import Path

from worker.runners.loader.layouts.common import read_text, without_compression
from worker.runners.loader.plan import (
    DataFile,
    DataKind,
    DumpPlan,
    IncompleteDumpError,
    LayoutError,
    Script,
    TablePlan,
)
from worker.runners.loader.session import CAPTURED_VARIABLES

_SCHEMA_CREATE = re.compile(r"^(?P<db>[^.]+)-schema-create\.sql$")
_SCHEMA_POST = re.compile(r"^(?P<db>[^.]+)-schema-post\.sql$")
_TABLE_SCHEMA = re.compile(r"^(?P<db>[^.]+)\.(?P<table>.+)-schema(?P<kind>-view|-triggers|-sequence)?\.sql$")
_DATA = re.compile(r"^(?P<db>[^.]+)\.(?P<table>.+?)(?:\.(?P<part>\d{5,}))?(?:\.(?P<sub>\d{5,}))?\.(?P<ext>sql|dat)$")
_SESSION_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def is_mydumper(names: set[str]) -> bool:
    return "metadata" in names or "metadata.partial" in names


@dataclass
class _Table:
    database: str
    filename: str
    schema: Path | None = None
    view: Path | None = None
    triggers: Path | None = None
    data: dict[tuple[int, int], Path] = field(default_factory=dict)  # (part, sub part) -> .sql
    rows_files: dict[tuple[int, int], Path] = field(default_factory=dict)  # (part, sub part) -> .dat
    unnumbered: Path | None = None  # 0.10's db.table.sql


def read_mydumper(directory: Path) -> DumpPlan:
    names = {p.name for p in directory.iterdir()}
    if "metadata" not in names:
        raise IncompleteDumpError(
            f"{directory.name} is an unfinished mydumper dump (metadata.partial, no metadata): mydumper was "
            "stopped or is still running; wait for it to finish or dump again"
        )
    metadata_text = (directory / "metadata").read_text(errors="replace")
    modern = _is_ini(metadata_text)
    plan = DumpPlan("mydumper", directory)
    plan.session = {"time_zone": "+00:00"}
    sections = _read_ini(metadata_text) if modern else None
    if sections is not None:
        plan.session.update(_session_variables(sections))
    elif "Finished dump at" not in metadata_text:
        raise IncompleteDumpError(
            f"{directory.name}/metadata has no 'Finished dump at' line: mydumper did not finish this dump; dump again"
        )
    databases, posts, tables = _scan(directory)
    real_names = _real_names(sections) if sections is not None else {}
    expected_rows = _expected_rows(sections) if sections is not None else {}
    for database in sorted(databases):
        plan.before.append(Script(databases[database].name, read_text(databases[database])))
    for key in sorted(tables):
        found = tables[key]
        name = real_names.get(key, found.filename)
        if found.schema is None:
            if found.data or found.unnumbered:
                raise IncompleteDumpError(
                    f"the data of `{found.database}`.`{name}` has no {found.database}.{found.filename}-schema.sql: "
                    "the table's definition is missing; copy the whole dump directory again"
                )
            continue
        ddl = Script(found.schema.name, read_text(found.schema), found.database)
        if found.view is not None:
            plan.before.append(ddl)  # the placeholder table other views may refer to
            plan.views.append(Script(found.view.name, read_text(found.view), found.database))
            continue
        table = TablePlan(found.database, name, [ddl], expected_rows=expected_rows.get(key))
        table.data = _data_files(found, name, modern, plan)
        plan.tables.append(table)
        if found.triggers is not None:
            plan.triggers.append(Script(found.triggers.name, read_text(found.triggers), found.database))
    for database in sorted(posts):
        plan.routines.append(Script(posts[database].name, read_text(posts[database]), database))
    if not plan.tables and not plan.views:
        raise LayoutError(f"{directory.name} has a mydumper metadata file but no table files")
    return plan


def _scan(directory: Path) -> tuple[dict[str, Path], dict[str, Path], dict[tuple[str, str], _Table]]:
    databases: dict[str, Path] = {}
    posts: dict[str, Path] = {}
    tables: dict[tuple[str, str], _Table] = {}

    def table(database: str, filename: str) -> _Table:
        return tables.setdefault((database, filename), _Table(database, filename))

    for path in sorted(directory.iterdir()):
        name = without_compression(path.name)
        if match := _SCHEMA_CREATE.match(name):
            databases[match["db"]] = path
        elif match := _SCHEMA_POST.match(name):
            posts[match["db"]] = path
        elif match := _TABLE_SCHEMA.match(name):
            found = table(match["db"], match["table"])
            kind = match["kind"]
            if kind == "-view":
                found.view = path
            elif kind == "-triggers":
                found.triggers = path
            elif kind is None:
                found.schema = path
        elif match := _DATA.match(name):
            found = table(match["db"], match["table"])
            if match["part"] is None:
                if match["ext"] == "sql":
                    found.unnumbered = path
                continue
            number = (int(match["part"]), int(match["sub"] or 0))
            (found.data if match["ext"] == "sql" else found.rows_files)[number] = path
    return databases, posts, tables


def _data_files(found: _Table, name: str, modern: bool, plan: DumpPlan) -> list[DataFile]:
    where = f"`{found.database}`.`{name}`"
    for number, rows in sorted(found.rows_files.items()):
        if number not in found.data:
            raise IncompleteDumpError(
                f"{rows.name} has no .sql next to it (the LOAD DATA statement that reads it): a file of {where} "
                "is missing; copy the whole dump directory again"
            )
    parts = sorted({part for part, _ in found.data})
    if parts and not modern and parts != list(range(parts[0], parts[0] + len(parts))):
        missing = sorted(set(range(parts[0], parts[-1] + 1)) - set(parts))
        raise IncompleteDumpError(
            f"chunk {missing[0]:05d} of {where} is missing ({found.database}.{found.filename}.{missing[0]:05d}.sql): "
            "the dump is incomplete; copy the whole dump directory again"
        )
    if parts and modern and parts[0] != 0:
        plan.warnings.append(f"the chunks of {where} start at {parts[0]:05d}, not 00000: check that none is missing")
    files: list[DataFile] = []
    if found.unnumbered is not None:
        files.append(DataFile(found.unnumbered, DataKind.SQL, found.unnumbered.stat().st_size))
    for number, path in sorted(found.data.items()):
        rows_file = found.rows_files.get(number)
        kind = DataKind.SQL_WITH_LOAD if rows_file is not None else DataKind.SQL
        files.append(DataFile(path, kind, path.stat().st_size, rows_file=rows_file))
    return files


def _is_ini(text: str) -> bool:
    return any(line.startswith("[") and line.rstrip().endswith("]") for line in text.splitlines())


def _read_ini(text: str) -> configparser.RawConfigParser:
    parser = configparser.RawConfigParser(strict=False, allow_no_value=True, comment_prefixes=("#", ";"))
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    try:
        parser.read_string(text)
    except configparser.Error as error:
        raise LayoutError(f"the mydumper metadata file cannot be read: {error}") from error
    return parser


def _section_key(section: str) -> tuple[str, str] | None:
    """`db`.`table` -> (db, table)."""
    match = re.fullmatch(r"`((?:[^`]|``)+)`\.`((?:[^`]|``)+)`", section.strip())
    if match is None:
        return None
    return match[1].replace("``", "`"), match[2].replace("``", "`")


def _real_names(sections: configparser.RawConfigParser) -> dict[tuple[str, str], str]:
    names = {}
    for section in sections.sections():
        key = _section_key(section)
        if key is not None and sections.has_option(section, "real_table_name"):
            names[key] = str(sections.get(section, "real_table_name"))
    return names


def _expected_rows(sections: configparser.RawConfigParser) -> dict[tuple[str, str], int]:
    rows = {}
    for section in sections.sections():
        key = _section_key(section)
        if key is not None and sections.has_option(section, "rows"):
            value = str(sections.get(section, "rows")).strip()
            if value.isdigit():
                rows[key] = int(value)
    return rows


def _session_variables(sections: configparser.RawConfigParser) -> dict[str, str]:
    """[myloader_session_variables]: SQL_MODE='...' /*!40101 and friends, as myloader sets them."""
    if not sections.has_section("myloader_session_variables"):
        return {}
    variables = {}
    for name, raw in sections.items("myloader_session_variables"):
        if not _SESSION_NAME.match(name) or raw is None:
            continue
        value = raw.split("/*", 1)[0].strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        if name.lower() in CAPTURED_VARIABLES:  # the loader manages the others (foreign_key_checks ...)
            variables[name.lower()] = value
    return variables
