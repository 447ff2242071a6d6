"""An encoder of the protobuf wire format and of fsimage bytes, the tests' own (a reader must
not check itself): hand-built images and sections a saver could write but the kit's images do
not hold (multi-byte keys, unknown fields, unpacked repeats, codecs, expanded string tables).
Used by the tests of the driver's reads (tests/unit/glue/test_fsimage_format.py) and of the
JVM decoder (tests/integration/glue/test_fsimage_jvm_decoder.py)."""

from __future__ import annotations

import gzip
import itertools
import zlib

from glue_jobs.fsimage_format import MAGIC


def enc_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def key(number: int, wire: int) -> bytes:
    return enc_varint(number << 3 | wire)


def v(number: int, value: int) -> bytes:
    return key(number, 0) + enc_varint(value)


def b(number: int, data: bytes | str) -> bytes:
    raw = data.encode() if isinstance(data, str) else data
    return key(number, 2) + enc_varint(len(raw)) + raw


def f64(number: int, value: int) -> bytes:
    return key(number, 1) + value.to_bytes(8, "little")


def f32(number: int, value: int) -> bytes:
    return key(number, 5) + value.to_bytes(4, "little")


def delimit(*messages: bytes) -> bytes:
    return b"".join(enc_varint(len(m)) + m for m in messages)


def permission(user: int, group: int, mode: int) -> int:
    return user << 40 | group << 16 | mode


def inode_file(inode_id: int, name: str, *, blocks: tuple[int, ...] = (), extra: bytes = b"",
               perm: int = permission(1, 2, 0o644)) -> bytes:
    body = (v(1, 3) + v(2, 1_700_000_000_123) + v(3, 1_700_000_100_456) + v(4, 134_217_728)
            + f64(5, perm)
            + b"".join(b(6, v(1, 1_073_741_825 + i) + v(2, 1001) + v(3, n))
                       for i, n in enumerate(blocks))
            + extra)
    return v(1, 1) + v(2, inode_id) + b(3, name) + b(4, body)


def inode_dir(inode_id: int, name: str, *, ns: int = (1 << 64) - 1, ds: int = (1 << 64) - 1,
              mode: int = 0o755) -> bytes:
    body = v(1, 1_700_000_000_000) + v(2, ns) + v(3, ds) + f64(4, permission(1, 2, mode))
    return v(1, 2) + v(2, inode_id) + b(3, name) + b(5, body)


def string_table(entries: dict[int, str], mask_bits: int = 0) -> bytes:
    return delimit(v(1, len(entries)) + v(2, mask_bits),
                   *(v(1, sid) + b(2, text) for sid, text in entries.items()))


def image(sections: list[tuple[str, bytes]], *, codec: str | None = None,
          subsections: dict[str, list[int]] | None = None) -> bytes:
    """An fsimage: MAGIC, the sections (compressed as the codec says), the FileSummary.
    subsections: name -> cut points (byte positions in that section's raw bytes), each piece
    compressed as its own stream, as the saver does."""
    out = bytearray(MAGIC)
    listed = []
    for name, raw in sections:
        cuts = [0, *(subsections or {}).get(name, []), len(raw)]
        start = len(out)
        pieces = []
        for lo, hi in itertools.pairwise(cuts):
            piece = raw[lo:hi]
            if codec == "org.apache.hadoop.io.compress.DefaultCodec":
                piece = zlib.compress(piece)
            elif codec == "org.apache.hadoop.io.compress.GzipCodec":
                piece = gzip.compress(piece)
            pieces.append((len(out), len(piece)))
            out += piece
        listed.append(b(1, name) + v(2, len(out) - start) + v(3, start))
        if len(cuts) > 2:
            listed += [b(1, f"{name}_SUB") + v(2, n) + v(3, at) for at, n in pieces]
    summary = v(1, 1) + v(2, (1 << 32) - 66) + (b(3, codec) if codec else b"")
    summary += b"".join(b(4, s) for s in listed)
    blob = delimit(summary)
    return bytes(out + blob + len(blob).to_bytes(4, "big"))
