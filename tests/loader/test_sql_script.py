"""The SQL splitter against the shapes real dumps have, fed whole and one byte at a time."""

from __future__ import annotations

import pytest

from worker.runners.loader.sql_script import Kind, ScriptError, ScriptSplitter, Statement, count_rows, split_script

MYSQLDUMP_TRIGGER = b"""/*!40101 SET NAMES utf8mb4 */;
-- comment; with a semicolon
USE `shop`;
INSERT INTO `t` VALUES
(1,'a;\\n'),
(2,'b'';'),
(3,NULL);
DELIMITER ;;
/*!50003 CREATE*/ /*!50017 DEFINER=`root`@`localhost`*/ /*!50003 TRIGGER tr BEFORE INSERT ON t FOR EACH ROW
BEGIN
INSERT INTO log VALUES (1);
SET @x = ';';
END */;;
DELIMITER ;
/* plain comment */ SELECT "x"";" FROM `we;ird``name`;
# hash comment
SELECT 1
"""


def texts(statements: list[Statement]) -> list[bytes]:
    return [s.text for s in statements]


def split_bytewise(text: bytes) -> list[Statement]:
    splitter = ScriptSplitter()
    statements: list[Statement] = []
    for index in range(len(text)):
        statements += splitter.feed(text[index : index + 1])
    statements += splitter.finish()
    return statements


@pytest.mark.parametrize("split", [split_script, split_bytewise])
def test_mysqldump_shapes(split: object) -> None:
    statements = split(MYSQLDUMP_TRIGGER)  # type: ignore[operator]
    assert texts(statements) == [
        b"/*!40101 SET NAMES utf8mb4 */",
        b"USE `shop`",
        b"INSERT INTO `t` VALUES\n(1,'a;\\n'),\n(2,'b'';'),\n(3,NULL)",
        b"/*!50003 CREATE*/ /*!50017 DEFINER=`root`@`localhost`*/ /*!50003 TRIGGER tr BEFORE INSERT ON t FOR EACH ROW\n"
        b"BEGIN\nINSERT INTO log VALUES (1);\nSET @x = ';';\nEND */",
        b'SELECT "x"";" FROM `we;ird``name`',
        b"SELECT 1",
    ]
    insert = statements[2]
    assert (insert.kind, insert.rows, insert.table, insert.line) == (Kind.INSERT, 3, (None, "t"), 4)
    assert statements[3].delimiter == b";;"
    assert statements[3].kind is Kind.OTHER
    assert [s.line for s in statements] == [1, 3, 4, 9, 15, 17]


def test_semicolon_newline_inside_a_string_does_not_end_an_insert() -> None:
    (statement,) = split_script(b"INSERT INTO t VALUES (1,'x;\ny'),(2,'z');\n")
    assert statement.rows == 2
    assert statement.text.endswith(b"(2,'z')")


def test_qualified_names_crlf_and_no_final_newline() -> None:
    statements = split_script(b"INSERT INTO `d`.`t` VALUES (1),(2);\r\nINSERT INTO u VALUES (3)")
    assert [(s.table, s.rows) for s in statements] == [(("d", "t"), 2), ((None, "u"), 1)]
    assert statements[0].text == b"INSERT INTO `d`.`t` VALUES (1),(2)"


def test_mydumper_double_quoted_strings_count_right() -> None:
    (statement,) = split_script(b'INSERT INTO `t` VALUES\n(1,"a(b",NULL),\n(2,"c\\"(",\'(\');\n')
    assert statement.rows == 2


@pytest.mark.parametrize(
    ("values", "rows"),
    [
        (b"(1,'a'),(2,'b')", 2),
        (b"(1,'it''s (x)')", 1),
        (b"(1,'back\\\\'),(2,'\\'(')", 2),
        (b"(1,'open", None),
        (b'(1,"x(y"),(2,"\\"")', 2),
    ],
)
def test_count_rows(values: bytes, rows: int | None) -> None:
    assert count_rows(values) == rows


def test_unterminated_string_is_an_error() -> None:
    with pytest.raises(ScriptError, match=r"ends inside a '\.\.\.' string in the statement at line 2"):
        split_script(b"SELECT 1;\nSELECT 'abc\n")


def test_insert_select_goes_through_the_lexer() -> None:
    (statement,) = split_script(b"INSERT INTO t SELECT ';' FROM u;\n")
    assert statement.kind is Kind.OTHER
    assert statement.text == b"INSERT INTO t SELECT ';' FROM u"


def test_delimited_rows_across_blocks() -> None:
    from worker.runners.loader import delimited

    data = b"1\ta\\\nb\n2\tc\\\\\n3\td\n"  # row 1 holds an escaped newline, row 2 ends with an escaped backslash
    assert delimited.count_rows(data) == 3
    for cut in range(1, len(data)):
        blocks = [data[:cut], data[cut:]]
        assert delimited.count_rows_in_blocks(blocks) == 3, cut


def test_offsets_point_at_the_statement_text() -> None:
    text = MYSQLDUMP_TRIGGER
    for statement in split_bytewise(text):
        assert text[statement.offset : statement.offset + len(statement.text)] == statement.text
