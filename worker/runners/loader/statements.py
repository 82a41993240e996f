"""What a dump statement does, and the CREATE TABLE rewrite that builds secondary indexes after the data.

Pure functions over statement text, tested with tables of real dump statements.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from worker.runners.loader.sql_script import identifier

# `/*!40101 SET x */` and `/*M!100100 ... */` run on the server: for classifying we read through them.
_VERSION_COMMENT = re.compile(rb"/\*M?!\d*|\*/")
_SPACES = re.compile(rb"\s+")
_NAME = rb"(?:`(?:[^`]|``)+`|[\w$]+)"
_QUALIFIED = rb"(?P<first>" + _NAME + rb")(?:\s*\.\s*(?P<second>" + _NAME + rb"))?"
_DEFINER = rb"(?:DEFINER\s*=\s*(?:`[^`]*`|'[^']*'|[^\s@]+)(?:\s*@\s*(?:`[^`]*`|'[^']*'|\S+))?\s+)?"
_CREATE = re.compile(
    rb"CREATE\s+(?:OR\s+REPLACE\s+)?(?:ALGORITHM\s*=\s*\w+\s+)?" + _DEFINER + rb"(?:SQL\s+SECURITY\s+\w+\s+)?"
    rb"(?:AGGREGATE\s+)?(?P<what>TRIGGER|PROCEDURE|FUNCTION|EVENT|VIEW|PACKAGE(?:\s+BODY)?|TABLE|DATABASE|SCHEMA"
    rb"|TEMPORARY\s+TABLE|SEQUENCE)\b(?:\s+IF\s+NOT\s+EXISTS)?\s*(?:" + _QUALIFIED + rb")?",
    re.IGNORECASE,
)
_DROP = re.compile(
    rb"DROP\s+(?P<what>TRIGGER|PROCEDURE|FUNCTION|EVENT|VIEW|TABLE|DATABASE|SCHEMA|PACKAGE(?:\s+BODY)?|SEQUENCE)"
    rb"\b(?:\s+IF\s+EXISTS)?\s*(?:" + _QUALIFIED + rb")?",
    re.IGNORECASE,
)
_ALTER_KEYS = re.compile(rb"ALTER\s+TABLE\s+" + _QUALIFIED + rb"\s+(?P<how>DISABLE|ENABLE)\s+KEYS\s*$", re.IGNORECASE)
_USE = re.compile(rb"USE\s+(?P<name>" + _NAME + rb")\s*$", re.IGNORECASE)
_SET = re.compile(rb"SET\s", re.IGNORECASE)
_LOCK = re.compile(rb"(?:LOCK\s+TABLES?|UNLOCK\s+TABLES?)\b", re.IGNORECASE)
_LOAD_DATA = re.compile(rb"LOAD\s+DATA\s+(?:LOW_PRIORITY\s+|CONCURRENT\s+)?LOCAL\s+INFILE\s+'(?P<file>[^']*)'", re.I)


class Action(Enum):
    SESSION = "session"  # SET or USE: changes the session the following statements run in
    CREATE_DATABASE = "create_database"
    CREATE_TABLE = "create_table"
    DROP_TABLE = "drop_table"
    KEYS = "keys"  # ALTER TABLE .. DISABLE/ENABLE KEYS
    LOCK = "lock"  # LOCK/UNLOCK TABLES: a parallel load must not run them
    POST_DATA = "post_data"  # views, triggers, routines, events: created after the data
    LOAD_DATA = "load_data"
    OTHER = "other"


@dataclass(frozen=True)
class Classified:
    action: Action
    what: str = ""  # TRIGGER, VIEW, TABLE, ... for CREATE and DROP
    database: str | None = None
    name: str | None = None


_POST_DATA_OBJECTS = {"TRIGGER", "PROCEDURE", "FUNCTION", "EVENT", "VIEW", "PACKAGE", "PACKAGE BODY"}


# Comments before a statement's first word, including MariaDB's `/*M!999999\- enable the sandbox mode */`
# (a command for the mysql client that the server ignores) that opens every dump of mariadb-dump 10.11.8+.
_LEADING_COMMENTS = re.compile(
    rb"(?:\s+|--[ \t][^\n]*(?:\n|$)|--\n|#[^\n]*(?:\n|$)|/\*(?!!|M!)(?:.*?)\*/|/\*M!999999.*?\*/)*", re.S
)


def normalized_head(text: bytes, limit: int = 600) -> bytes:
    """The statement's start without leading comments, version-comment markers and repeated blanks."""
    start = _LEADING_COMMENTS.match(text).end()  # type: ignore[union-attr]
    head = _VERSION_COMMENT.sub(b" ", text[start : start + limit])
    return _SPACES.sub(b" ", head).strip()


def classify(text: bytes) -> Classified:
    head = normalized_head(text)
    upper = head[:12].upper()
    if upper.startswith(b"SET") and _SET.match(head):
        return Classified(Action.SESSION)
    if upper.startswith(b"USE"):
        match = _USE.match(head)
        if match:
            return Classified(Action.SESSION, "USE", name=identifier(match["name"]))
    if upper.startswith(b"CREATE"):
        match = _CREATE.match(head)
        if match:
            what = _SPACES.sub(b" ", match["what"]).decode().upper()
            database, name = _names(match)
            if what in ("DATABASE", "SCHEMA"):
                return Classified(Action.CREATE_DATABASE, "DATABASE", name=name)
            if what == "TABLE":
                return Classified(Action.CREATE_TABLE, what, database, name)
            if what in _POST_DATA_OBJECTS:
                return Classified(Action.POST_DATA, what, database, name)
    if upper.startswith(b"DROP"):
        match = _DROP.match(head)
        if match:
            what = _SPACES.sub(b" ", match["what"]).decode().upper()
            database, name = _names(match)
            if what == "TABLE":
                return Classified(Action.DROP_TABLE, what, database, name)
            if what in _POST_DATA_OBJECTS:
                return Classified(Action.POST_DATA, what, database, name)
    if upper.startswith(b"ALTER"):
        match = _ALTER_KEYS.match(head)
        if match:
            database, name = _names(match)
            return Classified(Action.KEYS, match["how"].decode().upper(), database, name)
    if upper.startswith((b"LOCK", b"UNLOCK")) and _LOCK.match(head):
        return Classified(Action.LOCK)
    if upper.startswith(b"LOAD") and _LOAD_DATA.match(head):
        return Classified(Action.LOAD_DATA)
    return Classified(Action.OTHER)


def _names(match: re.Match[bytes]) -> tuple[str | None, str | None]:
    if match["first"] is None:
        return None, None
    if match["second"] is not None:
        return identifier(match["first"]), identifier(match["second"])
    return None, identifier(match["first"])


def replace_load_data_file(text: bytes, path: str) -> tuple[bytes, str]:
    """The LOAD DATA LOCAL statement reading `path` instead of its file, and the file it named."""
    match = _LOAD_DATA.search(text)
    if match is None:
        raise ValueError("not a LOAD DATA LOCAL INFILE statement")
    quoted = path.replace("\\", "\\\\").replace("'", "\\'").encode()
    return text[: match.start("file")] + quoted + text[match.end("file") :], match["file"].decode()


# --- building secondary indexes after the data ----------------------------------------------------

# SHOW CREATE TABLE (what every dump tool writes) puts each definition on its own line.
_INDEX_LINE = re.compile(
    rb"^\s+(?P<kind>(?:FULLTEXT|SPATIAL)\s+)?(?:KEY|INDEX)\s+(?P<name>`(?:[^`]|``)+`)\s*\((?P<columns>.*)\)"
    rb"(?P<options>[^,\n]*?),?\s*$",
    re.IGNORECASE,
)
_AUTO_INCREMENT_COLUMN = re.compile(rb"^\s+(?P<name>`(?:[^`]|``)+`)\s.*\bAUTO_INCREMENT\b", re.IGNORECASE)
_FIRST_COLUMN = re.compile(rb"`(?:[^`]|``)+`")


@dataclass(frozen=True)
class DeferredIndexes:
    create_table: bytes  # the CREATE TABLE statement without the deferred indexes
    add_clauses: list[bytes]  # `ADD KEY ...` clauses, one ALTER TABLE for all ordinary keys
    separate_clauses: list[bytes]  # FULLTEXT and SPATIAL keys: InnoDB adds them one at a time
    names: list[bytes]  # the quoted names of the indexes taken out


def defer_secondary_indexes(create_table: bytes) -> DeferredIndexes | None:
    """Take the non-unique secondary indexes out of a CREATE TABLE, to add them once the data is in.

    InnoDB builds an index from sorted data much faster than it maintains it row by row (measured here:
    see bench/loader_speed.py). Kept in the CREATE TABLE: the primary key, unique keys (a damaged dump's
    duplicate rows then fail where they are), any key a foreign key may need (tables with foreign keys are
    left alone), and the first key on an AUTO_INCREMENT column (the server requires one). Only InnoDB
    tables: other engines copy the whole table to add an index. None when there is nothing to defer or the
    statement is not in SHOW CREATE TABLE's one-definition-per-line form.
    """
    if b"\n" not in create_table or re.search(rb"\bFOREIGN\s+KEY\b|\bREFERENCES\b", create_table, re.I):
        return None
    if not re.search(rb"\)\s*ENGINE\s*=\s*InnoDB\b", create_table, re.I):
        return None  # other engines rebuild the whole table to add an index
    lines = create_table.split(b"\n")
    auto_increment = _auto_increment_column(lines)
    kept: list[bytes] = []
    clauses: list[bytes] = []
    separate: list[bytes] = []
    names: list[bytes] = []
    for line in lines:
        match = _INDEX_LINE.match(line)
        if match is None:
            kept.append(line)
            continue
        first = _FIRST_COLUMN.match(match["columns"].strip())
        if auto_increment is not None and first is not None and first.group() == auto_increment:
            auto_increment = None  # this key is the one the AUTO_INCREMENT column needs
            kept.append(line)
            continue
        clause = b"ADD " + line.strip().rstrip(b",").strip()
        (separate if match["kind"] else clauses).append(clause)
        names.append(match["name"])
    if not clauses and not separate:
        return None
    # The line before the table options may now end with a comma it no longer needs.
    closing = next(i for i in range(1, len(kept)) if kept[i].lstrip().startswith(b")"))
    previous = closing - 1
    kept[previous] = kept[previous].rstrip().rstrip(b",")
    return DeferredIndexes(b"\n".join(kept), clauses, separate, names)


def _auto_increment_column(lines: list[bytes]) -> bytes | None:
    for line in lines:
        match = _AUTO_INCREMENT_COLUMN.match(line)
        if match:
            column = match["name"]
            # Covered by the primary key or a unique key as its first column: no other key is needed.
            for other in lines:
                stripped = other.strip().upper()
                if stripped.startswith((b"PRIMARY KEY", b"UNIQUE KEY", b"UNIQUE INDEX")):
                    columns = other[other.index(b"(") + 1 :]
                    first = _FIRST_COLUMN.match(columns.strip())
                    if first is not None and first.group() == column:
                        return None
            return column
    return None


def has_auto_increment(create_table: bytes) -> bool:
    return any(_AUTO_INCREMENT_COLUMN.match(line) for line in create_table.split(b"\n"))


def alter_statements(table: bytes, deferred: DeferredIndexes) -> list[bytes]:
    """The ALTER TABLE statements that add the deferred indexes of `table` (a quoted, qualified name)."""
    statements = []
    if deferred.add_clauses:
        statements.append(b"ALTER TABLE " + table + b" " + b", ".join(deferred.add_clauses))
    statements += [b"ALTER TABLE " + table + b" " + clause for clause in deferred.separate_clauses]
    return statements


def quote_name(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def qualified(database: str, table: str) -> bytes:
    return f"{quote_name(database)}.{quote_name(table)}".encode()
