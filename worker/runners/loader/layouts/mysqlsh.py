"""MySQL Shell dump directories (util.dumpInstance / dumpSchemas / dumpTables), read as MySQL Shell's own
loader reads them. MySQL Shell cannot be installed here: the tests write this layout with a helper that
follows the Shell's source (modules/util/dump/dumper.cc and dump_utils.cc).

    @.json                       dumper version, schemas and their file basenames, defaultCharacterSet, tzUtc
    @.sql, @.post.sql            run first and last; @.users.sql (accounts) is not loaded
    @.done.json                  written last: without it the dump is unfinished. chunkFileBytes gives the
                                 uncompressed size of every data file
    s.json, s.sql                the schema's objects, and its DDL (CREATE DATABASE, routines, events)
    s@t.json, s@t.sql            table options (columns, dialect, compression) and CREATE TABLE
    s@t.triggers.sql             the table's triggers
    s@v.pre.sql, s@v.sql         a view's placeholder and the view
    s@t@0.tsv.zst .. s@t@@7.tsv.zst   data chunks; the last one is marked by @@. Unchunked: s@t.tsv.zst
Names are file-safe: ASCII outside [A-Za-z0-9_ -] (and a few more) is written as %XX; @.json and s.json
map every name to its basename.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from worker.runners.loader.delimited import Dialect
from worker.runners.loader.layouts.common import read_text
from worker.runners.loader.plan import DataFile, DataKind, DumpPlan, IncompleteDumpError, LayoutError, Script, TablePlan

_DECODERS = frozenset({"UNHEX", "FROM_BASE64"})


def is_mysqlsh(names: set[str]) -> bool:
    return "@.json" in names


def encode_name(name: str) -> str:
    """MySQL Shell's basename encoding: reserved ASCII bytes become %XX, other characters stay."""
    out = []
    for character in name:
        code = ord(character)
        if code < 128 and not _shell_keeps(character):
            out.append(f"%{code:02X}")
        else:
            out.append(character)
    return "".join(out)


def _shell_keeps(character: str) -> bool:
    # dump_utils.cc k_reserved_chars: letters, digits, '-', '.', '_', '~' are kept; everything else is encoded.
    return character.isascii() and (character.isalnum() or character in "-._~")


def read_mysqlsh(directory: Path) -> DumpPlan:
    top = _json(directory / "@.json")
    if not (directory / "@.done.json").exists():
        raise IncompleteDumpError(
            f"{directory.name} is an unfinished MySQL Shell dump: @.done.json is missing (the Shell writes it "
            "last), so the dump was interrupted or is still running; wait for it to finish or dump again"
        )
    done = _json(directory / "@.done.json")
    chunk_bytes: dict[str, int] = {str(k): int(v) for k, v in (done.get("chunkFileBytes") or {}).items()}
    plan = DumpPlan("mysqlsh", directory)
    if top.get("tzUtc", True):
        plan.session["time_zone"] = "+00:00"
    charset = str(top.get("defaultCharacterSet") or "utf8mb4")
    for name, phase in (("@.sql", plan.before), ("@.post.sql", plan.after)):
        if (directory / name).exists():
            phase.append(Script(name, read_text(directory / name)))
    if (directory / "@.users.sql").exists():
        plan.warnings.append("the dump's user accounts (@.users.sql) are not loaded")
    basenames: dict[str, str] = top.get("basenames") or {}
    listed = set()
    for schema in top.get("schemas") or []:
        base = basenames.get(schema) or encode_name(schema)
        listed |= _read_schema(directory, plan, str(schema), base, charset, chunk_bytes)
    missing = sorted(name for name in chunk_bytes if not (directory / name).exists())
    if missing:
        raise IncompleteDumpError(
            f"{len(missing)} data file(s) listed in @.done.json are missing, first {missing[0]}: the dump was "
            "copied incompletely; copy it again"
        )
    return plan


def _read_schema(
    directory: Path, plan: DumpPlan, schema: str, base: str, charset: str, chunk_bytes: dict[str, int]
) -> set[str]:
    meta = _json(directory / f"{base}.json")
    if (directory / f"{base}.sql").exists():
        # CREATE DATABASE, then routines and events: the loader keeps those for after the data.
        plan.before.append(Script(f"{base}.sql", read_text(directory / f"{base}.sql")))
    names: dict[str, str] = meta.get("basenames") or {}
    files: set[str] = set()
    for table in meta.get("tables") or []:
        table_base = names.get(table) or f"{base}@{encode_name(table)}"
        plan.tables.append(_read_table(directory, plan, schema, str(table), table_base, charset, chunk_bytes))
        files.add(table_base)
    for view in meta.get("views") or []:
        view_base = names.get(view) or f"{base}@{encode_name(view)}"
        if (directory / f"{view_base}.pre.sql").exists():
            plan.before.append(Script(f"{view_base}.pre.sql", read_text(directory / f"{view_base}.pre.sql"), schema))
        if not (directory / f"{view_base}.sql").exists():
            raise IncompleteDumpError(f"{view_base}.sql (view `{schema}`.`{view}`) is missing; copy the dump again")
        plan.views.append(Script(f"{view_base}.sql", read_text(directory / f"{view_base}.sql"), schema))
    return files


def _read_table(
    directory: Path, plan: DumpPlan, schema: str, name: str, base: str, charset: str, chunk_bytes: dict[str, int]
) -> TablePlan:
    meta = _json(directory / f"{base}.json")
    ddl_path = directory / f"{base}.sql"
    if not ddl_path.exists():
        raise IncompleteDumpError(f"{ddl_path.name} (table `{schema}`.`{name}`) is missing; copy the dump again")
    table = TablePlan(schema, name, [Script(ddl_path.name, read_text(ddl_path), schema)])
    triggers = directory / f"{base}.triggers.sql"
    if triggers.exists():
        plan.triggers.append(Script(triggers.name, read_text(triggers), schema))
    if meta.get("includesData", True) is False:
        return table
    options: dict[str, Any] = meta.get("options") or {}
    extension = str(meta.get("extension") or "tsv.zst")
    partitions: list[str] = meta.get("partitions") or []
    if partitions:
        plan.warnings.append(f"`{schema}`.`{name}` is dumped by partition: untested layout, loaded file by file")
    bases = [str((meta.get("basenames") or {}).get(p) or f"{base}@{encode_name(p)}") for p in partitions] or [base]
    dialect = Dialect(
        fields_terminated_by=str(options.get("fieldsTerminatedBy", "\t")),
        fields_enclosed_by=str(options.get("fieldsEnclosedBy", "")),
        optionally_enclosed=bool(options.get("fieldsOptionallyEnclosed", False)),
        fields_escaped_by=str(options.get("fieldsEscapedBy", "\\")),
        lines_terminated_by=str(options.get("linesTerminatedBy", "\n")),
    )
    decode = options.get("decodeColumns") or {}
    if any(str(function).upper() not in _DECODERS for function in decode.values()):
        raise LayoutError(f"{base}.json asks to decode columns with {decode}: only UNHEX and FROM_BASE64 are known")
    columns = tuple(str(c) for c in options.get("columns") or ()) or None
    for data_base in bases:
        for path in _chunk_files(directory, data_base, extension, bool(meta.get("chunking", True))):
            table.data.append(
                DataFile(
                    path,
                    DataKind.DELIMITED,
                    path.stat().st_size,
                    dialect,
                    str(options.get("defaultCharacterSet") or charset),
                    columns,
                    tuple((str(c), str(f).upper()) for c, f in decode.items()),
                    expected_bytes=chunk_bytes.get(path.name),
                    splittable=dialect.splittable,
                )
            )
    return table


def _chunk_files(directory: Path, base: str, extension: str, chunking: bool) -> list[Path]:
    whole = directory / f"{base}.{extension}"
    numbered = re.compile(re.escape(base) + r"@(@?)(\d+)\." + re.escape(extension) + "$")
    found: dict[int, tuple[bool, Path]] = {}
    for path in directory.iterdir():
        match = numbered.match(path.name)
        if match:
            found[int(match[2])] = (bool(match[1]), path)
    if not found:
        if whole.exists():
            return [whole]
        if chunking:
            raise IncompleteDumpError(
                f"no data file of {base} ({base}@0.{extension} ... {base}@@N.{extension}): the dump is "
                "incomplete; copy it again"
            )
        return []
    last = [number for number, (is_last, _) in found.items() if is_last]
    if len(last) != 1:
        raise IncompleteDumpError(
            f"the last data chunk of {base} (named {base}@@N.{extension}) is missing: the dump is incomplete; "
            "copy it again"
        )
    expected = set(range(last[0] + 1))
    if set(found) != expected:
        gap = sorted(expected - set(found)) or sorted(set(found) - expected)
        raise IncompleteDumpError(
            f"data chunk {base}@{gap[0]}.{extension} is missing (the chunks go up to {base}@@{last[0]}): "
            "the dump is incomplete; copy it again"
        )
    return [found[number][1] for number in sorted(found)]


def _json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text())
    except FileNotFoundError as error:
        raise IncompleteDumpError(f"{path.name} is missing from the MySQL Shell dump; copy the dump again") from error
    except (OSError, ValueError) as error:
        raise LayoutError(f"{path.name} cannot be read as JSON ({error}); the dump is damaged") from error
    if not isinstance(value, dict):
        raise LayoutError(f"{path.name} is not a JSON object; the dump is damaged")
    return value
