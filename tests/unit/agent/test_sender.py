"""SqsSender against a scripted client: retries of Failed entries, per-group order under
concurrency, backpressure, permanent errors. The same behaviours run against moto server in
tests/integration/agent."""

from __future__ import annotations

import random
import threading
import time
from collections import defaultdict

import pytest
from botocore.exceptions import ClientError

from hdfs_events.event import EventType, HdfsEvent
from onprem_agent.packer import EventPacker, PackedMessage
from onprem_agent.sender import PermanentSendError, SqsSender


def messages(groups: int, per_group: int) -> list[PackedMessage]:
    packer = EventPacker("c1", linger_s=10, compress=False)
    out = []
    txid = 0
    for _ in range(per_group):
        for g in range(groups):
            txid += 1
            packer.add((HdfsEvent(cluster="c1", txid=txid, index=0, type=EventType.CLOSE,
                                  path=f"/data/g{g}/f"),), 0.0)
            out += packer.flush()  # one event per message: many messages per group
    return out


class ScriptedSqs:
    """Accepts entries like SQS FIFO; fails a share of entries or calls as told."""

    def __init__(self, *, entry_failure: float = 0.0, call_failure: float = 0.0,
                 failed_code: str = "InternalError", sender_fault: bool = False,
                 call_error: str = "ThrottlingException", seed: int = 0) -> None:
        self.rng = random.Random(seed)
        self.entry_failure, self.call_failure = entry_failure, call_failure
        self.failed_code, self.sender_fault, self.call_error = (
            failed_code, sender_fault, call_error)
        self.lock = threading.Lock()
        self.accepted: dict[str, list[str]] = defaultdict(list)  # group -> dedup ids
        self.in_flight: set[str] = set()
        self.overlap = False
        self.calls = 0

    def send_message_batch(self, QueueUrl: str, Entries: list[dict]) -> dict:
        groups = [e["MessageGroupId"] for e in Entries]
        with self.lock:
            self.calls += 1
            if len(set(groups)) != len(groups) or self.in_flight & set(groups):
                self.overlap = True
            self.in_flight |= set(groups)
            fail_call = self.rng.random() < self.call_failure
        time.sleep(0.001)
        try:
            if fail_call:
                status = 400 if "Throttl" in self.call_error else 500
                raise ClientError({"Error": {"Code": self.call_error, "Message": "scripted"},
                                   "ResponseMetadata": {"HTTPStatusCode": status}},
                                  "SendMessageBatch")
            ok, failed = [], []
            with self.lock:
                for e in Entries:
                    if self.rng.random() < self.entry_failure:
                        failed.append({"Id": e["Id"], "Code": self.failed_code,
                                       "SenderFault": self.sender_fault, "Message": "scripted"})
                    else:
                        self.accepted[e["MessageGroupId"]].append(e["MessageDeduplicationId"])
                        ok.append({"Id": e["Id"], "MessageId": "m"})
            return {"Successful": ok, "Failed": failed} if failed else {"Successful": ok}
        finally:
            with self.lock:
                self.in_flight -= set(groups)


def run_sender(client: ScriptedSqs, batch: list[PackedMessage], **kw: object) -> list[PackedMessage]:
    sender = SqsSender("https://q.fifo", client, max_in_flight_batches=4, max_backoff_s=0.02,
                       **kw)  # type: ignore[arg-type]
    acked: list[PackedMessage] = []
    sender.start(acked.append)
    try:
        for m in batch:
            sender.wait_for_capacity()
            sender.enqueue(m)
        assert sender.flush(timeout=60)
    finally:
        sender.close()
    return acked


def expected_by_group(batch: list[PackedMessage]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for m in batch:
        out[m.wire.group_id].append(m.wire.dedup_id)
    return dict(out)


def test_every_message_is_acknowledged_once_in_group_order() -> None:
    batch = messages(groups=7, per_group=30)
    client = ScriptedSqs()
    acked = run_sender(client, batch)
    assert sorted(id(m) for m in acked) == sorted(id(m) for m in batch)
    assert dict(client.accepted) == expected_by_group(batch)
    assert not client.overlap


def test_failed_entries_and_failed_calls_are_retried_without_reordering_a_group() -> None:
    batch = messages(groups=5, per_group=40)
    client = ScriptedSqs(entry_failure=0.3, call_failure=0.2, seed=5)
    acked = run_sender(client, batch)
    assert len(acked) == len(batch)
    assert dict(client.accepted) == expected_by_group(batch)  # once each, in order
    assert not client.overlap


def test_server_errors_after_botocore_gave_up_are_retried() -> None:
    batch = messages(groups=3, per_group=10)
    client = ScriptedSqs(call_failure=0.5, call_error="InternalError", seed=2)
    assert len(run_sender(client, batch)) == len(batch)
    assert dict(client.accepted) == expected_by_group(batch)


def test_a_single_group_never_has_two_messages_in_flight() -> None:
    batch = messages(groups=1, per_group=40)
    client = ScriptedSqs(entry_failure=0.2, seed=9)
    run_sender(client, batch)
    assert not client.overlap
    assert dict(client.accepted) == expected_by_group(batch)


@pytest.mark.parametrize(("code", "status"), [
    ("AWS.SimpleQueueService.NonExistentQueue", 400), ("AccessDenied", 403),
])
def test_permanent_call_errors_stop_the_sender(code: str, status: int) -> None:
    class Refusing:
        def send_message_batch(self, **kw: object) -> dict:
            raise ClientError({"Error": {"Code": code, "Message": "no"},
                               "ResponseMetadata": {"HTTPStatusCode": status}},
                              "SendMessageBatch")

    sender = SqsSender("https://q.fifo", Refusing())
    sender.start(lambda m: None)
    sender.enqueue(messages(1, 1)[0])
    with pytest.raises(PermanentSendError, match=code):
        sender.flush(timeout=10)
    with pytest.raises(PermanentSendError):
        sender.enqueue(messages(1, 1)[0])


def test_a_sender_fault_entry_stops_the_sender_naming_the_code() -> None:
    client = ScriptedSqs(entry_failure=1.0, failed_code="InvalidParameterValue",
                         sender_fault=True)
    with pytest.raises(PermanentSendError, match="InvalidParameterValue"):
        run_sender(client, messages(2, 2))


def test_backpressure_blocks_the_source_until_messages_are_acknowledged() -> None:
    gate = threading.Event()

    class Slow(ScriptedSqs):
        def send_message_batch(self, QueueUrl: str, Entries: list[dict]) -> dict:
            gate.wait(10)
            return super().send_message_batch(QueueUrl=QueueUrl, Entries=Entries)

    sender = SqsSender("https://q.fifo", Slow(), max_in_flight_batches=1,
                       max_pending_messages=5)
    sender.start(lambda m: None)
    for m in messages(5, 1):
        sender.enqueue(m)
    waited = threading.Event()

    def source() -> None:
        sender.wait_for_capacity()
        waited.set()

    thread = threading.Thread(target=source)
    thread.start()
    assert not waited.wait(0.3)  # blocked while 5 are pending
    gate.set()
    assert waited.wait(10)
    thread.join()
    assert sender.flush(10)
    sender.close()
