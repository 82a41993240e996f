"""RowCounter on every INSERT form mysqldump writes, and DumpReader on plain, gzip, zstd and broken files."""

from __future__ import annotations

import bz2
import gzip
import os
import subprocess
import sys
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
import zstandard

from worker.runners.dump_stream import (
    CorruptDumpError,
    DumpError,
    RowCounter,
    TruncatedDumpError,
    UnreadableDumpError,
    _Bzip2Decoder,
    count_tuples,
    open_dump,
)

# What MariaDB 10.11's mysqldump writes for a view: a placeholder CREATE VIEW in a versioned comment
# (older servers wrote `/*!50001 CREATE TABLE`), then the final view definition after USE again.
MARIADB_10_11_DUMP = b"""/*M!999999\\- enable the sandbox mode */
-- MariaDB dump 10.19  Distrib 10.11.19-MariaDB, for debian-linux-gnu (x86_64)
/*!40101 SET NAMES utf8mb4 */;
CREATE DATABASE /*!32312 IF NOT EXISTS*/ `shop` /*!40100 DEFAULT CHARACTER SET latin1 */;

USE `shop`;
DROP TABLE IF EXISTS `empty`;
CREATE TABLE `empty` (
  `a` int(11) DEFAULT NULL
) ENGINE=InnoDB;
LOCK TABLES `empty` WRITE;
UNLOCK TABLES;
DROP TABLE IF EXISTS `t`;
CREATE TABLE `t` (
  `a` int(11) NOT NULL,
  `b` varchar(50) DEFAULT NULL,
  PRIMARY KEY (`a`)
) ENGINE=InnoDB;
INSERT INTO `t` VALUES
(1,'x),(y'),
(2,'it\\'s'),
(3,NULL),
(4,'back\\\\slash\\nnl');
DELIMITER ;;
/*!50003 CREATE*/ /*!50003 TRIGGER `log_it` AFTER INSERT ON `t` FOR EACH ROW BEGIN
INSERT INTO `audit` VALUES (NEW.a);
CREATE TABLE `not_a_table` (a int);
END */;;
DELIMITER ;
DROP TABLE IF EXISTS `v`;
/*!50001 DROP VIEW IF EXISTS `v`*/;
/*!50001 CREATE VIEW `v` AS SELECT
 NULL AS `a`,
 NULL AS `b` */;
/*!50001 CREATE TABLE `old_style_view_placeholder` (
  `a` tinyint NOT NULL
) ENGINE=MyISAM */;
USE `shop`;
/*!50001 DROP VIEW IF EXISTS `v`*/;
/*!50001 VIEW `v` AS select `t`.`a` AS `a`,`t`.`b` AS `b` from `t` */;
-- Dump completed on 2026-11-22  4:43:34
"""

REPO_ROOT = Path(__file__).resolve().parents[1]


def count(dump: bytes, default_database: str | None = None) -> RowCounter:
    counter = RowCounter(default_database)
    counter.feed(dump)
    counter.finish()
    return counter


@pytest.mark.parametrize(
    ("dump", "expected"),
    [
        pytest.param(b"INSERT INTO `t` VALUES (1,'a'),(2,'b'),(3,'c');\n", 3, id="extended-one-line"),
        pytest.param(b"INSERT INTO `t` VALUES\n(1,'a'),\n(2,'b');\n", 2, id="extended-row-per-line"),
        pytest.param(b"INSERT INTO `t` VALUES (1,'a');\nINSERT INTO `t` VALUES (2,'b');\n", 2, id="skip-extended"),
        pytest.param(b"INSERT INTO `t` (`a`, `b`) VALUES (1,'a'),(2,'b');\n", 2, id="complete-insert"),
        pytest.param(b"INSERT INTO `t` (`a)(`, `b`) VALUES (1,'a');\n", 1, id="paren-in-column-name"),
        pytest.param(b"INSERT IGNORE INTO `t` VALUES (1,'a'),(2,'b');\n", 2, id="insert-ignore"),
        pytest.param(b"REPLACE INTO `t` VALUES (1,'a'),(2,'b');\n", 2, id="replace"),
        pytest.param(b"INSERT DELAYED INTO `t` VALUES (1,'a');\n", 1, id="delayed"),
        pytest.param(b"INSERT INTO t VALUES (1,'a'),(2,'b');\n", 2, id="unquoted-name"),
        pytest.param(b"INSERT INTO `t` VALUES (1,'a),(b'),(2,'),('),(3,'(');\n", 3, id="separator-in-string"),
        pytest.param(b"INSERT INTO `t` VALUES (1,'it\\'s),('),(2,'x');\n", 2, id="backslash-quote"),
        pytest.param(b"INSERT INTO `t` VALUES (1,'it''s),('),(2,'x');\n", 2, id="doubled-quote"),
        pytest.param(b"INSERT INTO `t` VALUES (1,'ends in \\\\'),(2,'(');\n", 2, id="escaped-backslash-before-quote"),
        pytest.param(b"INSERT INTO `t` VALUES (1,'a\\nb;\\n('),(2,'x');\n", 2, id="escaped-newline"),
        pytest.param(b"INSERT INTO `t` VALUES (1,'real\n);\n(newline'),(2,'x');\n", 2, id="literal-newline-in-string"),
        pytest.param(b"INSERT INTO `t` VALUES (1,0x28),(2,b'1'),(3,-1.5e+3,NULL);\n", 3, id="hex-bit-float-null"),
        pytest.param("INSERT INTO `t` VALUES (1,'über ),( 😀');\n".encode(), 1, id="unicode"),
        pytest.param(b"INSERT INTO `t` VALUES (1,'a'),(2,'b');\r\nINSERT INTO `t` VALUES (3,'c');\r\n", 3, id="crlf"),
        pytest.param(b"INSERT INTO `t` VALUES (1,'a'),(2,'b');", 2, id="no-final-newline"),
    ],
)
def test_counts_rows_of_every_insert_form(dump: bytes, expected: int) -> None:
    counter = count(dump)
    assert counter.expected_rows == {(None, "t"): expected}
    assert counter.rows_seen == expected


@pytest.mark.parametrize(
    ("dump", "expected"),
    [
        pytest.param(b"CREATE TABLE `e` (\n  `a` int\n);\n", {(None, "e"): 0}, id="empty-table"),
        pytest.param(b"CREATE TABLE IF NOT EXISTS `e` (a int);\n", {(None, "e"): 0}, id="if-not-exists"),
        pytest.param(b"INSERT INTO `db2`.`t` VALUES (1);\n", {("db2", "t"): 1}, id="qualified-name"),
        pytest.param(b"CREATE TABLE `a``b` (x int);\n", {(None, "a`b"): 0}, id="backtick-in-name"),
        pytest.param(b"CREATE SEQUENCE `s` start with 1;\nSELECT SETVAL(`s`, 5, 0);\n", {}, id="sequence"),
        pytest.param(b"/*!50001 CREATE VIEW `v` AS SELECT\n 1 AS `a` */;\n", {}, id="view-placeholder"),
        pytest.param(b"/*!50001 CREATE TABLE `v` (\n  `a` int\n) ENGINE=MyISAM */;\n", {}, id="old-view-placeholder"),
    ],
)
def test_tables_without_use(dump: bytes, expected: dict[tuple[str | None, str], int]) -> None:
    counter = count(dump)
    assert counter.expected_rows == expected
    assert not counter.has_use_statements


def test_mariadb_dump_with_views_triggers_and_empty_table() -> None:
    counter = count(MARIADB_10_11_DUMP)
    assert counter.expected_rows == {("shop", "empty"): 0, ("shop", "t"): 4}
    assert counter.databases == ["shop"]
    assert counter.has_use_statements
    assert counter.dump_completed


def test_default_database_names_tables_of_a_dump_without_use() -> None:
    counter = count(b"CREATE TABLE `t` (a int);\nINSERT INTO `t` VALUES (1),(2);\n", default_database="restored")
    assert counter.expected_rows == {("restored", "t"): 2}
    assert counter.databases == ["restored"]
    assert not counter.dump_completed


def test_use_switches_database_between_tables() -> None:
    dump = b"USE `a`;\nINSERT INTO `t` VALUES (1);\nUSE `b`;\nINSERT INTO `t` VALUES (1),(2);\n"
    counter = count(dump)
    assert counter.expected_rows == {("a", "t"): 1, ("b", "t"): 2}
    assert counter.databases == ["a", "b"]


def split_everywhere_cases() -> list[bytes]:
    return [
        MARIADB_10_11_DUMP,
        b"INSERT INTO `t` VALUES (1,'a),(b'),(2,'it''s'),(3,'x\\\\'),(4,'\\'');\nINSERT INTO `t` VALUES (5,'y');\n",
        b"INSERT INTO `t` VALUES (1,'a');\r\nINSERT INTO `t` VALUES (2,'),(');\r\nINSERT INTO `u` VALUES (3);\r\n",
        b"INSERT INTO `t` VALUES (1,'real\n);\n(newline'),(2,'x');\nINSERT INTO `t` VALUES (3,'a');\n",
    ]


@pytest.mark.parametrize("dump", split_everywhere_cases())
def test_same_counts_whatever_the_chunk_boundaries(dump: bytes) -> None:
    whole = count(dump)
    for cut in range(1, len(dump)):
        counter = RowCounter()
        counter.feed(dump[:cut])
        counter.feed(dump[cut:])
        counter.finish()
        assert counter.expected_rows == whole.expected_rows, f"split at byte {cut}"
    byte_by_byte = RowCounter()
    for index in range(len(dump)):
        byte_by_byte.feed(dump[index : index + 1])
    byte_by_byte.finish()
    assert byte_by_byte.expected_rows == whole.expected_rows
    assert byte_by_byte.databases == whole.databases


def test_long_one_line_insert_is_counted_before_it_ends() -> None:
    """A long INSERT line is counted up to its last `),(` instead of being held until its newline."""
    counter = RowCounter()
    counter.feed(b"INSERT INTO `t` VALUES " + b"(1,'x'),(2,'y')," * 5000)
    assert counter.rows_seen == 9999  # the last tuple may still be followed by more of itself
    counter.feed(b"(3,'z');\n")
    assert counter.expected_rows == {(None, "t"): 10001}


@pytest.mark.parametrize(
    ("values", "expected"),
    [(b"(1),(2)", 2), (b"(1,'(')", 1), (b"(1,'a\\'(')", 1), (b"(1,'unterminated", None), (b"", 0)],
)
def test_count_tuples(values: bytes, expected: int | None) -> None:
    assert count_tuples(values) == expected


# --- reading files ---------------------------------------------------------------------------------

SQL = b"".join(b"INSERT INTO `t` VALUES (%d,'row %d'),(%d,'x');\n" % (i, i, i) for i in range(20000))


def read_all(path: Path, size: int = 1 << 16) -> bytes:
    with open_dump(path) as reader:
        data = b"".join(reader.chunks(size))
        assert reader.compressed_bytes_read == reader.total_bytes == path.stat().st_size
    return data


def write_zstd(path: Path, data: bytes) -> Path:
    # The zstd CLI writes a checksum by default; without one a flipped literal byte decodes silently.
    path.write_bytes(zstandard.ZstdCompressor(write_checksum=True).compress(data))
    return path


def write_gzip(path: Path, data: bytes) -> Path:
    path.write_bytes(gzip.compress(data))
    return path


def write_bzip2(path: Path, data: bytes) -> Path:
    # As pbzip2 writes it: one bzip2 stream per block, concatenated.
    path.write_bytes(b"".join(bz2.compress(data[i : i + 200_000]) for i in range(0, len(data), 200_000)))
    return path


def test_plain_gzip_zstd_and_bzip2_decode_to_the_same_sql(tmp_path: Path) -> None:
    plain = tmp_path / "dump.sql"
    plain.write_bytes(SQL)
    assert read_all(plain) == SQL
    assert read_all(write_gzip(tmp_path / "dump.sql.gz", SQL)) == SQL
    assert read_all(write_zstd(tmp_path / "dump.sql.zst", SQL)) == SQL
    assert len(SQL) > 400_000  # so the bzip2 file has several streams
    assert read_all(write_bzip2(tmp_path / "dump.sql.bz2", SQL)) == SQL
    assert read_all(write_bzip2(tmp_path / "dump.sql.bz2", SQL), size=1 << 12) == SQL


def test_a_file_that_merely_starts_with_bzh_is_plain_sql(tmp_path: Path) -> None:
    path = tmp_path / "dump.sql"
    path.write_bytes(b"BZh9 is not a bzip2 header\n")
    with open_dump(path) as reader:
        assert reader.compression == "plain"


def test_compression_is_detected_from_content_not_name(tmp_path: Path) -> None:
    assert read_all(write_zstd(tmp_path / "really-zstd.sql", SQL)) == SQL
    assert read_all(write_gzip(tmp_path / "really-gzip.zst", SQL)) == SQL
    assert read_all(write_bzip2(tmp_path / "really-bzip2.gz", SQL)) == SQL


def test_concatenated_members_and_frames_are_all_read(tmp_path: Path) -> None:
    gz = tmp_path / "multi.gz"
    gz.write_bytes(gzip.compress(SQL[:1000]) + gzip.compress(SQL[1000:]))
    assert read_all(gz) == SQL
    zst = tmp_path / "multi.zst"
    compressor = zstandard.ZstdCompressor()
    zst.write_bytes(compressor.compress(SQL[:1000]) + compressor.compress(SQL[1000:]))
    assert read_all(zst) == SQL


@pytest.mark.parametrize(
    "compress", [gzip.compress, zstandard.ZstdCompressor().compress, bz2.compress], ids=["gzip", "zstd", "bzip2"]
)
def test_small_members_in_the_last_block_are_not_lost(tmp_path: Path, compress: Callable[[bytes], bytes]) -> None:
    path = tmp_path / "tiny"
    path.write_bytes(compress(b"SELECT 1;\n") + compress(b"SELECT 2;\n") + compress(b"SELECT 3;\n"))
    assert read_all(path) == b"SELECT 1;\nSELECT 2;\nSELECT 3;\n"


def test_gzip_zero_padding_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "padded.gz"
    path.write_bytes(gzip.compress(SQL) + b"\x00" * 512)
    assert read_all(path) == SQL


@pytest.mark.parametrize(
    ("suffix", "write", "kind"),
    [("gz", write_gzip, "gzip"), ("zst", write_zstd, "zstd"), ("bz2", write_bzip2, "bzip2")],
)
@pytest.mark.parametrize("keep", [0.01, 0.5, 0.99, -1])
def test_truncated_file_says_it_is_truncated(
    tmp_path: Path, suffix: str, write: Callable[[Path, bytes], Path], kind: str, keep: float
) -> None:
    path = write(tmp_path / f"dump.sql.{suffix}", SQL)
    compressed = path.read_bytes()
    cut = len(compressed) - 1 if keep == -1 else max(int(len(compressed) * keep), 4)
    path.write_bytes(compressed[:cut])
    with pytest.raises(TruncatedDumpError) as caught:
        read_all(path)
    assert str(caught.value) == (
        f"{path} ends before the end of its {kind} stream after {cut} bytes: "
        "the file is truncated or still being copied; copy the backup again"
    )


@pytest.mark.parametrize(("suffix", "write"), [("gz", write_gzip), ("zst", write_zstd), ("bz2", write_bzip2)])
def test_flipped_bits_are_reported_as_damage(tmp_path: Path, suffix: str, write: Callable[[Path, bytes], Path]) -> None:
    path = write(tmp_path / f"dump.sql.{suffix}", SQL)
    damaged = bytearray(path.read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF
    path.write_bytes(bytes(damaged))
    with pytest.raises(CorruptDumpError, match=r"is not valid .* data .*the file is damaged; copy the backup again"):
        read_all(path)


def test_gzip_checksum_mismatch_is_damage(tmp_path: Path) -> None:
    path = write_gzip(tmp_path / "dump.sql.gz", SQL)
    data = bytearray(path.read_bytes())
    data[-5] ^= 0x01  # inside the CRC32 trailer: the data decodes but does not match its checksum
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptDumpError, match="incorrect data check"):
        read_all(path)


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.sql"
    with pytest.raises(UnreadableDumpError) as caught:
        open_dump(path)
    assert str(caught.value) == (
        f"cannot read {path}: No such file or directory; check that the file exists and the worker's user can read it"
    )


def test_directory_instead_of_file(tmp_path: Path) -> None:
    """Root reads any file whatever its mode, so a directory stands in for "permission denied": the user
    sees the reason the OS gives (here "Is a directory") and what to check."""
    with pytest.raises(UnreadableDumpError, match=r"cannot read .*: Is a directory; check that the file exists"):
        open_dump(tmp_path)


def test_permission_denied(tmp_path: Path) -> None:
    """The worker may run as a user that cannot read the file. Root reads anything, so the child imports the
    code as root, then becomes nobody before opening the dump."""
    path = tmp_path / "secret.sql"
    path.write_bytes(SQL)
    path.chmod(0o600)
    code = (
        "import os, sys; from pathlib import Path\n"
        "from worker.runners.dump_stream import open_dump, UnreadableDumpError\n"
        "if os.geteuid() == 0:\n    os.setgroups([]); os.setgid(65534); os.setuid(65534)\n"
        "try:\n    open_dump(Path(sys.argv[1]))\nexcept UnreadableDumpError as error:\n    print(error)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(path)],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": f"{REPO_ROOT / 'backend'}:{REPO_ROOT}"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        f"cannot read {path}: Permission denied; check that the file exists and the worker's user can read it"
    )


@pytest.mark.parametrize(("magic", "name"), [(b"\xfd7zXZ\x00\x00", "xz"), (b"PK\x03\x04", "zip")])
def test_unsupported_compression_is_named(tmp_path: Path, magic: bytes, name: str) -> None:
    path = tmp_path / "dump.sql.gz"
    path.write_bytes(magic + b"\x00" * 100)
    with pytest.raises(
        UnreadableDumpError, match=f"is {name}-compressed, which restorescope does not read; .* gzip, zstd or bzip2"
    ):
        open_dump(path)


def test_empty_plain_file_yields_nothing(tmp_path: Path) -> None:
    path = tmp_path / "empty.sql"
    path.touch()
    assert read_all(path) == b""


def test_gzip_output_stays_bounded_for_highly_compressible_data(tmp_path: Path) -> None:
    path = tmp_path / "zeros.gz"
    path.write_bytes(zlib.compress(b"-" * (64 << 20), wbits=31))  # ~64 KB on disk
    with open_dump(path) as reader:
        sizes = [len(chunk) for chunk in reader.chunks(1 << 20)]
    assert max(sizes) <= 1 << 20
    assert sum(sizes) == 64 << 20


def test_dump_errors_share_one_base() -> None:
    for error in (UnreadableDumpError, TruncatedDumpError, CorruptDumpError):
        assert issubclass(error, DumpError)


@pytest.mark.parametrize("block", [1, 3, 7, 1000])
def test_bzip2_streams_split_anywhere_across_reads_decode_whole(block: int) -> None:
    """pbzip2 writes many streams; a read may end inside the next one's header (a 64 KiB read does, now and
    then), and the decoder must wait for the rest of it, not call it damage nor read a byte twice."""
    data = SQL[:300_000]
    blob = b"".join(bz2.compress(data[i : i + 60_000]) for i in range(0, len(data), 60_000))
    decoder = _Bzip2Decoder(Path("dump.sql.bz2"), 1 << 12)
    out = b"".join(piece for i in range(0, len(blob), block) for piece in decoder.decode(blob[i : i + block]))
    assert out == data and not decoder.ended_mid_stream()
