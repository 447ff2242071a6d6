"""The inventory job's JVM decoder (hdfsevents.glue.FsImageParts, glue_jobs/jvm) against the
Python reader (glue_jobs.fsimage_inodes, fsimage_format) on hand-built parts: the same rows and
the same error words. The real images (the kit's, a live NameNode's) are compared whole in
test_namespace_inventory.py; these are the bytes a saver could write but those images do not
hold (multi-byte keys, unknown fields of every wire type, unpacked repeats, expanded string
tables) and broken parts."""

from __future__ import annotations

import struct
from typing import Any

import pytest

from glue_jobs.fsimage_format import ImageFormatError, read_directory_entries
from glue_jobs.fsimage_inodes import read_inodes, read_string_table
from glue_jobs.inventory_image import (
    PART_DDL,
    decoded_directories,
    decoded_inodes,
    decoded_links,
)
from tests.kit.fsimage_bytes import (
    b,
    delimit,
    enc_varint,
    f32,
    f64,
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


def parts(spark: Any, *data: bytes, header: bool = False, section: str = "INODE_SUB") -> Any:
    return spark.createDataFrame([(section, BASE, header and i == 0, raw)
                                  for i, raw in enumerate(data)], PART_DDL)


def python_rows(data: bytes, table: bytes, *, header: bool = False) -> list[tuple[Any, ...]]:
    strings = read_string_table(table)
    return [(n.id, n.kind.name, n.name, n.mtime, n.atime, n.user, n.group, n.mode,
             n.replication, n.preferred_block_size, n.blocks, n.size, n.storage_policy_id,
             n.erasure_coding_policy_id, n.under_construction, n.ns_quota, n.ds_quota,
             n.symlink_target)
            for n in read_inodes(data, strings, header=header, base=BASE, section="INODE_SUB")]


@pytest.mark.parametrize("table", [STRINGS, EXPANDED], ids=["plain", "expanded"])
def test_inodes_decode_as_the_python_reader_reads_them(spark, table: bytes) -> None:
    header = v(1, 16_392) + v(2, len(INODES))
    first, second = delimit(header, *INODES[:4]), delimit(*INODES[4:])
    frame = decoded_inodes(parts(spark, first, second, header=True), (table, 0))
    ours = sorted(tuple(r) for r in frame.collect())
    theirs = sorted(python_rows(first, table, header=True) + python_rows(second, table))
    assert ours == theirs and len(ours) == len(INODES)
    by_id = {r[0]: r for r in ours}
    assert by_id[16_387][15:17] == (-1, -1) and by_id[16_388][11] == 134_217_733
    assert by_id[16_390][14] and by_id[16_400][17] == "/data/a.csv"


def test_directories_are_counted_and_listed_with_their_names(spark) -> None:
    context = spark.sparkContext._jsc.sc()
    inodes, directories = context.longAccumulator(), context.longAccumulator()
    frame = decoded_directories(parts(spark, delimit(*INODES)), inodes, directories)
    assert sorted(tuple(r) for r in frame.collect()) == [
        (16_385, ""), (16_386, "data"), (16_387, "quota-free")]
    assert (inodes.value(), directories.value()) == (len(INODES), 3)


def test_children_packed_unpacked_and_by_reference_become_links(spark) -> None:
    entries = delimit(v(1, 16_386) + b(2, enc_varint(20_000) + enc_varint(300)) + v(2, 5)
                      + v(3, 1) + UNKNOWN,
                      v(1, 16_385) + b(2, enc_varint(16_386)) + b(3, enc_varint(0)))
    referred = struct.pack("<2Q", 16_500, 16_501)
    frame = decoded_links(parts(spark, entries, section="INODE_DIR_SUB"), referred)
    expected = sorted((child, e.parent) for e in read_directory_entries(entries)
                      for child in e.children)
    expected += [(16_501, 16_386), (16_500, 16_385)]
    assert sorted(tuple(r) for r in frame.collect()) == sorted(expected)


def test_a_reference_the_section_does_not_hold_stops_the_decode_naming_it(spark) -> None:
    entries = delimit(v(1, 16_386) + v(3, 2))
    with pytest.raises(Exception, match="ImageFormatError: INODE_DIR: directory 16386 lists "
                       "reference 2, the INODE_REFERENCE section holds 1"):
        decoded_links(parts(spark, entries, section="INODE_DIR_SUB"),
                      struct.pack("<Q", 16_500)).collect()


@pytest.mark.parametrize("data", [
    delimit(INODES[0]) + enc_varint(200) + INODES[1],  # a message past the part
    delimit(v(1, 1) + v(2, 7) + b(3, "x") + key(4, 2) + enc_varint(90) + b"ab"),  # a field past it
    delimit(v(1, 9) + v(2, 7)),  # an unknown inode type
    delimit(v(1, 1) + v(2, 7) + b(3, "x")),  # a file without its INodeFile
    delimit(v(1, 1) + key(5, 3) + v(2, 7)),  # a group (wire type 3)
    delimit(INODES[0]) + b"\xff",  # a varint cut short
    delimit(v(1, 1) + v(2, 7) + b(4, f64(5, 1)[:5])),  # a fixed64 cut short
], ids=["message", "field", "type", "body", "group", "varint", "fixed64"])
def test_a_broken_part_stops_the_decode_with_the_python_readers_words(spark, data: bytes
                                                                     ) -> None:
    with pytest.raises(ImageFormatError) as python:
        python_rows(data, STRINGS)
    with pytest.raises(Exception) as jvm:
        decoded_inodes(parts(spark, data), (STRINGS, 0)).collect()
    assert f"ImageFormatError: {python.value}\n" in str(jvm.value)
