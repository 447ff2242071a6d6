"""Protocol Buffers' wire format, the little of it an HDFS fsimage uses, decoded by hand.

Why not Google's `protobuf` runtime: its decoder needs the messages' descriptors, and Hadoop
ships fsimage.proto only as compiled Java (FsImageProto in the NameNode's jar). Generating a
Python module means protoc (grpcio-tools) and copies of fsimage.proto, hdfs.proto, acl.proto and
xattr.proto to keep in step with Hadoop, plus a `protobuf` wheel on every Glue worker (Glue 5
lists no such module among those it provides; it would ride in --additional-python-modules). The
image reader needs six small messages of unsigned varints, one fixed64 and byte strings, so the
wire format is decoded here, exactly as protobuf does: unknown fields are skipped by their wire
type, a repeated scalar is accepted packed or not, a field seen twice keeps the last value.
No field the reader uses is signed (sint/zigzag): quotas are uint64 that Java reads as long.

Errors carry the position they were found at; the section reader names the section.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator

VARINT, FIXED64, LENGTH, FIXED32 = 0, 1, 2, 5

# The codecs Hadoop's image saver can name (dfs.image.compression.codec), mapped to a Python
# decompressor's window bits: DefaultCodec is zlib with its header, GzipCodec a gzip member.
# Snappy, LZ4, BZip2 and Zstd images are refused by name rather than misread.
CODECS = {"org.apache.hadoop.io.compress.DefaultCodec": zlib.MAX_WBITS,
          "org.apache.hadoop.io.compress.GzipCodec": 16 + zlib.MAX_WBITS}


class WireError(ValueError):
    def __init__(self, position: int, rule: str) -> None:
        super().__init__(f"at byte {position}: {rule}")
        self.position, self.rule = position, rule


def varint(buf: bytes, pos: int) -> tuple[int, int]:
    """The unsigned varint at pos, and the position after it. Unrolled to six bytes (an inode
    id takes 3-4, a time in milliseconds 6): CPython runs straight-line code faster than a
    loop, and this is the decode's most called function."""
    try:
        byte = buf[pos]
        if byte < 0x80:
            return byte, pos + 1
        value = byte & 0x7F
        byte = buf[pos + 1]
        if byte < 0x80:
            return value | byte << 7, pos + 2
        value |= (byte & 0x7F) << 7
        byte = buf[pos + 2]
        if byte < 0x80:
            return value | byte << 14, pos + 3
        value |= (byte & 0x7F) << 14
        byte = buf[pos + 3]
        if byte < 0x80:
            return value | byte << 21, pos + 4
        value |= (byte & 0x7F) << 21
        byte = buf[pos + 4]
        if byte < 0x80:
            return value | byte << 28, pos + 5
        value |= (byte & 0x7F) << 28
        byte = buf[pos + 5]
        if byte < 0x80:
            return value | byte << 35, pos + 6
        value |= (byte & 0x7F) << 35
        shift, at = 42, pos + 6
        while True:
            byte = buf[at]
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value, at + 1
            shift += 7
            at += 1
            if shift >= 70:
                raise WireError(pos, "varint longer than 10 bytes")
    except IndexError:
        raise WireError(pos, "truncated varint") from None


def as_int64(value: int) -> int:
    """A uint64 as Java's long reads it: HDFS stores a quota of -1 ("none") as 2**64 - 1."""
    return value - (1 << 64) if value >= 1 << 63 else value


def fields(buf: bytes, start: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """(field number, wire type, value, end of value) for each field of the message in
    buf[start:end]. For VARINT, FIXED64 and FIXED32 the value is the number; for LENGTH it is
    the position the bytes start at (they run to the end of value)."""
    pos = start
    while pos < end:
        key = buf[pos]  # one-byte keys and values inline: varint() calls are most of the cost
        if key < 0x80:
            pos += 1
        else:
            key, pos = varint(buf, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise WireError(pos, "field number 0")
        if wire == VARINT:
            if pos < end and buf[pos] < 0x80:
                value, pos = buf[pos], pos + 1
            else:
                value, pos = varint(buf, pos)
            yield number, wire, value, pos
        elif wire == LENGTH:
            size, value = varint(buf, pos)
            pos = value + size
            if pos > end:
                raise WireError(value, f"field {number} runs {pos - end} bytes past its message")
            yield number, wire, value, pos
        elif wire == FIXED64:
            if pos + 8 > end:
                raise WireError(pos, f"field {number}: truncated fixed64")
            yield number, wire, int.from_bytes(buf[pos:pos + 8], "little"), pos + 8
            pos += 8
        elif wire == FIXED32:
            if pos + 4 > end:
                raise WireError(pos, f"field {number}: truncated fixed32")
            yield number, wire, int.from_bytes(buf[pos:pos + 4], "little"), pos + 4
            pos += 4
        else:  # 3 and 4 are proto2 groups, which no fsimage message uses; 6 and 7 are unused
            raise WireError(pos, f"field {number}: unsupported wire type {wire}")
    if pos != end:
        raise WireError(end, "message ends inside a field")


def repeated_varints(buf: bytes, wire: int, value: int, end: int) -> list[int]:
    """A repeated uint field's values from one occurrence, packed (LENGTH) or not."""
    if wire == VARINT:
        return [value]
    if wire != LENGTH:
        raise WireError(value, f"repeated varint field has wire type {wire}")
    out, pos = [], value
    while pos < end:
        item, pos = varint(buf, pos)
        out.append(item)
    if pos != end:
        raise WireError(end, "packed varints overrun their field")
    return out


def delimited(buf: bytes, start: int = 0, end: int | None = None) -> Iterator[tuple[int, int]]:
    """(start, end) of each varint-length-prefixed message in buf[start:end], as Java's
    writeDelimitedTo writes them one after another."""
    stop = len(buf) if end is None else end
    pos = start
    while pos < stop:
        size, body = varint(buf, pos)
        pos = body + size
        if pos > stop:
            raise WireError(body, f"message of {size} bytes runs {pos - stop} bytes past the end")
        yield body, pos


def decompress(data: bytes, codec: str) -> bytes:
    """A section as Hadoop's codec wrote it. A section saved in sub-sections is one compressed
    stream per sub-section, back to back, so every stream is read, not just the first."""
    if codec not in CODECS:
        raise WireError(0, f"codec {codec!r} is not supported (supported: {sorted(CODECS)})")
    if codec.endswith("GzipCodec"):
        try:
            return gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise WireError(0, f"{codec}: {exc}") from None
    out, rest = [], data
    while rest:
        stream = zlib.decompressobj(CODECS[codec])
        try:
            out.append(stream.decompress(rest))
        except zlib.error as exc:
            raise WireError(len(data) - len(rest), f"{codec}: {exc}") from None
        if not stream.eof:
            raise WireError(len(data), f"{codec}: truncated compressed stream")
        rest = stream.unused_data
    return b"".join(out)
