"""Protocol Buffers' wire format, the little of it an fsimage's summary and small sections use,
decoded by hand.

Why not Google's `protobuf` runtime: its decoder needs the messages' descriptors, and Hadoop
ships fsimage.proto only as compiled Java (FsImageProto in the NameNode's jar). Generating a
Python module means protoc (grpcio-tools) and copies of fsimage.proto to keep in step with
Hadoop, plus a `protobuf` wheel on every Glue worker (Glue 5 lists no such module among those
it provides), for three small messages of unsigned varints and byte strings. Decoded here as
protobuf does: unknown fields are skipped by their wire type, a field seen twice keeps the last
value. The inodes and the directory tree are decoded in the JVM by the same rules
(hdfsevents.glue.WireReader, glue_jobs/jvm).

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
    """The unsigned varint at pos, and the position after it."""
    value, shift, at = 0, 0, pos
    while True:
        if at >= len(buf):
            raise WireError(pos, "truncated varint")
        byte = buf[at]
        value |= (byte & 0x7F) << shift
        at += 1
        if byte < 0x80:
            return value, at
        shift += 7
        if shift >= 70:
            raise WireError(pos, "varint longer than 10 bytes")


def fields(buf: bytes, start: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """(field number, wire type, value, end of value) for each field of the message in
    buf[start:end]. For VARINT, FIXED64 and FIXED32 the value is the number; for LENGTH it is
    the position the bytes start at (they run to the end of value)."""
    pos = start
    while pos < end:
        key, pos = varint(buf, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise WireError(pos, "field number 0")
        if wire == VARINT:
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
