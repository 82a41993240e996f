"""Writers of the dump layouts that cannot be made with the real tools here (only mydumper 0.10 installs):
mydumper 0.14+/1.x and MySQL Shell. They follow the tools' published sources (mydumper src/mydumper_*.c,
MySQL Shell modules/util/dump/dumper.cc and dump_utils.cc) and take the rows from a real mysqldump --tab
directory, whose .txt files are in the same default dialect both tools write (tab, \\N, backslash escapes).

Deliberately independent of the loader's own readers: the encodings are written out here again.
"""

from __future__ import annotations

import gzip
import json
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pymysql
import zstandard

_STATEMENT_END = re.compile(rb";\s*$")


@dataclass
class TabTable:
    name: str
    create: str  # CREATE TABLE as SHOW CREATE TABLE writes it
    columns: list[str]
    rows: bytes  # default-dialect rows


@dataclass
class Objects:
    """What --tab leaves out or keeps with the tables, taken from the source server."""

    views: dict[str, tuple[str, list[str]]] = field(default_factory=dict)  # name -> (CREATE VIEW, columns)
    triggers: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # table -> [(name, CREATE TRIGGER)]
    routines: list[tuple[str, str, str]] = field(default_factory=list)  # (FUNCTION|PROCEDURE, name, CREATE ...)
    events: list[tuple[str, str]] = field(default_factory=list)  # (name, CREATE EVENT)


def read_tab(tab_dir: Path) -> list[TabTable]:
    """The tables of a mysqldump --tab directory (those with a .txt)."""
    tables = []
    for txt in sorted(tab_dir.glob("*.txt")):
        sql = txt.with_suffix(".sql").read_text()
        match = re.search(r"^CREATE TABLE `((?:[^`]|``)+)` \(\n(.*?)\n\)[^\n]*;$", sql, re.MULTILINE | re.DOTALL)
        assert match is not None, f"no CREATE TABLE in {txt.with_suffix('.sql')}"
        body = match[2]
        columns = [c.replace("``", "`") for c in re.findall(r"^  `((?:[^`]|``)+)` ", body, re.MULTILINE)]
        create = match[0].rstrip(";")
        tables.append(TabTable(match[1].replace("``", "`"), create, columns, txt.read_bytes()))
    return tables


def objects_of(connection: pymysql.connections.Connection[Any], schema: str) -> Objects:
    objects = Objects()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT TABLE_NAME FROM information_schema.VIEWS WHERE TABLE_SCHEMA = %s ORDER BY TABLE_NAME", (schema,)
        )
        for (view,) in cursor.fetchall():
            cursor.execute(f"SHOW CREATE VIEW `{schema}`.`{view}`")
            create = cursor.fetchone()[1]
            cursor.execute(
                "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s "
                "ORDER BY ORDINAL_POSITION",
                (schema, view),
            )
            objects.views[view] = (create, [c for (c,) in cursor.fetchall()])
        cursor.execute(
            "SELECT TRIGGER_NAME, EVENT_OBJECT_TABLE FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = %s",
            (schema,),
        )
        for name, table in cursor.fetchall():
            cursor.execute(f"SHOW CREATE TRIGGER `{schema}`.`{name}`")
            objects.triggers.setdefault(table, []).append((name, cursor.fetchone()[2]))
        cursor.execute(
            "SELECT ROUTINE_TYPE, ROUTINE_NAME FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = %s", (schema,)
        )
        for kind, name in cursor.fetchall():
            cursor.execute(f"SHOW CREATE {kind} `{schema}`.`{name}`")
            objects.routines.append((kind, name, cursor.fetchone()[2]))
        cursor.execute("SELECT EVENT_NAME FROM information_schema.EVENTS WHERE EVENT_SCHEMA = %s", (schema,))
        for (name,) in cursor.fetchall():
            cursor.execute(f"SHOW CREATE EVENT `{schema}`.`{name}`")
            objects.events.append((name, cursor.fetchone()[3]))
    return objects


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _delimited(statement: str) -> str:
    return f"DELIMITER ;;\n{statement} ;;\nDELIMITER ;\n"


def _split_rows(rows: bytes, size: int) -> list[bytes]:
    """Pieces of about `size` bytes ending at row ends (an escaped newline is not a row end)."""
    pieces, start = [], 0
    while start < len(rows):
        end = min(start + size, len(rows))
        while end < len(rows):
            newline = rows.find(b"\n", end - 1)
            if newline == -1:
                end = len(rows)
                break
            backslashes = len(rows[start:newline]) - len(rows[start:newline].rstrip(b"\\"))
            end = newline + 1
            if backslashes % 2 == 0:
                break
        pieces.append(rows[start:end])
        start = end
    return pieces


# --- MySQL Shell ---------------------------------------------------------------------------------


# modules/util/dump/dump_utils.cc: ASCII bytes other than letters, digits, - . _ ~ are written as %XX.
def shell_encode(name: str) -> str:
    return "".join(c if not c.isascii() or c.isalnum() or c in "-._~" else f"%{ord(c):02X}" for c in name)


def write_mysqlsh_dump(
    out: Path,
    schema: str,
    tables: list[TabTable],
    objects: Objects | None = None,
    *,
    bytes_per_chunk: int = 64_000_000,
    complete: bool = True,
) -> None:
    """A util.dumpSchemas() directory with zstd-compressed TSV chunks."""
    objects = objects or Objects()
    out.mkdir(parents=True)
    base = shell_encode(schema)
    header = f"-- MySQLShell dump 2.0.1  Distrib Ver 8.0.36 for Linux on x86_64\n--\n-- Schema: {schema}\n\n"
    (out / "@.json").write_text(
        json.dumps(
            {
                "dumper": "mysqlsh Ver 8.0.36 for Linux on x86_64 - for MySQL 8.0.36 (MySQL Community Server (GPL))",
                "version": "2.0.1",
                "origin": "dumpSchemas",
                "schemas": [schema],
                "basenames": {schema: base},
                # The rows come from mysqldump --tab, which writes each column's own bytes: the Shell's
                # defaultCharacterSet option set to binary writes the same.
                "defaultCharacterSet": "binary",
                "tzUtc": True,
                "bytesPerChunk": bytes_per_chunk,
                "user": "root",
                "hostname": "localhost",
                "server": "localhost",
                "serverVersion": "8.0.36",
                "gtidExecuted": "",
                "gtidExecutedInconsistent": False,
                "consistent": True,
                "compatibilityOptions": [],
                "begin": "2024-01-01 00:00:00",
            },
            indent=4,
        )
    )
    (out / "@.sql").write_text(header)
    (out / "@.post.sql").write_text(header)
    schema_sql = header + f"CREATE DATABASE IF NOT EXISTS {_quote(schema)} /*!40100 DEFAULT CHARACTER SET utf8mb4 */;\n"
    for kind, name, create in objects.routines:
        schema_sql += f"-- begin {kind.lower()} {_quote(schema)}.{_quote(name)}\n" + _delimited(create)
    for name, create in objects.events:
        schema_sql += f"-- begin event {_quote(schema)}.{_quote(name)}\n" + _delimited(create)
    (out / f"{base}.sql").write_text(schema_sql)
    names = {t.name: f"{base}@{shell_encode(t.name)}" for t in tables}
    names |= {v: f"{base}@{shell_encode(v)}" for v in objects.views}
    (out / f"{base}.json").write_text(
        json.dumps(
            {
                "schema": schema,
                "includesDdl": True,
                "includesViewsDdl": True,
                "includesData": True,
                "tables": [t.name for t in tables],
                "views": list(objects.views),
                "events": [name for name, _ in objects.events],
                "functions": [name for kind, name, _ in objects.routines if kind == "FUNCTION"],
                "procedures": [name for kind, name, _ in objects.routines if kind == "PROCEDURE"],
                "basenames": names,
            },
            indent=4,
        )
    )
    chunk_bytes: dict[str, int] = {}
    table_bytes: dict[str, int] = {}
    compressor = zstandard.ZstdCompressor()
    for table in tables:
        table_base = names[table.name]
        (out / f"{table_base}.sql").write_text(
            header + "/*!40101 SET @saved_cs_client     = @@character_set_client */;\n"
            "/*!50503 SET character_set_client = utf8mb4 */;\n"
            + table.create.replace("CREATE TABLE", "CREATE TABLE IF NOT EXISTS", 1)
            + ";\n/*!40101 SET character_set_client = @saved_cs_client */;\n"
        )
        triggers = objects.triggers.get(table.name, [])
        if triggers:
            (out / f"{table_base}.triggers.sql").write_text(header + "".join(_delimited(t) for _, t in triggers))
        (out / f"{table_base}.json").write_text(
            json.dumps(
                {
                    "options": {
                        "schema": schema,
                        "table": table.name,
                        "columns": table.columns,
                        "defaultCharacterSet": "binary",
                        "fieldsTerminatedBy": "\t",
                        "fieldsEnclosedBy": "",
                        "fieldsOptionallyEnclosed": False,
                        "fieldsEscapedBy": "\\",
                        "linesTerminatedBy": "\n",
                    },
                    "triggers": [name for name, _ in triggers],
                    "includesData": True,
                    "includesDdl": True,
                    "extension": "tsv.zst",
                    "chunking": True,
                    "compression": "zstd",
                    "primaryIndex": [],
                    "partitions": [],
                    "basenames": {},
                },
                indent=4,
            )
        )
        pieces = _split_rows(table.rows, bytes_per_chunk) or [b""]
        for number, piece in enumerate(pieces):
            last = number == len(pieces) - 1
            name = f"{table_base}@{'@' if last else ''}{number}.tsv.zst"
            (out / name).write_bytes(compressor.compress(piece))
            (out / f"{name}.idx").write_bytes(struct.pack(">Q", len(piece)))
            chunk_bytes[name] = len(piece)
        table_bytes[table.name] = len(table.rows)
    for view, (create, columns) in objects.views.items():
        view_base = names[view]
        placeholder = ",\n ".join(f"1 AS {_quote(c)}" for c in columns)
        (out / f"{view_base}.pre.sql").write_text(
            header + f"/*!50001 DROP VIEW IF EXISTS {_quote(view)}*/;\n"
            f"/*!50001 CREATE VIEW {_quote(view)} AS SELECT\n {placeholder} */;\n"
        )
        (out / f"{view_base}.sql").write_text(header + f"/*!50001 DROP VIEW IF EXISTS {_quote(view)}*/;\n{create};\n")
    if complete:
        (out / "@.done.json").write_text(
            json.dumps(
                {
                    "end": "2024-01-01 00:00:10",
                    "dataBytes": sum(table_bytes.values()),
                    "tableDataBytes": {schema: table_bytes},
                    "chunkFileBytes": chunk_bytes,
                },
                indent=4,
            )
        )


def write_mysqlsh_dump_from_tab(tab_dir: Path, out: Path, schema: str, bytes_per_chunk: int = 64_000_000) -> None:
    write_mysqlsh_dump(out, schema, read_tab(tab_dir), bytes_per_chunk=bytes_per_chunk)


# --- mydumper 0.14+ / 1.x --------------------------------------------------------------------------

_MYDUMPER_HEADER = (
    "/*!40101 SET NAMES binary*/;\n/*!40014 SET FOREIGN_KEY_CHECKS=0*/;\n/*!40103 SET TIME_ZONE='+00:00' */;\n"
)


def _tsv_fields(row: bytes) -> list[bytes | None]:
    """The values of one default-dialect row (\\N is NULL, backslash escapes undone)."""
    fields: list[bytes | None] = []
    current = bytearray()
    escapes = {ord("n"): b"\n", ord("t"): b"\t", ord("r"): b"\r", ord("0"): b"\0", ord("Z"): b"\x1a", ord("b"): b"\b"}
    index, null = 0, False
    while index < len(row):
        byte = row[index]
        if byte == 0x5C and index + 1 < len(row):
            following = row[index + 1]
            if following == ord("N") and not current:
                null = True
            else:
                current += escapes.get(following, bytes([following]))
            index += 2
            continue
        if byte == 0x09:
            fields.append(None if null else bytes(current))
            current, null = bytearray(), False
        else:
            current.append(byte)
        index += 1
    fields.append(None if null else bytes(current))
    return fields


def _sql_literal(value: bytes | None) -> bytes:
    if value is None:
        return b"NULL"
    escaped = (
        value.replace(b"\\", b"\\\\")
        .replace(b"'", b"\\'")
        .replace(b"\n", b"\\n")
        .replace(b"\r", b"\\r")
        .replace(b"\0", b"\\0")
        .replace(b"\x1a", b"\\Z")
    )
    return b"'" + escaped + b"'"


def _rows_of(data: bytes) -> list[bytes]:
    """The rows of default-dialect data, without their newlines."""
    rows: list[bytes] = []
    start = search = 0
    while start < len(data):
        newline = data.find(b"\n", search)
        if newline == -1:
            rows.append(data[start:])
            break
        backslashes = newline - start - len(data[start:newline].rstrip(b"\\"))
        if backslashes % 2:
            search = newline + 1
            continue
        rows.append(data[start:newline])
        start = search = newline + 1
    return rows


def _compress(data: bytes, compression: str | None) -> tuple[bytes, str]:
    if compression == "zst":
        return zstandard.ZstdCompressor().compress(data), ".zst"
    if compression == "gz":
        return gzip.compress(data), ".gz"
    return data, ""


def write_mydumper_dump(
    out: Path,
    schema: str,
    tables: list[TabTable],
    objects: Objects | None = None,
    *,
    rows_per_chunk: int = 1000,
    load_data: bool = False,
    compression: str | None = "zst",
    complete: bool = True,
) -> None:
    """A mydumper 0.14+ directory: INI metadata, part-numbered chunks, --load-data .sql + .dat pairs."""
    objects = objects or Objects()
    out.mkdir(parents=True)

    def write(name: str, data: bytes) -> None:
        content, suffix = _compress(data, compression)
        (out / f"{name}{suffix}").write_bytes(content)

    write(f"{schema}-schema-create.sql", f"CREATE DATABASE IF NOT EXISTS {_quote(schema)};\n".encode())
    metadata = [
        "# Started dump at: 2024-01-01 00:00:00",
        "[config]",
        "quote_character = BACKTICK",
        "",
        "[myloader_session_variables]",
        "SQL_MODE='NO_AUTO_VALUE_ON_ZERO,NO_ENGINE_SUBSTITUTION' /*!40101",
        "",
        "[source]",
        "File = binlog.000001",
        "Position = 4",
        "",
        f"[{_quote(schema)}]",
        f"real_database_name={schema}",
    ]
    for table in tables:
        write(f"{schema}.{table.name}-schema.sql", (_MYDUMPER_HEADER + table.create + ";\n").encode())
        rows = _rows_of(table.rows)
        columns = ",".join(_quote(c) for c in table.columns)
        for part, start in enumerate(range(0, len(rows), rows_per_chunk)):
            chunk = rows[start : start + rows_per_chunk]
            stem = f"{schema}.{table.name}.{part:05d}"
            if load_data:
                write(f"{stem}.dat", b"".join(r + b"\n" for r in chunk))
                statement = (
                    f"LOAD DATA LOCAL INFILE '{stem}.dat' INTO TABLE {_quote(table.name)} CHARACTER SET binary "
                    "FIELDS TERMINATED BY '\\t' ENCLOSED BY '' ESCAPED BY '\\\\' LINES STARTING BY '' "
                    f"TERMINATED BY '\\n' ({columns});\n"
                )
                write(f"{stem}.sql", (_MYDUMPER_HEADER + statement).encode())
            else:
                values = b",\n".join(b"(" + b",".join(_sql_literal(v) for v in _tsv_fields(r)) + b")" for r in chunk)
                insert = f"INSERT INTO {_quote(table.name)} VALUES\n".encode() + values + b";\n"
                write(f"{stem}.sql", _MYDUMPER_HEADER.encode() + insert)
        triggers = objects.triggers.get(table.name, [])
        if triggers:
            write(f"{schema}.{table.name}-schema-triggers.sql", "".join(_delimited(t) for _, t in triggers).encode())
        metadata += [
            "",
            f"[{_quote(schema)}.{_quote(table.name)}]",
            f"real_table_name={table.name}",
            f"rows = {len(rows)}",
        ]
    for view, (create, view_columns) in objects.views.items():
        placeholder = ",\n".join(f"{_quote(c)} tinyint NOT NULL" for c in view_columns)
        write(f"{schema}.{view}-schema.sql", f"CREATE TABLE {_quote(view)}(\n{placeholder}\n)ENGINE=MyISAM;\n".encode())
        write(
            f"{schema}.{view}-schema-view.sql",
            f"DROP TABLE IF EXISTS {_quote(view)};\nDROP VIEW IF EXISTS {_quote(view)};\n{create};\n".encode(),
        )
    post = "".join(_delimited(create) for _, _, create in objects.routines)
    post += "".join(_delimited(create) for _, create in objects.events)
    if post:
        write(f"{schema}-schema-post.sql", post.encode())
    metadata.append("# Finished dump at: 2024-01-01 00:00:10")
    (out / ("metadata" if complete else "metadata.partial")).write_text("\n".join(metadata) + "\n")
