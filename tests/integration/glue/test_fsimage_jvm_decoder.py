"""The inventory job's JVM decoder (hdfsevents.glue.FsImageParts, glue_jobs/jvm) on crafted
bytes (tests/kit/fsimage_bytes.py, the tests' own encoder): what a saver could write but a
NameNode does not write on demand (multi-byte keys, unknown fields of every wire type, fields
in any order, unpacked repeats, expanded string tables, zlib and gzip sections cut in
sub-sections) and broken parts, each row and each error written out here. The images NameNodes
wrote are compared with Hadoop's own `hdfs oiv -p Delimited` in test_namespace_inventory.py."""

from __future__ import annotations

import json
import struct
from typing import Any

import pytest

from glue_jobs import namespace_inventory as job
from glue_jobs.catalog import JsonFileCatalog
from glue_jobs.inventory_image import (
    PART_DDL,
    decoded_directories,
    decoded_inodes,
    decoded_links,
)
from glue_jobs.layout import INVENTORY_LOCAL_CATALOG_KEY
from hdfs_events.lake_layout import INVENTORY_TABLE, fsimage_key
from tests.integration.glue.lake import RawLake
from tests.kit.fsimage_bytes import (
    b,
    delimit,
    enc_varint,
    f32,
    f64,
    image,
    inode_dir,
    inode_file,
    key,
    permission,
    string_table,
    v,
)

pytestmark = pytest.mark.slow

BASE = 1_000  # the part's offset in its image: errors name image bytes
STRINGS = string_table({1: "alice", 2: "analysts"})
# dfs.image.expanded.string.tables: USER (ordinal 1) and GROUP (2) each number from 1, the
# table keys them with the ordinal in the top mask_bits (30 for four managers) bits.
EXPANDED = string_table({1 << 30 | 1: "bob", 2 << 30 | 1: "eng"}, mask_bits=2)
UNKNOWN = v(99, 1 << 40) + f64(100, 5) + b(2047, b"future") + f32(18_000, 7)
SYMLINK = (v(1, 3) + v(2, 16_400) + b(3, "latest")
           + b(6, f64(1, permission(1, 2, 0o777)) + b(2, "/data/a.csv") + v(3, 11) + v(4, 12)))
INODES = [
    inode_dir(16_385, "", ns=(1 << 63) - 1),
    inode_dir(16_386, "data", ns=10_000, ds=3 * 1024**3, mode=0o1777),
    inode_dir(16_387, "quota-free"),  # uint64 -1 quotas: Java's long -1
    inode_file(16_388, "a.csv", blocks=(134_217_728, 5), extra=UNKNOWN),
    inode_file(16_389, "ec.bin", extra=v(10, 7) + v(11, 1) + v(12, 4)),
    inode_file(16_390, "open.log", extra=b(7, b(1, "DFSClient_1") + b(2, "host"))),
    inode_file(16_391, "é-ü.txt", perm=permission(1, 1, 0o600)),
    SYMLINK,
    # an unknown field with a two-byte key before the type: fields are read in any order
    b(2047, b"x") + v(2, 16_392) + b(3, "late-type") + v(1, 1) + b(4, v(1, 2) + v(2, 9)),
]
# tests/kit/fsimage_bytes.py's times: every file's mtime and atime, every directory's mtime
MTIME, ATIME, DIR_MTIME, BLOCK = 1_700_000_000_123, 1_700_000_100_456, 1_700_000_000_000, 134_217_728


def expected_inodes(user: str, group: str | None, group_1: str) -> list[tuple[Any, ...]]:
    """INODES as INODE_DDL rows, sorted by id. `group`: the name of group serial 2 (every
    inode's but 16391's), `group_1` that of group serial 1 (16391's)."""
    directory = (0, 0, 0, 0, 0, None, False)  # replication .. under_construction
    file = (3, BLOCK)
    return [
        (16_385, "DIRECTORY", "", DIR_MTIME, 0, user, group, 0o755, *directory,
         (1 << 63) - 1, -1, None),
        (16_386, "DIRECTORY", "data", DIR_MTIME, 0, user, group, 0o1777, *directory,
         10_000, 3 * 1024**3, None),
        (16_387, "DIRECTORY", "quota-free", DIR_MTIME, 0, user, group, 0o755, *directory,
         -1, -1, None),
        (16_388, "FILE", "a.csv", MTIME, ATIME, user, group, 0o644, *file, 2, BLOCK + 5, 0, None,
         False, 0, 0, None),
        (16_389, "FILE", "ec.bin", MTIME, ATIME, user, group, 0o644, *file, 0, 0, 7, 4, False,
         0, 0, None),
        (16_390, "FILE", "open.log", MTIME, ATIME, user, group, 0o644, *file, 0, 0, 0, None, True,
         0, 0, None),
        (16_391, "FILE", "é-ü.txt", MTIME, ATIME, user, group_1, 0o600, *file, 0, 0, 0, None,
         False, 0, 0, None),
        # its INodeFile holds replication 2 and mtime 9 only: the rest are protobuf's defaults,
        # no owner or group (permission 0 names string 0, which no table holds)
        (16_392, "FILE", "late-type", 9, 0, None, None, 0, 2, 0, 0, 0, 0, None, False, 0, 0,
         None),
        (16_400, "SYMLINK", "latest", 11, 12, user, group, 0o777, *directory, 0, 0,
         "/data/a.csv"),
    ]


def parts(spark: Any, *data: bytes, header: bool = False, section: str = "INODE_SUB") -> Any:
    return spark.createDataFrame([(section, BASE, header and i == 0, raw)
                                  for i, raw in enumerate(data)], PART_DDL)


@pytest.mark.parametrize(("table", "names"), [
    (STRINGS, ("alice", "analysts", "alice")),
    (EXPANDED, ("bob", None, "eng")),  # group serial 2 is not in the expanded table
], ids=["plain", "expanded"])
def test_crafted_inodes_decode_to_every_field(spark, table: bytes,
                                              names: tuple[str, str | None, str]) -> None:
    header = v(1, 16_392) + v(2, len(INODES))
    first, second = delimit(header, *INODES[:4]), delimit(*INODES[4:])
    frame = decoded_inodes(parts(spark, first, second, header=True), (table, 0))
    assert sorted(tuple(r) for r in frame.collect()) == expected_inodes(*names)


def test_crafted_directories_are_counted_and_listed_with_their_names(spark) -> None:
    context = spark.sparkContext._jsc.sc()
    inodes, directories = context.longAccumulator(), context.longAccumulator()
    frame = decoded_directories(parts(spark, delimit(*INODES)), inodes, directories)
    assert sorted(tuple(r) for r in frame.collect()) == [
        (16_385, ""), (16_386, "data"), (16_387, "quota-free")]
    assert (inodes.value(), directories.value()) == (len(INODES), 3)


def test_crafted_children_packed_unpacked_and_by_reference_become_links(spark) -> None:
    entries = delimit(v(1, 16_386) + b(2, enc_varint(20_000) + enc_varint(300)) + v(2, 5)
                      + v(3, 1) + UNKNOWN,
                      v(1, 16_385) + b(2, enc_varint(16_386)) + b(3, enc_varint(0)))
    referred = struct.pack("<2Q", 16_500, 16_501)
    frame = decoded_links(parts(spark, entries, section="INODE_DIR_SUB"), referred)
    assert sorted(tuple(r) for r in frame.collect()) == sorted([
        (20_000, 16_386), (300, 16_386), (5, 16_386), (16_501, 16_386),  # packed, unpacked, ref
        (16_386, 16_385), (16_500, 16_385)])


def test_a_reference_the_section_does_not_hold_stops_the_decode_naming_it(spark) -> None:
    entries = delimit(v(1, 16_386) + v(3, 2))
    with pytest.raises(Exception, match="ImageFormatError: INODE_DIR: directory 16386 lists "
                       "reference 2, the INODE_REFERENCE section holds 1"):
        decoded_links(parts(spark, entries, section="INODE_DIR_SUB"),
                      struct.pack("<Q", 16_500)).collect()


FIRST = len(delimit(INODES[0]))  # 48 bytes: the part's second message starts there


@pytest.mark.parametrize(("data", "error"), [
    # a message past the part: its length (200) read at FIRST, its body from FIRST + 2
    (delimit(INODES[0]) + enc_varint(200) + INODES[1],
     f"at byte {BASE + FIRST + 2}: message of 200 bytes runs 161 bytes past the end"),
    # a field past its message: the field's bytes start after its key and length
    (delimit(v(1, 1) + v(2, 7) + b(3, "x") + key(4, 2) + enc_varint(90) + b"ab"),
     f"at byte {BASE + 10}: field 4 runs 88 bytes past its message"),
    (delimit(v(1, 9) + v(2, 7)), f"at byte {BASE + 1}: inode 7: unknown type 9"),
    (delimit(v(1, 1) + v(2, 7) + b(3, "x")),
     f"at byte {BASE + 1}: inode 7: FILE without its file message"),
    (delimit(v(1, 1) + key(5, 3) + v(2, 7)),
     f"at byte {BASE + 4}: field 5: unsupported wire type 3"),
    (delimit(INODES[0]) + b"\xff", f"at byte {BASE + FIRST}: truncated varint"),
    (delimit(v(1, 1) + v(2, 7) + b(4, f64(5, 1)[:5])),
     f"at byte {BASE + 8}: field 5: truncated fixed64"),
], ids=["message", "field", "type", "body", "group", "varint", "fixed64"])
def test_a_crafted_broken_part_stops_the_decode_naming_its_section_and_byte(
        spark, data: bytes, error: str) -> None:
    with pytest.raises(Exception) as jvm:
        decoded_inodes(parts(spark, data), (STRINGS, 0)).collect()
    assert f"ImageFormatError: INODE_SUB {error}\n" in str(jvm.value)


# -- a crafted whole image, through the job's entry ------------------------------------------

# / -> data (dir) -> a.csv (two blocks), moved.csv (a reference child, renamed under a
# snapshot); ghost.csv is kept by a snapshot only (in no directory: no row); dir2 holds nothing.
ROOT, DATA, A, MOVED, GHOST, DIR2 = 16_385, 16_386, 16_387, 16_388, 16_389, 16_390
WHOLE = [inode_dir(ROOT, "", ns=(1 << 63) - 1), inode_dir(DATA, "data", mode=0o1777),
         inode_file(A, "a.csv", blocks=(BLOCK, 5)), inode_file(MOVED, "moved.csv", blocks=(7,)),
         inode_file(GHOST, "ghost.csv"), inode_dir(DIR2, "dir2")]
WHOLE_HEADER = v(1, DIR2) + v(2, len(WHOLE))
TXID = 4_242


def crafted_image(codec: str | None) -> bytes:
    """NS_INFO, STRING_TABLE, INODE in three sub-sections (the header alone, then 2 and 4
    inodes), INODE_REFERENCE (a WithName reference a snapshot keeps, then the DstReference in
    the tree) and INODE_DIR in two."""
    inode_section = delimit(WHOLE_HEADER, *WHOLE)
    dirs = [v(1, ROOT) + b(2, enc_varint(DATA) + enc_varint(DIR2)),
            v(1, DATA) + b(2, enc_varint(A)) + b(3, enc_varint(1))]
    return image([
        ("NS_INFO", delimit(v(1, 7_000_001) + v(5, 1_073_741_900) + v(6, TXID))),
        ("STRING_TABLE", STRINGS),
        ("INODE", inode_section),
        ("INODE_REFERENCE", delimit(v(1, GHOST) + b(2, "old.csv") + v(4, 3),
                                    v(1, MOVED) + v(3, 4))),
        ("INODE_DIR", delimit(*dirs))],
        codec=codec, subsections={"INODE": [len(delimit(WHOLE_HEADER)),
                                            len(delimit(WHOLE_HEADER, *WHOLE[:2]))],
                                  "INODE_DIR": [len(delimit(dirs[0]))]})


@pytest.mark.parametrize("codec", [None, "org.apache.hadoop.io.compress.DefaultCodec",
                                   "org.apache.hadoop.io.compress.GzipCodec"])
def test_a_crafted_image_in_compressed_sub_sections_gives_the_tree_through_references(
        spark, lake: RawLake, codec: str | None, capsys) -> None:
    key_ = fsimage_key("c1", TXID)
    lake.s3.put_object(Bucket=lake.bucket, Key=key_, Body=crafted_image(codec))
    capsys.readouterr()
    assert job.main(["--image", f"s3://{lake.bucket}/{key_}", "--cluster", "c1", "--target",
                     lake.uri, "--image_date", "2026-11-27"], spark=spark) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["inode_parts"], report["inode_decode_tasks"], report["directory_parts"]) == (
        3, 3, 2)
    location = JsonFileCatalog(lake.store, INVENTORY_LOCAL_CATALOG_KEY, INVENTORY_TABLE
                               ).locations()[("c1", "2026-11-27")]
    rows = {r["path"]: r for r in (r.asDict() for r in spark.read.parquet(location).collect())}
    assert {p: (r["type"], r["size"], r["blocks"], r["perms"], r["owner"], r["group"],
                r["image_txid"]) for p, r in rows.items()} == {
        "/": ("DIRECTORY", 0, 0, "0755", "alice", "analysts", TXID),
        "/data": ("DIRECTORY", 0, 0, "1777", "alice", "analysts", TXID),
        "/data/a.csv": ("FILE", BLOCK + 5, 2, "0644", "alice", "analysts", TXID),
        "/data/moved.csv": ("FILE", 7, 1, "0644", "alice", "analysts", TXID),
        "/dir2": ("DIRECTORY", 0, 0, "0755", "alice", "analysts", TXID)}
    assert (rows["/data/a.csv"]["mtime"], rows["/data/a.csv"]["atime"]) == (MTIME, ATIME)
    assert rows["/"]["ns_quota"] == (1 << 63) - 1 and rows["/dir2"]["ns_quota"] == -1


def test_a_crafted_image_of_an_unsupported_codec_stops_the_run_naming_it(
        lake: RawLake) -> None:
    img = crafted_image("org.apache.hadoop.io.compress.DefaultCodec")
    img = img.replace(b"DefaultCodec", b"SnappyCodec\x00")  # same length, summary stays valid
    key_ = fsimage_key("c1", TXID)
    lake.s3.put_object(Bucket=lake.bucket, Key=key_, Body=img)
    with pytest.raises(SystemExit, match=r"NS_INFO at byte \d+: codec "
                       r"'org.apache.hadoop.io.compress.SnappyCodec\\x00' is not supported"):
        job.main(["--image", f"s3://{lake.bucket}/{key_}", "--cluster", "c1", "--target",
                  lake.uri])

