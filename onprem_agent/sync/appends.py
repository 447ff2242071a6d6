"""An append sent as its new bytes only (docs/sync.md, "Appends"): pure helpers, no I/O.

The object already holds the file's first N bytes when the window saw only APPENDs on its path
(plan.py) and the object's full-object CRC32C, combined with the CRC32C of the bytes after N,
equals HDFS's COMPOSITE-CRC32C of the whole file: CRC32C(a + b) is a function of CRC32C(a),
CRC32C(b) and len(b) (zlib's crc32_combine, over CRC32C's polynomial). The prefix is then copied
inside S3 (UploadPartCopy) and only the new bytes cross the WAN.
"""

from __future__ import annotations

# CRC32C (Castagnoli), reflected, as java.util.zip.CRC32C and S3 compute it.
_POLY = 0x82F63B78
# S3: every part but the last at least 5 MiB; an UploadPartCopy part at most 5 GiB;
# at most 10,000 parts in one upload.
MIN_PART, MAX_COPY_PART, MAX_PARTS = 5 * 1024**2, 5 * 1024**3, 10_000


def _times(matrix: list[int], vector: int) -> int:
    out, row = 0, 0
    while vector:
        if vector & 1:
            out ^= matrix[row]
        vector >>= 1
        row += 1
    return out


def _square(matrix: list[int]) -> list[int]:
    return [_times(matrix, matrix[n]) for n in range(32)]


def crc32c_combine(crc_a: int, crc_b: int, len_b: int) -> int:
    """CRC32C(a + b) from CRC32C(a), CRC32C(b) and len(b): crc_a is advanced over len_b zero
    bytes by squaring the one-zero-bit operator (O(log len_b) 32x32 GF(2) products)."""
    if len_b <= 0:
        return crc_a
    odd = [_POLY] + [1 << n for n in range(31)]  # one zero bit
    even = _square(odd)  # two
    odd = _square(even)  # four
    while True:
        even = _square(odd)  # first pass: one zero byte
        if len_b & 1:
            crc_a = _times(even, crc_a)
        len_b >>= 1
        if not len_b:
            break
        odd = _square(even)
        if len_b & 1:
            crc_a = _times(odd, crc_a)
        len_b >>= 1
        if not len_b:
            break
    return crc_a ^ crc_b


def prefix_ranges(prefix: int, part_size: int) -> list[tuple[int, int]]:
    """Inclusive byte ranges covering [0, prefix) for UploadPartCopy, each at least MIN_PART
    (new parts follow them) and at most MAX_COPY_PART: `part_size` each, a short remainder
    merged into the part before it."""
    if prefix < MIN_PART:
        raise ValueError(f"prefix of {prefix} bytes: UploadPartCopy parts before the last "
                         f"must hold at least {MIN_PART} bytes")
    size = min(max(part_size, MIN_PART), MAX_COPY_PART - MIN_PART)
    starts = list(range(0, prefix, size))
    if len(starts) > 1 and prefix - starts[-1] < MIN_PART:
        starts.pop()
    ends = [*starts[1:], prefix]
    return [(start, end - 1) for start, end in zip(starts, ends, strict=True)]
