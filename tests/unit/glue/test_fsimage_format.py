"""The fsimage reader on hand-built bytes: the wire format's corner cases and the errors.

Real images (Hadoop's own saver, checked field by field against `hdfs oiv -p Delimited`) are in
tests/integration/hdfs/test_fsimage_reader.py; these build the bytes a saver could write but
the kit's images do not hold (multi-byte keys, unknown fields, unpacked repeats, codecs,
expanded string tables) and broken ones.
"""

from __future__ import annotations

import pytest

from glue_jobs.fsimage_format import (
    ImageFormatError,
    read_directory_entries,
    read_name_system,
    read_summary,
    section_data,
)
from glue_jobs.fsimage_inodes import INodeKind, read_inodes, read_string_table, symbolic_mode
from glue_jobs.fsimage_namespace import ROOT_INODE_ID, read_namespace
from glue_jobs.fsimage_wire import WireError, varint
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

# -- hand-built images (tests/kit/fsimage_bytes.py, the tests' own encoder) --------------------


STRINGS = {1: "alice", 2: "analysts"}
# / -> data (dir) -> a.csv (two blocks) and moved.csv (a reference child); ghost.csv is kept by
# a snapshot only (in no directory); dir2 holds nothing.
DATA, A, MOVED, GHOST, DIR2 = 16386, 16387, 16388, 16389, 16390
INODES = [
    inode_dir(ROOT_INODE_ID, "", ns=(1 << 63) - 1),
    inode_dir(DATA, "data", ns=10_000, ds=3 * 1024**3, mode=0o1777),
    inode_file(A, "a.csv", blocks=(134_217_728, 5)),
    inode_file(MOVED, "moved.csv", blocks=(7,)),
    inode_file(GHOST, "ghost.csv"),
    inode_dir(DIR2, "dir2"),
]
DIRS = [v(1, ROOT_INODE_ID) + b(2, enc_varint(DATA) + enc_varint(DIR2)),
        v(1, DATA) + b(2, enc_varint(A)) + b(3, enc_varint(1))]
# position 0: a WithName reference a snapshot keeps; position 1: the DstReference in the tree
REFERENCES = [v(1, GHOST) + b(2, "old.csv") + v(4, 3), v(1, MOVED) + v(3, 4)]


def namespace_image(**kwargs: object) -> bytes:
    inode_section = delimit(v(1, DIR2) + v(2, len(INODES)), *INODES)
    return image([("STRING_TABLE", string_table(STRINGS)),
                  ("INODE", inode_section),
                  ("INODE_REFERENCE", delimit(*REFERENCES)),
                  ("INODE_DIR", delimit(*DIRS))], **kwargs)  # type: ignore[arg-type]


EXPECTED_PATHS = {"/": ROOT_INODE_ID, "/data": DATA, "/data/a.csv": A,
                  "/data/moved.csv": MOVED, "/dir2": DIR2}

# -- the wire format ---------------------------------------------------------------------------


@pytest.mark.parametrize("value", [0, 1, 127, 128, 300, 16_384, 1_700_000_000_123,
                                   (1 << 63) - 1, (1 << 64) - 1])
def test_varints_of_every_length_decode(value: int) -> None:
    raw = enc_varint(value) + b"\x05"
    assert varint(raw, 0) == (value, len(raw) - 1)


def test_an_eleven_byte_varint_is_refused() -> None:
    with pytest.raises(WireError, match="longer than 10 bytes"):
        varint(b"\xff" * 11 + b"\x01", 0)


def test_a_varint_cut_short_names_its_position() -> None:
    with pytest.raises(WireError, match="at byte 2: truncated varint"):
        varint(b"\x01\x02\xff\xff", 2)


def test_unknown_fields_of_every_wire_type_are_skipped() -> None:
    unknown = v(99, 1 << 40) + f64(100, 5) + b(2047, b"future") + f32(18_000, 7)
    node = inode_file(A, "a.csv", blocks=(10, 20), extra=unknown)
    strings = read_string_table(string_table(STRINGS))
    (read,) = read_inodes(delimit(node), strings, header=False)
    assert (read.kind, read.name, read.replication, read.size, read.blocks) == (
        INodeKind.FILE, "a.csv", 3, 30, 2)
    assert (read.mtime, read.atime, read.preferred_block_size) == (
        1_700_000_000_123, 1_700_000_100_456, 134_217_728)
    assert (read.user, read.group, read.mode) == ("alice", "analysts", 0o644)


def test_storage_policy_and_erasure_coding_ids_are_read() -> None:
    node = inode_file(A, "ec.bin", extra=v(10, 7) + v(11, 1) + v(12, 4))
    (read,) = read_inodes(delimit(node), read_string_table(string_table(STRINGS)),
                          header=False)
    assert (read.storage_policy_id, read.erasure_coding_policy_id) == (7, 4)


def test_children_are_read_packed_and_unpacked() -> None:
    entry = v(1, DATA) + b(2, enc_varint(20_000) + enc_varint(300)) + v(2, 5) + v(3, 2)
    (read,) = read_directory_entries(delimit(entry))
    assert (read.parent, read.children, read.reference_children) == (DATA, (20_000, 300, 5),
                                                                     (2,))


def test_quotas_of_minus_one_read_as_java_longs() -> None:
    (read,) = read_inodes(delimit(inode_dir(DATA, "d")), read_string_table(string_table({})),
                          header=False)
    assert (read.ns_quota, read.ds_quota) == (-1, -1)


def test_expanded_string_tables_key_users_and_groups_apart() -> None:
    # dfs.image.expanded.string.tables: USER (ordinal 1) and GROUP (2) each number from 1,
    # the table keys them with the ordinal in the top mask_bits (30 for four managers) bits.
    table = string_table({1 << 30 | 1: "bob", 2 << 30 | 1: "eng"}, mask_bits=2)
    node = inode_file(A, "x", perm=permission(1, 1, 0o600))
    (read,) = read_inodes(delimit(node), read_string_table(table), header=False)
    assert (read.user, read.group) == ("bob", "eng")


@pytest.mark.parametrize(("mode", "text"), [(0o755, "rwxr-xr-x"), (0o1777, "rwxrwxrwt"),
                                            (0o1776, "rwxrwxrwT"), (0o000, "---------")])
def test_symbolic_mode_is_fs_permissions(mode: int, text: str) -> None:
    assert symbolic_mode(mode) == text


# -- whole images ------------------------------------------------------------------------------


def test_paths_join_the_directory_tree_and_references() -> None:
    rows = {path: node for path, node in read_namespace(namespace_image())}
    assert {path: node.id for path, node in rows.items()} == EXPECTED_PATHS
    assert rows["/data"].mode == 0o1777 and rows["/data"].ns_quota == 10_000
    assert rows["/"].ns_quota == (1 << 63) - 1
    assert rows["/data/a.csv"].size == 134_217_733


def test_ns_info_gives_the_transaction_the_image_holds() -> None:
    ns = delimit(v(1, 7_000_001) + v(2, 1000) + v(3, 1_500_000) + v(5, 1_073_741_900)
                 + v(6, 123_456_789_012))
    read = read_name_system(ns)
    assert (read.namespace_id, read.transaction_id, read.last_allocated_block_id) == (
        7_000_001, 123_456_789_012, 1_073_741_900)


def test_the_layout_version_reads_negative_as_hadoop_writes_it() -> None:
    assert read_summary(namespace_image()).layout_version == -66


@pytest.mark.parametrize("codec", ["org.apache.hadoop.io.compress.DefaultCodec",
                                   "org.apache.hadoop.io.compress.GzipCodec"])
def test_compressed_sections_in_compressed_sub_sections_read_the_same(codec: str) -> None:
    # INODE cut after its header and after the third inode: three streams back to back
    cuts = [len(delimit(v(1, DIR2) + v(2, len(INODES)))),
            len(delimit(v(1, DIR2) + v(2, len(INODES)), *INODES[:3]))]
    img = namespace_image(codec=codec, subsections={"INODE": cuts})
    summary = read_summary(img)
    assert summary.codec == codec and len(summary.parts("INODE")) == 3
    assert {p: n.id for p, n in read_namespace(img)} == EXPECTED_PATHS


def test_uncompressed_sub_sections_read_part_by_part() -> None:
    cut = len(delimit(v(1, DIR2) + v(2, len(INODES)), *INODES[:2]))
    img = namespace_image(subsections={"INODE": [cut], "INODE_DIR": [len(delimit(DIRS[0]))]})
    summary = read_summary(img)
    first, second = summary.parts("INODE")
    strings = read_string_table(img[summary.section("STRING_TABLE").offset:][
        :summary.section("STRING_TABLE").length])
    ids = [n.id for n in read_inodes(img[first.offset:first.offset + first.length], strings)]
    ids += [n.id for n in read_inodes(img[second.offset:second.offset + second.length],
                                      strings, header=False)]
    assert ids == [ROOT_INODE_ID, DATA, A, MOVED, GHOST, DIR2]
    assert len(summary.parts("INODE_DIR")) == 2
    assert {p: n.id for p, n in read_namespace(img)} == EXPECTED_PATHS


def test_an_unsupported_codec_is_named() -> None:
    img = namespace_image(codec="org.apache.hadoop.io.compress.DefaultCodec")
    img = img.replace(b"DefaultCodec", b"SnappyCodec\x00")  # same length, summary stays valid
    with pytest.raises(ImageFormatError, match=r"STRING_TABLE at byte \d+: codec "
                       r"'org.apache.hadoop.io.compress.SnappyCodec\\x00' is not supported"):
        list(read_namespace(img))


# -- broken images -----------------------------------------------------------------------------


def test_a_bad_magic_is_refused_at_byte_0() -> None:
    with pytest.raises(ImageFormatError, match="header at byte 0: magic is b'HDFSIMG2'"):
        read_summary(b"HDFSIMG2" + namespace_image()[8:])


def test_a_summary_length_past_the_start_is_refused() -> None:
    img = namespace_image()
    with pytest.raises(ImageFormatError, match=r"FileSummary at byte \d+: length \d+ reaches before"):
        read_summary(img[:-4] + (len(img)).to_bytes(4, "big"))


def test_a_truncated_image_names_the_section_that_no_longer_fits() -> None:
    img = namespace_image()
    summary = read_summary(img)
    inode = summary.section("INODE")
    cut = img[:inode.offset + 10]
    with pytest.raises(ImageFormatError, match=f"INODE at byte {inode.offset}: truncated"):
        section_data(cut, summary, inode)


def test_a_message_cut_inside_the_inode_section_names_section_and_offset() -> None:
    inode_section = delimit(v(1, DIR2) + v(2, 2), INODES[0]) + enc_varint(200) + INODES[1]
    img = image([("STRING_TABLE", string_table(STRINGS)), ("INODE", inode_section),
                 ("INODE_DIR", b"")])
    start = read_summary(img).section("INODE").offset
    at = start + len(delimit(v(1, DIR2) + v(2, 2), INODES[0])) + 2
    with pytest.raises(ImageFormatError,
                       match=f"INODE at byte {at}: message of 200 bytes runs"):
        list(read_namespace(img))


def test_sub_sections_that_do_not_cover_their_section_are_refused() -> None:
    img = bytearray(namespace_image(subsections={"INODE": [40]}))
    summary = read_summary(bytes(img))
    second = summary.parts("INODE")[1]
    # lie about the second sub-section's length (same varint width), rebuilding the summary
    patched = img.replace(b"INODE_SUB" + key(2, 0)[0:1] + enc_varint(second.length),
                          b"INODE_SUB" + key(2, 0)[0:1] + enc_varint(second.length - 1))
    with pytest.raises(ImageFormatError, match="INODE_SUB sections cover"):
        read_summary(bytes(patched)).parts("INODE")
