"""The parts of a multipart upload, sent several at a time within a memory budget.

A part is filled from (buffer, bytes filled) chunks (a Java byte[] or a direct ByteBuffer over
Python memory, onprem_agent.sync.hdfs_files), CRC32C'd in Java as it fills, and handed to a
thread that uploads it while the next one fills: reading HDFS and sending to S3 overlap, and a
large file's parts travel side by side (one S3 connection per part, as S3's own guidance for
throughput has it). Each part in memory holds `part_size` bytes of a shared `BufferBudget`
until S3 has it, so the sync's memory for bodies is bounded by `[sync] buffer_mb` whatever the
number of workers and files.
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

from onprem_agent.sync.hdfs_files import JavaCrc


class BufferBudget:
    """Bytes of request bodies the sync may hold at once, shared by every worker."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._free = limit
        self._cond = threading.Condition()

    def take(self, n: int) -> None:
        if n > self.limit:
            raise ValueError(f"a body of {n} bytes exceeds the buffer budget of {self.limit}")
        with self._cond:
            self._cond.wait_for(lambda: self._free >= n)
            self._free -= n

    def give(self, n: int) -> None:
        with self._cond:
            self._free += n
            self._cond.notify_all()

    @property
    def free(self) -> int:
        with self._cond:
            return self._free


def crc_b64(value: int) -> str:
    return base64.b64encode(value.to_bytes(4, "big")).decode()


def upload_parts(s3: Any, bucket: str, key: str, upload_id: str,
                 chunks: Iterable[tuple[Any, int]], part_size: int,
                 count: Callable[[], None] = lambda: None, *, first_part: int = 1,
                 in_flight: int = 1, budget: BufferBudget | None = None
                 ) -> list[tuple[dict[str, Any], int]]:
    """The parts of an open multipart upload from (buffer, bytes filled) chunks, each part
    `part_size` bytes (the last one shorter) sent with its own CRC32C, which S3 checks on
    arrival, numbered from `first_part`, up to `in_flight` at a time. Returns (the part as
    CompleteMultipartUpload lists it, its size) in order. `count` is called once per request.
    The sync and `fetch-image` (onprem_agent/image_fetch.py) upload through it."""
    budget = budget or BufferBudget(part_size * max(1, in_flight))
    parts: list[tuple[dict[str, Any], int]] = []
    sending: list[Future[tuple[dict[str, Any], int]]] = []

    def send(number: int, body: bytes, crc: str) -> tuple[dict[str, Any], int]:
        try:
            count()
            r = s3.upload_part(Bucket=bucket, Key=key, UploadId=upload_id, PartNumber=number,
                               Body=body, ChecksumCRC32C=crc)
            return {"PartNumber": number, "ETag": r["ETag"], "ChecksumCRC32C": crc}, len(body)
        finally:
            budget.give(part_size)

    def settle(block: bool) -> None:
        """Collects sent parts; with `block`, waits for one at least (a slot for the next)."""
        done, _ = wait(sending, timeout=None if block else 0, return_when=FIRST_COMPLETED)
        for f in done:
            sending.remove(f)
            parts.append(f.result())  # a part's error: the caller aborts the upload

    part: bytearray | None = None
    with ThreadPoolExecutor(max(1, in_flight), thread_name_prefix="part") as pool:
        try:
            filled, number, crc = 0, first_part, JavaCrc("CRC32C")
            for buf, n in chunks:
                offset = 0
                while offset < n:
                    if part is None:
                        if sending:
                            settle(block=len(sending) >= in_flight)
                        budget.take(part_size)
                        part, filled = bytearray(part_size), 0
                    take = min(n - offset, part_size - filled)
                    crc.update(buf, offset, take)
                    part[filled:filled + take] = memoryview(buf)[offset:offset + take]
                    filled, offset = filled + take, offset + take
                    if filled == part_size:
                        sending.append(pool.submit(send, number, bytes(part),
                                                   crc_b64(crc.value)))
                        part, number = None, number + 1
                        crc.reset()
            if part is not None or number == first_part:
                if part is None:  # no bytes at all: one empty part, as S3 wants one
                    budget.take(part_size)
                    part, filled = bytearray(), 0
                sending.append(pool.submit(send, number, bytes(part[:filled]),
                                           crc_b64(crc.value)))
                part = None
            while sending:
                settle(block=True)
        except BaseException:
            if part is not None:
                budget.give(part_size)
            wait(sending)  # each part gives its bytes back to the budget as it ends
            raise
    parts.sort(key=lambda p: p[0]["PartNumber"])
    return parts
