"""A multipart upload's parts sent several at a time within the buffer budget (parts.py):
in order for CompleteMultipartUpload, each with its own CRC32C, never more bytes held than
the budget, and a failed part failing the upload with every budget byte given back. CRCs are
the agent's own (Java CRC32C in the `jvm` fixture's JVM)."""

from __future__ import annotations

import base64
import threading
import time

import crc32c
import pytest

from onprem_agent.sync.parts import BufferBudget, upload_parts


class SlowS3:
    """upload_part that takes a while and records how many run at once; with `meet`, a part
    waits (up to 2 s) until two have been in flight together: parts sent one after another
    then show as such however slow the machine, not by losing a 20 ms race."""

    def __init__(self, fail_part: int | None = None, *, meet: bool = False) -> None:
        self.bodies: dict[int, bytes] = {}
        self.crcs: dict[int, str] = {}
        self.running = self.most = 0
        self._lock = threading.Condition()
        self._fail = fail_part
        self._meet = meet

    def upload_part(self, *, PartNumber, Body, ChecksumCRC32C, **_):  # boto3's names
        with self._lock:
            self.running += 1
            self.most = max(self.most, self.running)
            self._lock.notify_all()
            if self._meet:
                self._lock.wait_for(lambda: self.most >= 2, timeout=2)
        try:
            time.sleep(0.02)
            if PartNumber == self._fail:
                raise ConnectionError("reset by peer")
            self.bodies[PartNumber], self.crcs[PartNumber] = Body, ChecksumCRC32C
            return {"ETag": f'"{PartNumber}"'}
        finally:
            with self._lock:
                self.running -= 1


def chunks(jvm, data: bytes, size: int):
    for i in range(0, len(data), size):
        piece = data[i:i + size]
        yield jvm.JArray(jvm.JByte)(piece), len(piece)


def test_parts_travel_side_by_side_and_complete_in_order(jvm):
    data = bytes(range(256)) * 400  # 102,400 bytes: 10 parts of 10,000 and one of 2,400
    s3, budget = SlowS3(meet=True), BufferBudget(40_000)
    parts = upload_parts(s3, "b", "k", "u", chunks(jvm, data, 3_000), 10_000, in_flight=4,
                         budget=budget)
    assert [p["PartNumber"] for p, _ in parts] == list(range(1, 12))
    assert b"".join(s3.bodies[n] for n in range(1, 12)) == data
    for number, body in s3.bodies.items():
        expected = base64.b64encode(crc32c.crc32c(body).to_bytes(4, "big")).decode()
        assert s3.crcs[number] == expected
    assert 2 <= s3.most <= 4  # side by side, never past the budget's 4 parts
    assert budget.free == 40_000


def test_the_budget_bounds_the_parts_in_memory_across_uploads(jvm):
    s3, budget = SlowS3(), BufferBudget(20_000)  # two parts of 10,000 for both uploads
    data = b"x" * 60_000
    threads = [threading.Thread(target=upload_parts, args=(
        s3, "b", f"k{i}", "u", chunks(jvm, data, 5_000), 10_000),
        kwargs={"in_flight": 4, "budget": budget}) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert s3.most <= 2 and budget.free == 20_000


def test_a_failed_part_fails_the_upload_and_gives_its_bytes_back(jvm):
    s3, budget = SlowS3(fail_part=3), BufferBudget(30_000)
    with pytest.raises(ConnectionError):
        upload_parts(s3, "b", "k", "u", chunks(jvm, b"y" * 100_000, 4_096), 10_000,
                     in_flight=3, budget=budget)
    assert budget.free == 30_000


def test_a_body_over_the_budget_is_refused():
    with pytest.raises(ValueError, match="exceeds the buffer budget"):
        BufferBudget(10).take(11)
