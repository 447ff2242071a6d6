"""An HDFS fsimage (Hadoop 3.3's protobuf image) read without Hadoop: bytes in, typed rows out.

    summary = read_summary(image)                    # the section table, sub-sections included
    read_name_system(section_data(image, summary, summary.section("NS_INFO"))).transaction_id
    strings = read_string_table(section_data(image, summary, summary.section("STRING_TABLE")))
    for part in summary.parts("INODE"): ...          # one INODE_SUB each, or the whole section
        read_inodes(section_data(image, summary, part), strings)

The layout (fsimage.proto, FSImageFormatProtobuf.Saver, FSImageUtil): the magic `HDFSIMG1`,
sections of varint-length-delimited messages, then a FileSummary (delimited too) whose length
is the file's last 4 bytes, big-endian. The summary names each section with its offset and
length, and the codec (dfs.image.compression.codec) every section is compressed with, if any.
With dfs.image.parallel.load on, the saver also lists sub-sections (INODE_SUB, INODE_DIR_SUB,
...) that split a section into runs of whole messages: each part can be read on its own, which
is what lets a Spark job read the image in parallel. The first INODE part opens with the
INodeSection header (lastInodeId, numInodes), which read_inodes skips.

Paths are not in the image: a directory's children are listed in INODE_DIR by id, and a child
that is an INodeReference (a rename under a snapshot) is listed by its position in the
INODE_REFERENCE section. `PathIndex` joins them as Hadoop's `hdfs oiv -p Delimited` does
(PBImageTextWriter): the parent's path and the inode's own name; an inode under no directory of
the current tree (kept only by a snapshot) has no path. Field numbers are those of Hadoop
3.3.4's FsImageProto (read from its classes in hadoop-client-minicluster-3.3.4.jar).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from enum import Enum

from glue_jobs.fsimage_wire import (
    FIXED64,
    LENGTH,
    WireError,
    as_int64,
    decompress,
    delimited,
    fields,
    repeated_varints,
    varint,
)

MAGIC = b"HDFSIMG1"
ROOT_INODE_ID = 16385  # INodeId.ROOT_INODE_ID: 1 << 14, plus one
# The permission fixed64 (INodeWithAdditionalFields.PermissionStatusFormat): user string id in
# bits 40-63, group string id in bits 16-39, mode in bits 0-15.
_USER_SHIFT, _GROUP_SHIFT, _ID_MASK, _MODE_MASK = 40, 16, (1 << 24) - 1, (1 << 16) - 1
# SerialNumberManager's ordinals: with dfs.image.expanded.string.tables the table keys a user's
# or group's id with the manager's ordinal in its top maskBits bits.
_USER_ORDINAL, _GROUP_ORDINAL = 1, 2


class ImageFormatError(ValueError):
    """An image this reader cannot read, naming the section and the byte it stopped at."""


class INodeKind(Enum):  # INodeSection.INode.Type
    FILE = 1
    DIRECTORY = 2
    SYMLINK = 3


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


@dataclass(frozen=True, slots=True)
class StringTable:
    mask_bits: int
    strings: Mapping[int, str]

    def user(self, serial: int) -> str | None:
        return self._get(serial, _USER_ORDINAL)

    def group(self, serial: int) -> str | None:
        return self._get(serial, _GROUP_ORDINAL)

    def _get(self, serial: int, ordinal: int) -> str | None:
        if self.mask_bits:
            serial |= ordinal << (32 - self.mask_bits)
        return self.strings.get(serial)


@dataclass(frozen=True, slots=True)
class INode:
    """One INODE record. Absent fields read as protobuf's defaults (0), as Hadoop reads them;
    a striped (erasure-coded) file has no replication (0) and an erasure coding policy id."""
    id: int
    kind: INodeKind
    name: str  # "" for the root
    mtime: int  # milliseconds since the epoch
    atime: int  # files and symlinks; 0 for directories
    user: str | None
    group: str | None
    mode: int  # the permission bits, sticky bit included (0o1777 at most)
    replication: int = 0
    preferred_block_size: int = 0
    blocks: int = 0
    size: int = 0  # the sum of the blocks' lengths
    storage_policy_id: int = 0  # 0: none set on the file itself
    erasure_coding_policy_id: int | None = None  # None: a replicated file
    under_construction: bool = False
    ns_quota: int = 0  # directories: -1 for none; the root's is Long.MAX_VALUE by default
    ds_quota: int = 0
    symlink_target: str | None = None


@dataclass(frozen=True, slots=True)
class DirEntry:
    parent: int
    children: tuple[int, ...]
    reference_children: tuple[int, ...]  # positions in the INODE_REFERENCE section


@dataclass(frozen=True, slots=True)
class INodeReference:
    referred_id: int
    name: str | None  # set on a WithName reference: the name a snapshot keeps
    dst_snapshot_id: int | None
    last_snapshot_id: int | None


def read_summary(image: bytes) -> ImageSummary:
    if image[:len(MAGIC)] != MAGIC:
        raise ImageFormatError(f"header at byte 0: magic is {bytes(image[:8])!r}, not {MAGIC!r}")
    if len(image) < len(MAGIC) + 4:
        raise ImageFormatError(f"FileSummary: image of {len(image)} bytes has no summary length")
    length = int.from_bytes(image[-4:], "big")
    start = len(image) - 4 - length
    if start < len(MAGIC):
        raise ImageFormatError(f"FileSummary at byte {len(image) - 4}: length {length} "
                               f"reaches before the header in a {len(image)}-byte image")
    ondisk = layout = 0
    codec: str | None = None
    sections: list[Section] = []
    try:
        (body, end), = delimited(image, start, len(image) - 4)
        for number, wire, value, after in fields(image, body, end):
            if number == 1 and wire != LENGTH:
                ondisk = value
            elif number == 2 and wire != LENGTH:
                # an int32 written as uint32: Hadoop's layout versions are negative (-66)
                layout = value - (1 << 32) if value >= 1 << 31 else value
            elif number == 3 and wire == LENGTH:
                codec = bytes(image[value:after]).decode() or None
            elif number == 4 and wire == LENGTH:
                sections.append(_section(image, value, after))
    except WireError as exc:
        raise ImageFormatError(f"FileSummary at byte {exc.position}: {exc.rule}") from None
    except ValueError:
        raise ImageFormatError(f"FileSummary at byte {start}: not one delimited message"
                               ) from None
    for s in sections:
        if s.offset < len(MAGIC) or s.offset + s.length > start:
            raise ImageFormatError(f"{s.name} at byte {s.offset}: {s.length} bytes do not fit "
                                   f"between the header and the summary at byte {start}")
    return ImageSummary(ondisk, layout, codec, tuple(sections))


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


def section_data(image: bytes, summary: ImageSummary, section: Section) -> bytes:
    """The section's messages, decompressed when the summary names a codec. Error positions
    inside it are then relative to the decompressed bytes; without a codec read_* functions
    report positions from the section's start."""
    if section.offset + section.length > len(image):
        raise ImageFormatError(f"{section.name} at byte {section.offset}: truncated, "
                               f"{section.length} bytes listed, {len(image) - section.offset} "
                               "in the image")
    raw = image[section.offset:section.offset + section.length]
    if summary.codec is None:
        return raw
    try:
        return decompress(bytes(raw), summary.codec)
    except WireError as exc:
        raise ImageFormatError(f"{section.name} at byte {section.offset + exc.position}: "
                               f"{exc.rule}") from None


class _Reading:
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
    with _Reading("NS_INFO", base):
        for start, end in delimited(data):
            for number, wire, value, _ in fields(data, start, end):
                if number == 1 and wire != LENGTH:
                    namespace_id = value
                elif number == 5 and wire != LENGTH:
                    last_block = value
                elif number == 6 and wire != LENGTH:
                    txid = value
    return NameSystem(namespace_id, txid, last_block)


def read_string_table(data: bytes, *, base: int = 0) -> StringTable:
    strings: dict[int, str] = {}
    mask_bits = 0
    with _Reading("STRING_TABLE", base):
        messages = delimited(data)
        header = next(messages, None)
        if header is not None:
            for number, wire, value, _ in fields(data, *header):
                if number == 2 and wire != LENGTH:
                    mask_bits = value
        for start, end in messages:
            sid, text = 0, ""
            for number, wire, value, after in fields(data, start, end):
                if number == 1 and wire != LENGTH:
                    sid = value
                elif number == 2 and wire == LENGTH:
                    text = bytes(data[value:after]).decode("utf-8", "replace")
            strings[sid] = text
    return StringTable(mask_bits, strings)


def read_inodes(data: bytes, strings: StringTable, *, header: bool = True,
                base: int = 0, section: str = "INODE") -> Iterator[INode]:
    """The INode records of an INODE section or sub-section. header: the part opens with the
    INodeSection message (the whole section and its first sub-section do)."""
    with _Reading(section, base):
        messages = delimited(data)
        if header:
            next(messages, None)
        for start, end in messages:
            yield _inode(data, start, end, strings)


def _inode(buf: bytes, start: int, end: int, strings: StringTable) -> INode:
    kind, inode_id, name = 0, 0, ""
    body: tuple[int, int] | None = None
    for number, wire, value, after in fields(buf, start, end):
        if number == 1 and wire != LENGTH:
            kind = value
        elif number == 2 and wire != LENGTH:
            inode_id = value
        elif number == 3 and wire == LENGTH:
            name = bytes(buf[value:after]).decode("utf-8", "replace")
        elif number in (4, 5, 6) and wire == LENGTH:
            body = (value, after)
    try:
        node_kind = INodeKind(kind)
    except ValueError:
        raise WireError(start, f"inode {inode_id}: unknown type {kind}") from None
    if body is None:
        raise WireError(start, f"inode {inode_id}: {node_kind.name} without its "
                        f"{node_kind.name.lower()} message")
    if node_kind is INodeKind.FILE:
        return _file(buf, *body, inode_id, name, strings)
    if node_kind is INodeKind.DIRECTORY:
        return _directory(buf, *body, inode_id, name, strings)
    return _symlink(buf, *body, inode_id, name, strings)


def _permission(packed: int, strings: StringTable) -> tuple[str | None, str | None, int]:
    return (strings.user((packed >> _USER_SHIFT) & _ID_MASK),
            strings.group((packed >> _GROUP_SHIFT) & _ID_MASK), packed & _MODE_MASK)


def _file(buf: bytes, start: int, end: int, inode_id: int, name: str,
          strings: StringTable) -> INode:
    replication = mtime = atime = block_size = permission = policy = blocks = size = 0
    ec_policy: int | None = None
    under_construction = False
    for number, wire, value, after in fields(buf, start, end):
        if wire == LENGTH:
            if number == 6:  # BlockProto: blockId 1, genStamp 2, numBytes 3
                blocks += 1
                for n, w, v, _ in fields(buf, value, after):
                    if n == 3 and w != LENGTH:
                        size += v
            elif number == 7:
                under_construction = True
        elif number == 1:
            replication = value
        elif number == 2:
            mtime = value
        elif number == 3:
            atime = value
        elif number == 4:
            block_size = value
        elif number == 5 and wire == FIXED64:
            permission = value
        elif number == 10:
            policy = value
        elif number == 12:
            ec_policy = value
    user, group, mode = _permission(permission, strings)
    return INode(inode_id, INodeKind.FILE, name, mtime, atime, user, group, mode,
                 replication=replication, preferred_block_size=block_size, blocks=blocks,
                 size=size, storage_policy_id=policy, erasure_coding_policy_id=ec_policy,
                 under_construction=under_construction)


def _directory(buf: bytes, start: int, end: int, inode_id: int, name: str,
               strings: StringTable) -> INode:
    mtime = ns_quota = ds_quota = permission = 0
    for number, wire, value, _ in fields(buf, start, end):
        if number == 1 and wire != LENGTH:
            mtime = value
        elif number == 2 and wire != LENGTH:
            ns_quota = as_int64(value)
        elif number == 3 and wire != LENGTH:
            ds_quota = as_int64(value)
        elif number == 4 and wire == FIXED64:
            permission = value
    user, group, mode = _permission(permission, strings)
    return INode(inode_id, INodeKind.DIRECTORY, name, mtime, 0, user, group, mode,
                 ns_quota=ns_quota, ds_quota=ds_quota)


def _symlink(buf: bytes, start: int, end: int, inode_id: int, name: str,
             strings: StringTable) -> INode:
    mtime = atime = permission = 0
    target = ""
    for number, wire, value, after in fields(buf, start, end):
        if number == 1 and wire == FIXED64:
            permission = value
        elif number == 2 and wire == LENGTH:
            target = bytes(buf[value:after]).decode("utf-8", "replace")
        elif number == 3 and wire != LENGTH:
            mtime = value
        elif number == 4 and wire != LENGTH:
            atime = value
    user, group, mode = _permission(permission, strings)
    return INode(inode_id, INodeKind.SYMLINK, name, mtime, atime, user, group, mode,
                 symlink_target=target)


def read_directory_entries(data: bytes, *, base: int = 0,
                           section: str = "INODE_DIR") -> Iterator[DirEntry]:
    """The DirEntry records of an INODE_DIR section or sub-section (no header message)."""
    with _Reading(section, base):
        for start, end in delimited(data):
            parent = 0
            children: list[int] = []
            refs: list[int] = []
            for number, wire, value, after in fields(data, start, end):
                if number == 1 and wire != LENGTH:
                    parent = value
                elif number == 2:
                    children += repeated_varints(data, wire, value, after)
                elif number == 3:
                    refs += repeated_varints(data, wire, value, after)
            yield DirEntry(parent, tuple(children), tuple(refs))


def read_references(data: bytes, *, base: int = 0) -> list[INodeReference]:
    """INODE_REFERENCE in order: a DirEntry's reference child is a position in this list."""
    out = []
    with _Reading("INODE_REFERENCE", base):
        for start, end in delimited(data):
            referred, name = 0, None
            dst: int | None = None
            last: int | None = None
            for number, wire, value, after in fields(data, start, end):
                if number == 1 and wire != LENGTH:
                    referred = value
                elif number == 2 and wire == LENGTH:
                    name = bytes(data[value:after]).decode("utf-8", "replace")
                elif number == 3 and wire != LENGTH:
                    dst = value
                elif number == 4 and wire != LENGTH:
                    last = value
            out.append(INodeReference(referred, name, dst, last))
    return out


class PathIndex:
    """Full paths from the directory tree: parent of every listed child, names of directories.

    Built from the whole INODE_DIR (every part) and the directories' names; memory is one entry
    per inode under a directory plus one path per directory reached."""

    def __init__(self, entries: Iterable[DirEntry], references: list[INodeReference],
                 directory_names: Mapping[int, str]) -> None:
        self._parent: dict[int, int] = {}
        for entry in entries:
            for child in entry.children:
                self._parent[child] = entry.parent
            for position in entry.reference_children:
                if position >= len(references):
                    raise ImageFormatError(
                        f"INODE_DIR: directory {entry.parent} lists reference {position}, the "
                        f"INODE_REFERENCE section holds {len(references)}")
                self._parent[references[position].referred_id] = entry.parent
        self._names = directory_names
        self._paths: dict[int, str | None] = {ROOT_INODE_ID: "/"}

    def path(self, inode_id: int, name: str) -> str | None:
        """The inode's full path; None when it is under no directory of the current tree."""
        if inode_id == ROOT_INODE_ID:
            return "/"
        parent = self._parent.get(inode_id)
        if parent is None:
            return None
        above = self.directory_path(parent)
        if above is None:
            return None
        return f"/{name}" if above == "/" else f"{above}/{name}"

    def directory_path(self, dir_id: int) -> str | None:
        if dir_id in self._paths:
            return self._paths[dir_id]
        chain = []  # walked up iteratively: a deep tree must not hit Python's recursion limit
        node: int | None = dir_id
        while node is not None and node not in self._paths:
            chain.append(node)
            node = self._parent.get(node)
            if len(chain) > len(self._parent) + 1:
                raise ImageFormatError(f"INODE_DIR: directory {dir_id} is its own ancestor")
        above = None if node is None else self._paths[node]
        for node_id in reversed(chain):
            name = self._names.get(node_id)
            if above is None or name is None:
                above = None
            else:
                above = f"/{name}" if above == "/" else f"{above}/{name}"
            self._paths[node_id] = above
        return self._paths[dir_id]


def symbolic_mode(mode: int) -> str:
    """The 9 permission characters as FsPermission.toString writes them (t/T for sticky)."""
    out = []
    for shift in (6, 3, 0):
        bits = mode >> shift
        out += ["r" if bits & 4 else "-", "w" if bits & 2 else "-", "x" if bits & 1 else "-"]
    if mode & 0o1000:
        out[-1] = "t" if mode & 1 else "T"
    return "".join(out)


def read_namespace(image: bytes) -> Iterator[tuple[str, INode]]:
    """(path, inode) for every inode of the current tree, in INODE section order, read in one
    process: the reference for a parallel reader, and what `hdfs oiv -p Delimited` prints.
    Holds every inode in memory (oiv scans INODE twice instead; decoding twice costs more)."""
    summary = read_summary(image)
    strings = _strings(image, summary)
    nodes: list[INode] = []
    for i, part in enumerate(summary.parts("INODE")):
        nodes += read_inodes(section_data(image, summary, part), strings, header=i == 0,
                             base=_base(summary, part), section=part.name)
    names = {node.id: node.name for node in nodes if node.kind is INodeKind.DIRECTORY}
    references = []
    if summary.has("INODE_REFERENCE"):
        ref = summary.section("INODE_REFERENCE")
        references = read_references(section_data(image, summary, ref),
                                     base=_base(summary, ref))
    entries = (entry for part in summary.parts("INODE_DIR")
               for entry in read_directory_entries(section_data(image, summary, part),
                                                   base=_base(summary, part),
                                                   section=part.name))
    paths = PathIndex(entries, references, names)
    for node in nodes:
        path = paths.path(node.id, node.name)
        if path is not None:
            yield path, node


def _strings(image: bytes, summary: ImageSummary) -> StringTable:
    table = summary.section("STRING_TABLE")
    return read_string_table(section_data(image, summary, table), base=_base(summary, table))


def _base(summary: ImageSummary, section: Section) -> int:
    return section.offset if summary.codec is None else 0


__all__ = ["MAGIC", "ROOT_INODE_ID", "DirEntry", "INode", "INodeKind", "INodeReference",
           "ImageFormatError", "ImageSummary", "NameSystem", "PathIndex", "Section",
           "StringTable", "read_directory_entries", "read_inodes", "read_name_system",
           "read_namespace", "read_references", "read_string_table", "read_summary",
           "section_data", "symbolic_mode", "varint"]
