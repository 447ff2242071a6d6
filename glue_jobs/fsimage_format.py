"""An HDFS fsimage (Hadoop 3.3's protobuf image): the file's layout and the small sections the
inventory job's driver reads itself.

    check_magic(first_8_bytes)
    summary = read_summary_tail(last_bytes, image_size)  # the section table, sub-sections included
    read_name_system(part_data(raw, summary, summary.section("NS_INFO"))).transaction_id
    for part in summary.parts("INODE"): ...               # one INODE_SUB each, or the whole section

The layout (fsimage.proto, FSImageFormatProtobuf.Saver, FSImageUtil): the magic `HDFSIMG1`,
sections of varint-length-delimited messages, then a FileSummary (delimited too) whose length
is the file's last 4 bytes, big-endian. The summary names each section with its offset and
length, and the codec (dfs.image.compression.codec) every section is compressed with, if any.
With dfs.image.parallel.load on, the saver also lists sub-sections (INODE_SUB, INODE_DIR_SUB,
...) that split a section into runs of whole messages: each part can be read on its own, which
is what lets a Spark job read the image in parallel. The first INODE part opens with the
INodeSection header (lastInodeId, numInodes).

This module: the summary, a part's bytes (decompressed), NS_INFO and INODE_REFERENCE. The
inodes (INODE, STRING_TABLE) and the directory tree (INODE_DIR) are decoded in the JVM by the
job's tasks (hdfsevents.glue.FsImageParts, glue_jobs/jvm). Field numbers are those of Hadoop
3.3.4's FsImageProto (read from its classes in hadoop-client-minicluster-3.3.4.jar).
Docs: docs/fsimage.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from glue_jobs.fsimage_wire import LENGTH, WireError, decompress, delimited, fields

MAGIC = b"HDFSIMG1"


class ImageFormatError(ValueError):
    """An image this reader cannot read, naming the section and the byte it stopped at."""


@dataclass(frozen=True, slots=True)
class Section:
    name: str
    offset: int  # from the start of the image file
    length: int


@dataclass(frozen=True, slots=True)
class ImageSummary:
    ondisk_version: int
    layout_version: int
    codec: str | None
    sections: tuple[Section, ...]  # as listed: sections and sub-sections interleaved

    def section(self, name: str) -> Section:
        found = [s for s in self.sections if s.name == name]
        if len(found) != 1:
            raise ImageFormatError(f"FileSummary lists {len(found)} {name} sections, not 1")
        return found[0]

    def has(self, name: str) -> bool:
        return any(s.name == name for s in self.sections)

    def base(self, section: Section) -> int:
        """What a reader adds to a position in section's data to name an image byte: its
        offset, or 0 when the data is decompressed (positions are then the stream's)."""
        return section.offset if self.codec is None else 0

    def parts(self, name: str) -> list[Section]:
        """The pieces `name` can be read in: its sub-sections in file order, or itself."""
        whole = self.section(name)
        subs = sorted((s for s in self.sections if s.name == f"{name}_SUB"),
                      key=lambda s: s.offset)
        if not subs:
            return [whole]
        covered = sum(s.length for s in subs)
        if subs[0].offset != whole.offset or covered != whole.length:
            raise ImageFormatError(
                f"{name}_SUB sections cover {covered} bytes from {subs[0].offset}, the {name} "
                f"section {whole.length} from {whole.offset}")
        return subs


@dataclass(frozen=True, slots=True)
class NameSystem:
    """NS_INFO: the image holds every transaction up to transaction_id; inotify from
    transaction_id + 1 continues it."""
    namespace_id: int
    transaction_id: int
    last_allocated_block_id: int


def check_magic(head: bytes) -> None:
    """head: the image's first bytes (8 suffice)."""
    if head[:len(MAGIC)] != MAGIC:
        raise ImageFormatError(f"header at byte 0: magic is {bytes(head[:8])!r}, not {MAGIC!r}")


def read_summary_tail(tail: bytes, image_size: int) -> ImageSummary:
    """The summary from the image's last len(tail) bytes (the whole image, or a ranged read of
    its end: the last 4 bytes give the summary's length). Errors name image offsets."""
    shift = image_size - len(tail)  # image offset of tail[0]
    if image_size < len(MAGIC) + 4:
        raise ImageFormatError(f"FileSummary: image of {image_size} bytes has no summary length")
    length = int.from_bytes(tail[-4:], "big")
    start = len(tail) - 4 - length
    if start + shift < len(MAGIC):
        raise ImageFormatError(f"FileSummary at byte {image_size - 4}: length {length} "
                               f"reaches before the header in a {image_size}-byte image")
    if start < 0:
        raise ImageFormatError(f"FileSummary at byte {start + shift}: {length} bytes, the "
                               f"{len(tail) - 4} read before the length do not hold it")
    ondisk = layout = 0
    codec: str | None = None
    sections: list[Section] = []
    try:
        (body, end), = delimited(tail, start, len(tail) - 4)
        for number, wire, value, after in fields(tail, body, end):
            if number == 1 and wire != LENGTH:
                ondisk = value
            elif number == 2 and wire != LENGTH:
                # an int32 written as uint32: Hadoop's layout versions are negative (-66)
                layout = value - (1 << 32) if value >= 1 << 31 else value
            elif number == 3 and wire == LENGTH:
                codec = bytes(tail[value:after]).decode() or None
            elif number == 4 and wire == LENGTH:
                sections.append(_section(tail, value, after))
    except WireError as exc:
        raise ImageFormatError(f"FileSummary at byte {exc.position + shift}: {exc.rule}"
                               ) from None
    except ValueError:
        raise ImageFormatError(f"FileSummary at byte {start + shift}: not one delimited message"
                               ) from None
    for s in sections:
        if s.offset < len(MAGIC) or s.offset + s.length > start + shift:
            raise ImageFormatError(f"{s.name} at byte {s.offset}: {s.length} bytes do not fit "
                                   f"between the header and the summary at byte {start + shift}")
    return ImageSummary(ondisk, layout, codec, tuple(sections))


def summary_length(tail: bytes) -> int:
    """How many bytes the image's end holds for the summary: its length and the 4 bytes."""
    return int.from_bytes(tail[-4:], "big") + 4


def _section(buf: bytes, start: int, end: int) -> Section:
    name, length, offset = "", 0, 0
    for number, wire, value, after in fields(buf, start, end):
        if number == 1 and wire == LENGTH:
            name = bytes(buf[value:after]).decode()
        elif number == 2 and wire != LENGTH:
            length = value
        elif number == 3 and wire != LENGTH:
            offset = value
    return Section(name, offset, length)


def part_data(raw: bytes, summary: ImageSummary, section: Section) -> bytes:
    """The messages of one section or sub-section whose bytes (`raw`) were read on their own,
    as a Spark task reads its part's byte range, decompressed when the summary names a codec:
    each sub-section is a compressed stream of its own, so it decompresses alone. Error
    positions inside decompressed bytes are relative to them (ImageSummary.base)."""
    if len(raw) != section.length:
        raise ImageFormatError(f"{section.name} at byte {section.offset}: truncated, "
                               f"{section.length} bytes listed, {len(raw)} read")
    if summary.codec is None:
        return raw
    try:
        return decompress(bytes(raw), summary.codec)
    except WireError as exc:
        raise ImageFormatError(f"{section.name} at byte {section.offset + exc.position}: "
                               f"{exc.rule}") from None


class SectionReading:
    """Turns a WireError into an ImageFormatError naming the section and the image offset."""

    def __init__(self, name: str, base: int) -> None:
        self.name, self.base = name, base

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> None:
        if isinstance(exc, WireError):
            raise ImageFormatError(f"{self.name} at byte {self.base + exc.position}: "
                                   f"{exc.rule}") from None


def read_name_system(data: bytes, *, base: int = 0) -> NameSystem:
    namespace_id = txid = last_block = 0
    with SectionReading("NS_INFO", base):
        for start, end in delimited(data):
            for number, wire, value, _ in fields(data, start, end):
                if number == 1 and wire != LENGTH:
                    namespace_id = value
                elif number == 5 and wire != LENGTH:
                    last_block = value
                elif number == 6 and wire != LENGTH:
                    txid = value
    return NameSystem(namespace_id, txid, last_block)


def read_referred_ids(data: bytes, *, base: int = 0) -> list[int]:
    """INODE_REFERENCE's referred inode ids in order: a directory's reference child (an inode
    renamed or deleted while a snapshot holds it) is a position in this list. The reference's
    other fields (the name a snapshot keeps, its snapshot ids) name no path of the current
    tree, and are skipped."""
    out = []
    with SectionReading("INODE_REFERENCE", base):
        for start, end in delimited(data):
            referred = 0
            for number, wire, value, _ in fields(data, start, end):
                if number == 1 and wire != LENGTH:
                    referred = value
            out.append(referred)
    return out
