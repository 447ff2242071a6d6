"""tests/kit/moto_fast_sqs.py changes how fast moto answers SQS, not what it answers: the same
calls on moto as shipped and with the extension get the same answers, field by field (message
ids, receipt handles, bodies, order, attributes, counts, errors). The one change of answer is
the deduplication memory, AWS's rule, which moto lacks: those tests show moto's answer and the
fixed one.

moto's SQS clock (`moto.sqs.models.unix_time`, `unix_time_millis`) is a script's own here, moved
only by the script, and moto's random ids are seeded, so two runs of one script can be compared
exactly; the long-poll tests run on the real clock and compare which messages came."""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from moto.moto_api._internal import mock_random
from moto.sqs import models
from moto.sqs.models import Message, sqs_backends

from tests.kit import moto_fast_sqs

REGION, ACCOUNT = "eu-west-1", "123456789012"
ALL = {"MessageSystemAttributeNames": ["All"], "MessageAttributeNames": ["All"]}


class Clock:
    """moto's SQS clock, moved only by the script."""

    def __init__(self) -> None:
        self.now = 1_767_225_600.0

    def advance(self, seconds: float) -> None:
        self.now += seconds

    def unix_time(self) -> float:
        return self.now

    def unix_time_millis(self) -> float:
        return self.now * 1000


Answer = tuple[str, str, dict[str, Any]]  # operation, queue URL (if any), answer


class Calls:
    """An SQS client whose every answer is kept (an error as its Error part)."""

    def __init__(self, sqs: Any, clock: Clock) -> None:
        self.sqs, self.clock = sqs, clock
        self.answers: list[Answer] = []

    def __call__(self, operation: str, **params: Any) -> dict[str, Any]:
        try:
            answer = getattr(self.sqs, operation)(**params)
            answer.pop("ResponseMetadata", None)
        except ClientError as error:
            answer = {"Error": error.response["Error"]}
        self.answers.append((operation, params.get("QueueUrl", ""), answer))
        return answer

    def queue(self, name: str, **attributes: str) -> str:
        if name.endswith(".fifo"):
            attributes = {"FifoQueue": "true", **attributes}
        return self("create_queue", QueueName=name, Attributes=attributes)["QueueUrl"]

    def send(self, url: str, body: str, group: str | None = None, dedup: str | None = None,
             **params: Any) -> dict[str, Any]:
        ids = {"MessageGroupId": group} if group else {}
        if dedup:
            ids["MessageDeduplicationId"] = dedup
        return self("send_message", QueueUrl=url, MessageBody=body, **ids, **params)

    def receive(self, url: str, n: int = 10, **params: Any) -> list[dict[str, Any]]:
        return self("receive_message", QueueUrl=url, MaxNumberOfMessages=n,
                    **(params or ALL)).get("Messages", [])

    def delete(self, url: str, message: dict[str, Any] | str) -> None:
        handle = message if isinstance(message, str) else message["ReceiptHandle"]
        self("delete_message", QueueUrl=url, ReceiptHandle=handle)

    def counts(self, url: str) -> None:
        self("get_queue_attributes", QueueUrl=url, AttributeNames=[
            "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible",
            "ApproximateNumberOfMessagesDelayed"])


Script = Callable[[Calls], None]


@pytest.fixture(autouse=True)
def extended() -> None:
    moto_fast_sqs.apply()


def moto_as_shipped(patch: pytest.MonkeyPatch) -> None:
    for owner, name in moto_fast_sqs.REPLACED:
        mine = owner.__dict__[name]
        patch.setattr(owner, name, property(mine.fget.__wrapped__) if isinstance(mine, property)
                      else mine.__wrapped__)


def answers(script: Script, *, fast: bool, clocked: bool = True) -> list[Answer]:
    """The answers to `script` on fresh moto, as shipped or extended."""
    with pytest.MonkeyPatch.context() as patch:
        if not fast:
            moto_as_shipped(patch)
        clock = Clock()
        if clocked:
            patch.setattr(models, "unix_time", clock.unix_time)
            patch.setattr(models, "unix_time_millis", clock.unix_time_millis)
        with mock_aws():
            mock_random.seed(20261126)
            calls = Calls(boto3.client("sqs", region_name=REGION), clock)
            script(calls)
    return calls.answers


def same_answers(script: Script) -> list[Answer]:
    """moto's answers to `script`, having checked the extension gives each of them."""
    theirs, mine = answers(script, fast=False), answers(script, fast=True)
    for n, (their, my) in enumerate(zip(theirs, mine, strict=True)):
        assert my == their, f"answer {n} ({their[0]}) differs"
    return theirs


def bodies(found: list[Answer], queue: str = "") -> list[str]:
    """The bodies received (from the queue named `queue`, if given), in order."""
    return [m["Body"] for op, url, a in found if op == "receive_message" and url.endswith(queue)
            for m in a.get("Messages", [])]


def errors(found: list[Answer]) -> list[str]:
    return [a["Error"]["Code"] for _, _, a in found if "Error" in a] + [
        f["Code"] for _, _, a in found for f in a.get("Failed", [])]


# --- scripted ------------------------------------------------------------------------------------
def groups_in_flight(call: Calls) -> None:
    url = call.queue("events.fifo")
    for i in range(12):
        call.send(url, f"m{i}", "abc"[i % 3], f"d{i}", MessageAttributes={
            "n": {"DataType": "Number", "StringValue": str(i)}})
    call.counts(url)
    first = call.receive(url, 4)  # m0 m1 m2 m3: every group in flight
    call.receive(url)
    call.delete(url, first[1])  # b free: its three others come, in order
    call.receive(url)
    call.delete(url, first[0])  # a still has m3 in flight
    call.receive(url)
    call.delete(url, first[3])
    call.counts(url)
    call.receive(url, 1)
    call.delete(url, first[2])
    call.receive(url, 3)


def visibility(call: Calls) -> None:
    url = call.queue("apply.fifo", VisibilityTimeout="20")
    for i in range(3):
        call.send(url, f"v{i}", "g", f"v{i}")
    old = call.receive(url, 1, VisibilityTimeout=5, **ALL)[0]
    call.receive(url)
    call.clock.advance(5)  # visible only once the clock is past visible_at
    call.receive(url)
    call.clock.advance(0.001)
    again = call.receive(url, 1)[0]  # the queue's own 20 s this time
    call.clock.advance(10)
    call.counts(url)
    call.receive(url)
    call("change_message_visibility", QueueUrl=url, ReceiptHandle=again["ReceiptHandle"],
         VisibilityTimeout=0)
    call.receive(url)  # the same millisecond: not visible yet
    call.clock.advance(0.001)
    third = call.receive(url, 2)
    call("change_message_visibility", QueueUrl=url, ReceiptHandle=old["ReceiptHandle"],
         VisibilityTimeout=43_199)  # past 12 hours since it was sent
    call("change_message_visibility", QueueUrl=url, ReceiptHandle=old["ReceiptHandle"],
         VisibilityTimeout=0)  # moto takes any handle the message had
    call("change_message_visibility", QueueUrl=url, ReceiptHandle=third[1]["ReceiptHandle"],
         VisibilityTimeout=0)
    call.clock.advance(1)
    call.counts(url)
    fourth = call.receive(url, 1)  # moto frees v0 while v1 is in flight, then v1: v1 comes
    call.delete(url, old)  # a stale handle deletes it
    call.delete(url, old)  # and deleting again succeeds
    call.delete(url, fourth[0])
    call.delete(url, "not-a-handle")
    call("change_message_visibility", QueueUrl=url, ReceiptHandle=old["ReceiptHandle"],
         VisibilityTimeout=5)  # deleted: no longer a handle of the queue
    call("delete_message_batch", QueueUrl=url, Entries=[
        {"Id": "stale", "ReceiptHandle": third[0]["ReceiptHandle"]},
        {"Id": "bad", "ReceiptHandle": "nope"}])
    call("change_message_visibility_batch", QueueUrl=url, Entries=[
        {"Id": "bad", "ReceiptHandle": "nope", "VisibilityTimeout": 1}])
    call.counts(url)
    call.receive(url)


def attributes_asked_for(call: Calls) -> None:
    url = call.queue("copy")
    for i in range(15):
        call.send(url, f"s{i}", MessageAttributes={
            "Custom.a": {"DataType": "String", "StringValue": f"a{i}"},
            "Custom.b": {"DataType": "Binary", "BinaryValue": bytes([i])},
            "Other": {"DataType": "Number.int", "StringValue": str(i)}})
    call.receive(url, 1)
    call.receive(url, 3, AttributeNames=["SentTimestamp"], MessageAttributeNames=["Custom.*"])
    call.receive(url, 2, VisibilityTimeout=0, **ALL)  # received, and visible again at once
    call.receive(url, 10, MessageSystemAttributeNames=["ApproximateReceiveCount", "SenderId",
                                                       "ApproximateFirstReceiveTimestamp"],
                 MessageAttributeNames=[".*"])
    call.receive(url, 10, AttributeNames=["All"], MessageAttributeNames=["Other"])
    call.counts(url)


def delays(call: Calls) -> None:
    url = call.queue("slow", DelaySeconds="10")
    call.send(url, "queue-delay")
    call.send(url, "now", DelaySeconds=0)
    call.send(url, "five", DelaySeconds=5)
    call("send_message_batch", QueueUrl=url, Entries=[
        {"Id": "late", "MessageBody": "too-late", "DelaySeconds": 901},
        {"Id": "two", "MessageBody": "two", "DelaySeconds": 2}])
    for _ in range(5):
        call.counts(url)
        call.receive(url)
        call.clock.advance(3)
    fifo = call.queue("slow.fifo", DelaySeconds="3")
    call.send(fifo, "per-message", "g", "x", DelaySeconds=1)  # not on a FIFO queue
    call.send(fifo, "queue-delay", "g", "y")
    call.counts(fifo)
    call.receive(fifo)
    call.clock.advance(3)
    call.receive(fifo)


def redrive(call: Calls) -> None:
    dead = call.queue("events-dlq.fifo")
    arn = call("get_queue_attributes", QueueUrl=dead,
               AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    url = call.queue("events.fifo", VisibilityTimeout="5",
                     RedrivePolicy=json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": 2}))
    for i, group in enumerate("aaab"):
        call.send(url, f"r{i}", group, f"r{i}")
    handles = []
    for _ in range(4):
        handles += [m["ReceiptHandle"] for m in call.receive(url)]
        call.counts(url)
        call.clock.advance(6)
    dead_ones = call.receive(dead)
    call.counts(dead)
    call.delete(url, handles[2])  # r2 moved: its handle is no longer the source queue's
    call.delete(dead, handles[2])  # the dead-letter queue takes a handle r2 had
    call.delete(dead, dead_ones[-1])
    call.counts(dead)
    call.receive(url)


def purge(call: Calls) -> None:
    url = call.queue("events.fifo")
    for i in range(4):
        call.send(url, f"p{i}", "ab"[i % 2], f"p{i}")
    held = call.receive(url, 1)
    call("purge_queue", QueueUrl=url)
    call.counts(url)
    call.receive(url)
    call.delete(url, held[0])
    call.send(url, "after", "a", "after")
    call.receive(url)


def retention(call: Calls) -> None:
    url = call.queue("short.fifo", MessageRetentionPeriod="60")
    call.send(url, "old-a", "a", "1")
    call.send(url, "old-b", "b", "2")
    call.clock.advance(61)
    call.send(url, "new-c", "c", "3")
    call.receive(url)  # moto marks old-a received, does not return it, and ends the call
    call.counts(url)
    call.receive(url)
    call.receive(url)


def deduplicated_while_queued(call: Calls) -> None:
    content = call.queue("content.fifo", ContentBasedDeduplication="true")
    call.send(content, "same", "a")
    call.send(content, "same", "b")  # a duplicate: accepted, not queued
    call("send_message_batch", QueueUrl=content, Entries=[
        {"Id": "1", "MessageBody": "same", "MessageGroupId": "a"},
        {"Id": "2", "MessageBody": "other", "MessageGroupId": "a"},
        {"Id": "3", "MessageBody": "x", "MessageGroupId": "a", "MessageDeduplicationId": "own"}])
    call.send(content, "y", "a", "own")
    call.receive(content)
    scoped = call.queue("scoped.fifo", DeduplicationScope="messageGroup",
                        FifoThroughputLimit="perMessageGroupId")
    call.send(scoped, "first", "a", "id")
    call.send(scoped, "again", "a", "id")
    call.receive(scoped)
    call.send(scoped, "no-group", dedup="id")  # MessageGroupId is required
    call.send(call.queue("plain.fifo"), "no-id", "a")  # and an id without content dedup


SCRIPTS = [groups_in_flight, visibility, attributes_asked_for, delays, redrive, purge,
           retention, deduplicated_while_queued]


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.__name__ for s in SCRIPTS])
def test_each_script_is_answered_as_moto_itself_answers(script: Script) -> None:
    found = same_answers(script)
    assert bodies(found)  # messages came, every script
    if script is groups_in_flight:
        assert bodies(found) == ["m0", "m1", "m2", "m3", "m4", "m7", "m10", "m6", "m5", "m8",
                                 "m11"]
    if script is visibility:
        assert errors(found) == ["InvalidParameterValue", "ReceiptHandleIsInvalid",
                                 "ReceiptHandleIsInvalid", "ReceiptHandleIsInvalid",
                                 "ReceiptHandleIsInvalid"]
    if script is redrive:  # r0 and r1 freed but blocked by r2, which comes first; then moved
        assert bodies(found) == ["r0", "r1", "r2", "r3", "r2", "r3", "r0", "r1", "r2", "r3"]
    if script is retention:  # old-a, then old-b, received past retention: neither returned
        assert bodies(found) == ["new-c"]


# --- seeded at random --------------------------------------------------------------------------
def random_calls(seed: int, steps: int) -> Script:
    """Sends in several groups, receives, deletes (current, stale, foreign and made-up handles),
    visibility changes, clock moves, counts and a rare purge, on FIFO queues (one redriving to a
    dead-letter queue, one per-group deduplication, one content-based) and a standard one with a
    delay. Duplicates are sent only of messages never received, within 4 minutes, in their own
    group: there moto's rule and AWS's agree."""

    def script(call: Calls) -> None:
        rng = random.Random(seed)
        dead = call.queue("dead.fifo")
        arn = call("get_queue_attributes", QueueUrl=dead,
                   AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        urls = [call.queue("events.fifo", VisibilityTimeout="10", RedrivePolicy=json.dumps(
                    {"deadLetterTargetArn": arn, "maxReceiveCount": 2})),
                call.queue("apply.fifo", DeduplicationScope="messageGroup"),
                call.queue("content.fifo", ContentBasedDeduplication="true"),
                call.queue("copy", DelaySeconds="2", VisibilityTimeout="4"), dead]
        handles: list[tuple[str, str]] = []
        unseen: dict[str, list[tuple[str, str, str, float]]] = {u: [] for u in urls}
        seen: set[str] = set()

        def entry(url: str, name: str) -> tuple[dict[str, Any], bool]:
            """A message to send, and whether it is new (else a duplicate)."""
            group = rng.choice("abcd")
            dups = [s for s in unseen[url] if s[0] not in seen and s[2] == group
                    and call.clock.now - s[3] < 240]
            new = not dups or rng.random() < 0.7
            body = f"{seed}-{name}" if new else rng.choice(dups)[1]
            e: dict[str, Any] = {"MessageBody": body}
            if url.endswith(".fifo"):
                e["MessageGroupId"] = group
                if not url.endswith("content.fifo"):
                    e["MessageDeduplicationId"] = body
            else:
                e["DelaySeconds"] = rng.choice([0, 0, 1, 3])
            if rng.random() < 0.3:
                e["MessageAttributes"] = {"n": {"DataType": "Number", "StringValue": name}}
            return e, new

        def sent(url: str, e: dict[str, Any], new: bool, message_id: str) -> None:
            if new:  # a duplicate is not queued: only the message it repeats may be repeated
                unseen[url].append((message_id, e["MessageBody"], e.get("MessageGroupId", ""),
                                    call.clock.now))

        for n in range(steps):
            url = rng.choice(urls)
            op = rng.choices(["send", "batch", "receive", "delete", "delete_batch", "visibility",
                              "clock", "counts", "purge"],
                             [30, 8, 30, 12, 5, 8, 10, 5, 1])[0]
            if op == "send":
                e, new = entry(url, str(n))
                answer = call("send_message", QueueUrl=url, **e)
                if "MessageId" in answer:
                    sent(url, e, new, answer["MessageId"])
            elif op == "batch":
                batch = [entry(url, f"{n}.{i}") for i in range(rng.randint(1, 10))]
                answer = call("send_message_batch", QueueUrl=url,
                              Entries=[{**e, "Id": str(i)} for i, (e, _) in enumerate(batch)])
                for ok in answer.get("Successful", []):
                    sent(url, *batch[int(ok["Id"])], ok["MessageId"])
            elif op == "receive":
                params: dict[str, Any] = rng.choice([ALL, {"AttributeNames": [
                    "ApproximateReceiveCount", "MessageGroupId"]}, {"MessageAttributeNames": ["n"]}])
                timeout = rng.choice([None, 0, 1, 5, 30])
                if timeout is not None:
                    params = {**params, "VisibilityTimeout": timeout}
                for m in call.receive(url, rng.randint(1, 10), **params):
                    handles.append((url, m["ReceiptHandle"]))
                    seen.add(m["MessageId"])
            elif op in ("delete", "visibility") and handles:
                owner, handle = rng.choice(handles)
                target = owner if rng.random() < 0.9 else url
                if rng.random() < 0.05:
                    handle = "made-up"
                if op == "delete":
                    call.delete(target, handle)
                else:
                    call("change_message_visibility", QueueUrl=target, ReceiptHandle=handle,
                         VisibilityTimeout=rng.choice([0, 1, 3, 20]))
            elif op == "delete_batch" and handles:
                picked = {h for u, h in rng.sample(handles, min(4, len(handles))) if u == url}
                if picked:
                    call("delete_message_batch", QueueUrl=url, Entries=[
                        {"Id": str(i), "ReceiptHandle": h} for i, h in enumerate(sorted(picked))])
            elif op == "clock":
                call.clock.advance(rng.choice([0.001, 0.5, 1, 2, 5, 11, 31]))
            elif op == "counts":
                call.counts(url)
            elif op == "purge":
                call("purge_queue", QueueUrl=url)
                unseen[url].clear()

    return script


@pytest.mark.parametrize("seed", [2, 3, 5])
def test_random_interleavings_are_answered_as_moto_itself_answers(seed: int) -> None:
    found = same_answers(random_calls(seed, 300))
    received = [m for op, _, a in found if op == "receive_message" for m in a.get("Messages", [])]
    # Not vacuous: messages came back after a visibility timeout, some reached the dead-letter
    # queue, and handles were refused.
    assert len(received) > 100
    assert any(int(m.get("Attributes", {}).get("ApproximateReceiveCount", "1")) > 1
               for m in received)
    assert set(bodies(found, "/events.fifo")) & set(bodies(found, "/dead.fifo"))
    assert "ReceiptHandleIsInvalid" in errors(found)


# --- long polls, on the real clock ---------------------------------------------------------------
Poll = Callable[..., threading.Thread]  # a long poll of a queue, started in a thread of its own


def polled(script: Callable[[Calls, Poll], None], fast: bool) -> list[tuple[str, str]]:
    """(MessageId, Body) of what a long poll in another thread got while `script` ran."""
    got: list[tuple[str, str]] = []

    def run(call: Calls) -> None:
        def poll(url: str, **params: Any) -> threading.Thread:
            sqs = boto3.client("sqs", region_name=REGION)
            thread = threading.Thread(target=lambda: got.extend(
                (m["MessageId"], m["Body"]) for m in sqs.receive_message(
                    QueueUrl=url, MaxNumberOfMessages=10, **params).get("Messages", [])))
            thread.start()
            return thread

        script(call, poll)

    answers(run, fast=fast, clocked=False)
    return got


def woken_by_a_send(call: Calls, poll: Poll) -> None:
    url = call.queue("events.fifo")
    poller = poll(url, WaitTimeSeconds=5)
    time.sleep(0.3)
    call.send(url, "sent-meanwhile", "a", "1")
    poller.join()


def back_from_a_visibility_timeout(call: Calls, poll: Poll) -> None:
    url = call.queue("events.fifo")
    call.send(url, "a1", "a", "1")
    call.send(url, "a2", "a", "2")
    call.receive(url, 1, VisibilityTimeout=1)
    poll(url, WaitTimeSeconds=5).join()  # a1 comes back after 1 s, and a2 with it


def groups_in_flight_read_once_a_poll(call: Calls, poll: Poll) -> None:
    url = call.queue("events.fifo")
    call.send(url, "a1", "a", "1")
    call.send(url, "a2", "a", "2")
    first = call.receive(url, 1)
    poller = poll(url, WaitTimeSeconds=3)
    time.sleep(1)  # the poll's thread is inside receive_message by then, even on a loaded machine
    call.delete(url, first[0])  # a is free now, but the poll read it in flight when it began
    poller.join()


@pytest.mark.parametrize("script", [woken_by_a_send, back_from_a_visibility_timeout,
                                    groups_in_flight_read_once_a_poll],
                         ids=lambda s: s.__name__)
def test_a_long_poll_gets_what_moto_itself_gives(script: Any) -> None:
    theirs, mine = polled(script, fast=False), polled(script, fast=True)
    assert mine == theirs
    expected = {woken_by_a_send: ["sent-meanwhile"], back_from_a_visibility_timeout: ["a1", "a2"],
                groups_in_flight_read_once_a_poll: []}[script]
    assert [body for _, body in theirs] == expected


# --- the deduplication memory (AWS's rule; moto forgets) ------------------------------------------
def received_after_resending(*, wait: float, scope: str = "queue", group: str = "a",
                             content: bool = False) -> Callable[[bool], list[str]]:
    """A message is sent, received and deleted; `wait` seconds after it was sent a message with
    the same deduplication id is sent, in `group`: the bodies received, on moto or fixed."""

    def script(call: Calls) -> None:
        url = call.queue("apply.fifo", DeduplicationScope=scope,
                         ContentBasedDeduplication=str(content).lower())
        call.send(url, "same" if content else "first", "a", None if content else "id")
        call.delete(url, call.receive(url)[0])
        call.clock.advance(wait)
        call.send(url, "same" if content else "again", group, None if content else "id")
        call.receive(url)

    return lambda fast: bodies(answers(script, fast=fast))


def test_moto_forgets_an_id_once_its_message_is_deleted() -> None:
    resend = received_after_resending(wait=60)
    assert resend(False) == ["first", "again"]
    assert resend(True) == ["first"]


def test_an_id_is_remembered_for_five_minutes_from_its_send() -> None:
    assert received_after_resending(wait=299.999)(True) == ["first"]
    assert received_after_resending(wait=300)(True) == ["first", "again"]


def test_content_based_ids_are_remembered_too() -> None:
    assert received_after_resending(wait=60, content=True)(True) == ["same"]
    assert received_after_resending(wait=300, content=True)(True) == ["same", "same"]


def test_message_group_scope_tells_the_same_id_in_two_groups_apart() -> None:
    def two_groups(fast: bool, scope: str) -> list[str]:
        def script(call: Calls) -> None:
            url = call.queue("events.fifo", DeduplicationScope=scope)
            call.send(url, "in-a", "a", "id")
            call.send(url, "in-b", "b", "id")
            call.receive(url)
        return bodies(answers(script, fast=fast))

    assert two_groups(False, "messageGroup") == ["in-a"]  # moto: one id per queue, always
    assert two_groups(True, "messageGroup") == ["in-a", "in-b"]
    assert two_groups(True, "queue") == ["in-a"]
    assert received_after_resending(wait=60, scope="messageGroup")(True) == ["first"]
    assert received_after_resending(wait=60, scope="messageGroup", group="b")(True) == [
        "first", "again"]


# --- work, counted -------------------------------------------------------------------------------
def messages_looked_at(depth: int, monkeypatch: pytest.MonkeyPatch) -> int:
    """How many times a send, a receive of 10 and their delete read a message's visibility, on a
    FIFO queue of `depth` messages in 200 groups, half of them in flight."""
    looks = 0
    visible = Message.visible

    def counted(message: Message) -> bool:
        nonlocal looks
        looks += 1
        return visible.fget(message)  # type: ignore[attr-defined,no-any-return]

    with mock_aws():
        backend = sqs_backends[ACCOUNT][REGION]
        backend.create_queue("events.fifo", FifoQueue="true")
        for n in range(depth):
            backend.send_message("events.fifo", "{}", group_id=f"g{n % 200}",
                                 deduplication_id=str(n))
        for _ in range(10):  # 10 of 10: a message of each of 100 groups in flight
            backend.receive_message("events.fifo", 10, 0, 30)
        with monkeypatch.context() as patch:
            patch.setattr(Message, "visible", property(counted))
            backend.send_message("events.fifo", "{}", group_id="g0", deduplication_id="new")
            got = backend.receive_message("events.fifo", 10, 0, 30)
            for m in got:
                backend.delete_message("events.fifo", m.receipt_handle)
    assert len(got) == 10
    return looks


def test_a_backlog_ten_times_deeper_costs_a_call_no_more_work(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert messages_looked_at(2_000, monkeypatch) == messages_looked_at(20_000, monkeypatch) < 400


# --- threads ---------------------------------------------------------------------------------------
def test_concurrent_senders_and_consumers_lose_and_repeat_nothing() -> None:
    with mock_aws():
        backend = sqs_backends[ACCOUNT][REGION]
        backend.create_queue("events.fifo", FifoQueue="true")
        got: list[tuple[str, tuple[int, int]]] = []
        give_up = time.monotonic() + 60  # a lost message would keep the consumers polling

        def send(sender: int) -> None:
            for n in range(250):
                backend.send_message("events.fifo", json.dumps([sender, n]),
                                     group_id=f"g{(sender * 250 + n) % 20}",
                                     deduplication_id=f"{sender}-{n}")

        def consume() -> None:
            while len(got) < 1000 and time.monotonic() < give_up:
                for m in backend.receive_message("events.fifo", 10, 1, 30):
                    got.append((m.group_id, tuple(json.loads(m.body))))  # type: ignore[arg-type]
                    backend.delete_message("events.fifo", m.receipt_handle)

        threads = [threading.Thread(target=send, args=(s,)) for s in range(4)] + [
            threading.Thread(target=consume) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        queue = backend.get_queue("events.fifo")
        assert sorted(b for _, b in got) == [(s, n) for s in range(4) for n in range(250)]
        assert queue.approximate_number_of_messages == 0 == len(queue._messages)
        # FIFO within a group: one group's messages from one sender come in the order sent.
        for group, sender in {(g, b[0]) for g, b in got}:
            sent = [b[1] for g, b in got if g == group and b[0] == sender]
            assert sent == sorted(sent)
