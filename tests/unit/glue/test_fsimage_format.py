"""What the inventory job's driver reads of an fsimage in Python (glue_jobs.fsimage_format), on
hand-built bytes: the summary and its sub-sections, a part's bytes decompressed alone, NS_INFO,
INODE_REFERENCE, the wire format under them, and the errors.

Real images (Hadoop's own saver, the job's rows checked against `hdfs oiv -p Delimited`) are in
tests/integration/glue/test_namespace_inventory.py; the JVM decoder of the inodes and the
directory tree on crafted bytes in tests/integration/glue/test_fsimage_jvm_decoder.py.
"""

from __future__ import annotations

import pytest

from glue_jobs.fsimage_format import (
    ImageFormatError,
    ImageSummary,
    check_magic,
    part_data,
    read_name_system,
    read_referred_ids,
    read_summary_tail,
)
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
    string_table,
    v,
)

HEADER = v(1, 16_390) + v(2, 3)
INODES = [inode_dir(16_385, ""), inode_dir(16_386, "data"), inode_file(16_387, "a.csv")]
INODE_SECTION = delimit(HEADER, *INODES)
DIRS = delimit(v(1, 16_385) + b(2, enc_varint(16_386)), v(1, 16_386) + b(2, enc_varint(16_387)))
UNKNOWN = v(99, 1 << 40) + f64(100, 5) + b(2047, b"future") + f32(18_000, 7)


def kit_image(**kwargs: object) -> bytes:
    return image([("STRING_TABLE", string_table({1: "alice"})), ("INODE", INODE_SECTION),
                  ("INODE_DIR", DIRS)], **kwargs)  # type: ignore[arg-type]


def summary_of(img: bytes) -> ImageSummary:
    check_magic(img)
    return read_summary_tail(img, len(img))


def read_part(img: bytes, summary: ImageSummary, name: str, index: int = 0) -> bytes:
    part = summary.parts(name)[index]
    return part_data(img[part.offset:part.offset + part.length], summary, part)


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


# -- the small sections ------------------------------------------------------------------------


def test_ns_info_gives_the_transaction_the_image_holds_past_unknown_fields() -> None:
    ns = delimit(v(1, 7_000_001) + v(2, 1000) + UNKNOWN + v(3, 1_500_000) + v(5, 1_073_741_900)
                 + v(6, 123_456_789_012))
    read = read_name_system(ns)
    assert (read.namespace_id, read.transaction_id, read.last_allocated_block_id) == (
        7_000_001, 123_456_789_012, 1_073_741_900)


def test_references_give_their_referred_ids_in_order() -> None:
    # position 0: a WithName reference a snapshot keeps; position 1: a DstReference in the tree
    refs = delimit(v(1, 16_389) + b(2, "old.csv") + v(4, 3), v(1, 16_388) + v(3, 4) + UNKNOWN)
    assert read_referred_ids(refs) == [16_389, 16_388]


def test_a_reference_cut_short_names_the_section_and_the_image_byte() -> None:
    # the message's length (1 byte), field 1 (4), field 2's key and length (2): its bytes at 7
    with pytest.raises(ImageFormatError, match="INODE_REFERENCE at byte 507: field 2 runs 1 "
                       "bytes past its message"):
        read_referred_ids(delimit(v(1, 16_389) + key(2, 2) + enc_varint(2) + b"x"), base=500)


# -- the summary and the parts -----------------------------------------------------------------


def test_the_layout_version_reads_negative_as_hadoop_writes_it() -> None:
    assert summary_of(kit_image()).layout_version == -66


@pytest.mark.parametrize("codec", [None, "org.apache.hadoop.io.compress.DefaultCodec",
                                   "org.apache.hadoop.io.compress.GzipCodec"])
def test_sub_sections_each_decompress_alone_into_the_section(codec: str | None) -> None:
    # INODE cut after its header and after the second inode: three streams back to back
    cuts = [len(delimit(HEADER)), len(delimit(HEADER, *INODES[:2]))]
    img = kit_image(codec=codec, subsections={"INODE": cuts, "INODE_DIR": [len(DIRS) // 2]})
    summary = summary_of(img)
    assert summary.codec == codec
    assert len(summary.parts("INODE")) == 3 and len(summary.parts("INODE_DIR")) == 2
    assert b"".join(read_part(img, summary, "INODE", i) for i in range(3)) == INODE_SECTION
    assert read_part(img, summary, "INODE", 1) == delimit(INODES[0], INODES[1])
    assert read_part(img, summary, "STRING_TABLE") == string_table({1: "alice"})


def test_a_section_without_sub_sections_is_its_own_one_part() -> None:
    summary = summary_of(kit_image())
    assert summary.parts("INODE") == [summary.section("INODE")]


def test_an_unsupported_codec_is_named() -> None:
    img = kit_image(codec="org.apache.hadoop.io.compress.DefaultCodec")
    img = img.replace(b"DefaultCodec", b"SnappyCodec\x00")  # same length, summary stays valid
    summary = summary_of(img)
    with pytest.raises(ImageFormatError, match=r"STRING_TABLE at byte \d+: codec "
                       r"'org.apache.hadoop.io.compress.SnappyCodec\\x00' is not supported"):
        read_part(img, summary, "STRING_TABLE")


# -- broken images -----------------------------------------------------------------------------


def test_a_bad_magic_is_refused_at_byte_0() -> None:
    with pytest.raises(ImageFormatError, match="header at byte 0: magic is b'HDFSIMG2'"):
        check_magic(b"HDFSIMG2" + kit_image()[8:])


def test_a_summary_length_past_the_start_is_refused() -> None:
    img = kit_image()
    with pytest.raises(ImageFormatError, match=r"FileSummary at byte \d+: length \d+ reaches before"):
        summary_of(img[:-4] + (len(img)).to_bytes(4, "big"))


def test_a_truncated_part_names_its_section_and_offset() -> None:
    img = kit_image()
    summary = summary_of(img)
    inode = summary.section("INODE")
    with pytest.raises(ImageFormatError, match=f"INODE at byte {inode.offset}: truncated, "
                       f"{inode.length} bytes listed, 10 read"):
        part_data(img[inode.offset:inode.offset + 10], summary, inode)


def test_a_section_that_no_longer_fits_before_the_summary_is_named() -> None:
    img = kit_image()
    summary = summary_of(img)
    inode, dirs = summary.section("INODE"), summary.section("INODE_DIR")
    cut = img[:inode.offset] + img[inode.offset + 10:]  # 10 bytes lost inside INODE
    with pytest.raises(ImageFormatError, match=f"INODE_DIR at byte {dirs.offset}: {dirs.length} "
                       f"bytes do not fit between the header and the summary at byte "
                       f"{dirs.offset + dirs.length - 10}"):
        summary_of(cut)


def test_sub_sections_that_do_not_cover_their_section_are_refused() -> None:
    img = bytearray(kit_image(subsections={"INODE": [40]}))
    second = summary_of(bytes(img)).parts("INODE")[1]
    # lie about the second sub-section's length (same varint width), rebuilding the summary
    patched = img.replace(b"INODE_SUB" + key(2, 0)[0:1] + enc_varint(second.length),
                          b"INODE_SUB" + key(2, 0)[0:1] + enc_varint(second.length - 1))
    with pytest.raises(ImageFormatError, match="INODE_SUB sections cover"):
        summary_of(bytes(patched)).parts("INODE")
