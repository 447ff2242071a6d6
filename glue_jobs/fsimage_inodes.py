"""The INODE section of an fsimage and the STRING_TABLE its permissions point into.

    strings = read_string_table(section_data(image, summary, summary.section("STRING_TABLE")))
    for i, part in enumerate(summary.parts("INODE")):
        read_inodes(section_data(image, summary, part), strings, header=i == 0)

Each INode message holds one of INodeFile, INodeDirectory, INodeSymlink (fsimage.proto, Hadoop
3.3.4's field numbers); the owner, group and mode are one fixed64 whose ids are keys of the
string table.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum

from glue_jobs.fsimage_format import SectionReading
from glue_jobs.fsimage_wire import (
    FIXED32,
    FIXED64,
    LENGTH,
    VARINT,
    WireError,
    as_int64,
    delimited,
    fields,
    varint,
)

# The permission fixed64 (INodeWithAdditionalFields.PermissionStatusFormat): user string id in
# bits 40-63, group string id in bits 16-39, mode in bits 0-15.
_USER_SHIFT, _GROUP_SHIFT, _ID_MASK, _MODE_MASK = 40, 16, (1 << 24) - 1, (1 << 16) - 1
# SerialNumberManager's ordinals: with dfs.image.expanded.string.tables the table keys a user's
# or group's id with the manager's ordinal in its top maskBits bits.
_USER_ORDINAL, _GROUP_ORDINAL = 1, 2


class INodeKind(Enum):  # INodeSection.INode.Type
    FILE = 1
    DIRECTORY = 2
    SYMLINK = 3


@dataclass(frozen=True, slots=True)
class StringTable:
    mask_bits: int
    strings: Mapping[int, str]
    # _permission's lookups by the packed fixed64, filled as the inodes are read
    permissions: dict[int, tuple[str | None, str | None, int]] = field(
        default_factory=dict, compare=False, repr=False)

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


def read_string_table(data: bytes, *, base: int = 0) -> StringTable:
    strings: dict[int, str] = {}
    mask_bits = 0
    with SectionReading("STRING_TABLE", base):
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
    with SectionReading(section, base):
        messages = delimited(data)
        if header:
            next(messages, None)
        for start, end in messages:
            row = _inode(data, start, end, strings)
            yield INode(row[0], INodeKind[row[1]], *row[2:])


# What _inode reads: INode's fields in order, the kind as INodeKind's name (a tuple, not an
# INode, for the fast paths below).
InodeRow = tuple[int, str, str, int, int, str | None, str | None, int, int, int, int, int, int,
                 int | None, bool, int, int, str | None]


def _inode(buf: bytes, start: int, end: int, strings: StringTable) -> InodeRow:
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
    if kind not in _KINDS:
        raise WireError(start, f"inode {inode_id}: unknown type {kind}")
    if body is None:
        raise WireError(start, f"inode {inode_id}: {_KINDS[kind]} without its "
                        f"{_KINDS[kind].lower()} message")
    if kind == INodeKind.FILE.value:
        return _file(buf, *body, inode_id, name, strings)
    if kind == INodeKind.DIRECTORY.value:
        return _directory(buf, *body, inode_id, name, strings)
    return _symlink(buf, *body, inode_id, name, strings)


_KINDS = {k.value: k.name for k in INodeKind}


def _permission(packed: int, strings: StringTable) -> tuple[str | None, str | None, int]:
    # A namespace has few (owner, group, mode) triples: each is looked up once.
    found = strings.permissions.get(packed)
    if found is None:
        found = strings.permissions[packed] = (
            strings.user((packed >> _USER_SHIFT) & _ID_MASK),
            strings.group((packed >> _GROUP_SHIFT) & _ID_MASK), packed & _MODE_MASK)
    return found


def _file(buf: bytes, start: int, end: int, inode_id: int, name: str,
          strings: StringTable) -> InodeRow:
    """An INodeFile, its fields read in one loop rather than through fields()'s generator: 19
    of 20 inodes are files, and the generator was half of the decode's time. The rules are
    fields()'s (unknown fields skipped by wire type, the last occurrence kept)."""
    replication = mtime = atime = block_size = permission = policy = blocks = size = 0
    ec_policy: int | None = None
    under_construction = False
    pos = start
    try:
        while pos < end:
            key = buf[pos]
            if key < 0x80:
                pos += 1
            else:
                key, pos = varint(buf, pos)
            number, wire = key >> 3, key & 7
            if number == 0:
                raise WireError(pos, "field number 0")
            if wire == VARINT:
                value = buf[pos]
                if value < 0x80:
                    pos += 1
                else:
                    value, pos = varint(buf, pos)
                if number == 2:
                    mtime = value
                elif number == 3:
                    atime = value
                elif number == 1:
                    replication = value
                elif number == 4:
                    block_size = value
                elif number == 10:
                    policy = value
                elif number == 12:
                    ec_policy = value
            elif wire == LENGTH:
                length, pos = varint(buf, pos)
                after = pos + length
                if after > end:
                    raise WireError(pos, f"field {number} runs {after - end} bytes past its "
                                    "message")
                if number == 6:  # BlockProto: blockId 1, genStamp 2, numBytes 3
                    blocks += 1
                    size += _block_bytes(buf, pos, after)
                elif number == 7:
                    under_construction = True
                pos = after
            elif wire == FIXED64:
                if pos + 8 > end:
                    raise WireError(pos, f"field {number}: truncated fixed64")
                if number == 5:
                    permission = int.from_bytes(buf[pos:pos + 8], "little")
                pos += 8
            elif wire == FIXED32:
                if pos + 4 > end:
                    raise WireError(pos, f"field {number}: truncated fixed32")
                pos += 4
            else:
                raise WireError(pos, f"field {number}: unsupported wire type {wire}")
    except IndexError:
        raise WireError(pos, "truncated varint") from None
    if pos != end:
        raise WireError(end, "message ends inside a field")
    user, group, mode = _permission(permission, strings)
    return (inode_id, "FILE", name, mtime, atime, user, group, mode, replication, block_size,
            blocks, size, policy, ec_policy, under_construction, 0, 0, None)


def _block_bytes(buf: bytes, start: int, end: int) -> int:
    """numBytes (field 3) of a BlockProto. Its three fields are varints in the order Hadoop
    writes them, read here without fields()'s generator (a file has one or two blocks, and
    this was a third of the decode); anything else goes the general way."""
    pos, size = start, 0
    while pos < end:
        key = buf[pos]
        if key & 7 != VARINT or key >= 0x80:
            return sum(v for n, w, v, _ in fields(buf, start, end) if n == 3 and w != LENGTH)
        value, pos = varint(buf, pos + 1)
        if key == 0x18:  # field 3, VARINT
            size = value
    if pos != end:
        raise WireError(end, "message ends inside a field")
    return size


def _directory(buf: bytes, start: int, end: int, inode_id: int, name: str,
               strings: StringTable) -> InodeRow:
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
    return (inode_id, "DIRECTORY", name, mtime, 0, user, group, mode, 0, 0, 0, 0, 0, None,
            False, ns_quota, ds_quota, None)


def _symlink(buf: bytes, start: int, end: int, inode_id: int, name: str,
             strings: StringTable) -> InodeRow:
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
    return (inode_id, "SYMLINK", name, mtime, atime, user, group, mode, 0, 0, 0, 0, 0, None,
            False, 0, 0, target)


def symbolic_mode(mode: int) -> str:
    """The 9 permission characters as FsPermission.toString writes them (t/T for sticky)."""
    out = []
    for shift in (6, 3, 0):
        bits = mode >> shift
        out += ["r" if bits & 4 else "-", "w" if bits & 2 else "-", "x" if bits & 1 else "-"]
    if mode & 0o1000:
        out[-1] = "t" if mode & 1 else "T"
    return "".join(out)
