"""One consumer process of bench.chain_speed: the consumer Lambda's real handler behind the local
SQS event source mapping (tests/kit/sqs_lambda.py) on one of the function's two queues. On the
event queue, one of the concurrent invocations Lambda makes for a FIFO queue's message groups;
on the apply queue, the one its mapping makes for the bench's one cluster (a group per cluster:
one invocation at a time takes its continue requests, up to ten), beside them, as Lambda runs
the two mappings. Its DynamoDB is wherever AWS_ENDPOINT_URL_DYNAMODB points (the bench's shared
double). It runs until the bench writes `<queue>.stop` in the work dir, then writes
`<name>.json`: what each event met (its stages: NameNode time, the message's SentTimestamp and
ApproximateFirstReceiveTimestamp, the handler called, its lake objects written, the handler
returned), each invocation of continue requests (called, returned, requests taken and sent),
the continue requests it sent, the sequencer's position advances it made, its calls and their
seconds.

    python -m bench.chain_consumer {events|apply} QUEUE_URL WORK_DIR NAME
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

CLUSTER = "speed"
QUEUES = ("events", "apply")  # the function's two event sources (stacks/ingest_function.py)
# As deployed (stacks/queues.py, stacks/ingest_function.py): a 60 s function timeout, and
# messages invisible for 6x that while an invocation holds them (both queues).
FUNCTION_TIMEOUT_MS = 60_000
VISIBILITY_S = 6 * FUNCTION_TIMEOUT_MS // 1000
IDLE_PAUSE_S = 0.05
# What each event met, in this order: its NameNode time, its message's SentTimestamp and
# ApproximateFirstReceiveTimestamp (SQS's clock), the handler called, its lake objects written
# (and its arrival: the handler's first continue request goes after them), the handler returned
# (the message deleted right after). One clock: all on this machine.
STAGES = ("namenode", "sent", "received", "called", "written", "returned")


def now_ms() -> int:
    return int(time.time() * 1000)


def consume(queue: str, queue_url: str, work: Path, name: str) -> int:
    """The real handler behind LocalSqsLambdaRunner on `queue` (its DynamoDB wherever
    AWS_ENDPOINT_URL_DYNAMODB points); writes what each event and each invocation of continue
    requests met, and the sequencer's position advances this process made, at the end."""
    import boto3

    from hdfs_events import names
    from hdfs_events.envelope import decode_message
    from hdfs_events.manifest import decode_manifest
    from hdfs_events.names import KIND_ATTRIBUTE, KIND_CONTINUE, KIND_MANIFEST
    from tests.kit.sqs_lambda import LocalSqsLambdaRunner, load_handler

    # The handler's clients come from boto3's default session: hook it before they exist.
    boto3.setup_default_session()
    events = boto3.DEFAULT_SESSION.events
    calls: Counter[str] = Counter()
    call_s: Counter[str] = Counter()  # seconds in calls, by "<service>.<Operation>"
    started = threading.local()
    advances: list[tuple[int, int, int, bool]] = []  # (ms, txid, idx, walk unfinished)
    position = names.position_partition(CLUSTER)
    # The invocation's continue requests (the handler's only SendMessage calls), and when it
    # sent its first: an invocation of event messages sends them after its records' lake
    # objects and arrivals are written (MessageConsumer.finish), so what follows is the
    # invocation ending while SQS still holds its messages' groups.
    requests_sent: list[int] = []

    def advance(params: dict[str, Any], **_: Any) -> None:
        values = params.get("ExpressionAttributeValues", {})
        if params["Key"][names.INDEX_PK]["S"] == position and ":txid" in values:
            advances.append((now_ms(), int(values[":txid"]["N"]),
                             int(values[":idx"]["N"]), ":walk" in values))

    def request_sent(**_: Any) -> None:
        requests_sent.append(now_ms())

    def before(**_: Any) -> None:
        started.at = time.perf_counter()

    def after(event_name: str, **_: Any) -> None:
        operation = event_name.split(".", 1)[1]  # after-call.<service>.<Operation>
        calls[operation] += 1
        call_s[operation] += time.perf_counter() - started.at

    events.register("before-parameter-build.dynamodb.UpdateItem", advance)
    events.register("before-call.sqs.SendMessage", request_sent)
    events.register("before-call", before)
    events.register("after-call", after)
    real = load_handler("lambdas.ingest.handler:handler")
    seen: dict[tuple[int, int], tuple[int, ...]] = {}  # key -> STAGES, in ms
    manifests: list[tuple[int, int, int]] = []  # (after, end, stored ms) of each range
    applying: list[tuple[int, int, int, int]] = []  # (called, returned, taken, sent) ms, counts
    sent_by: Counter[str] = Counter()  # continue requests sent, by the invocation's queue
    invocations: list[float] = []  # seconds of each

    def timed(event: dict[str, Any], context: Any) -> Any:
        start = time.perf_counter()
        called = now_ms()
        requests_sent.clear()
        response = real(event, context)
        done = now_ms()
        written = requests_sent[0] if requests_sent else done
        invocations.append(time.perf_counter() - start)
        sent_by[queue] += len(requests_sent)
        failed = {f["itemIdentifier"] for f in (response or {}).get("batchItemFailures", [])}
        taken = 0
        for record in event["Records"]:
            kind = record["messageAttributes"].get(KIND_ATTRIBUTE, {}).get("stringValue")
            if record["messageId"] in failed:
                continue  # comes again
            taken += kind == KIND_CONTINUE
            if kind == KIND_MANIFEST:
                m = decode_manifest(record["body"])
                manifests.append((m.after or 0, m.end, written))
            if kind is not None:
                continue  # a manifest or a continue request: no events
            attributes = record["attributes"]
            sent = int(attributes["SentTimestamp"])
            received = int(attributes["ApproximateFirstReceiveTimestamp"])
            for e in decode_message(record["body"], record["messageAttributes"]):
                if e.timestamp is not None:
                    seen.setdefault((e.txid, e.index),
                                    (e.timestamp, sent, received, called, written, done))
        if taken:
            applying.append((called, done, taken, len(requests_sent)))
        return response

    # The event queue's consumers short-poll with a pause, not moto's long poll: while every
    # visible message's group is in flight (with another consumer), moto's ReceiveMessage
    # rescans the whole queue until its wait ends (sqs/models.py: wait_for_messages returns at
    # once while any message is visible). An empty short poll costs moto ~16 ms of CPU (a
    # scan of the queue); idle consumers back off, 50 ms doubling to 400 ms, so 8 of them do
    # not take a core. The apply queue's one consumer never meets its own group in flight: it
    # long-polls, and a request wakes it as it arrives.
    long_poll = queue == "apply"
    runner = LocalSqsLambdaRunner(queue_url, timed, wait_seconds=1 if long_poll else 0,
                                  visibility_timeout=VISIBILITY_S, timeout_ms=FUNCTION_TIMEOUT_MS)
    (work / f"{name}.ready").touch()
    ready_at = time.perf_counter()
    stop = work / f"{queue}.stop"
    idle = 0
    while True:
        if runner.poll_once() == 0:
            idle += 1
            if not long_poll:
                time.sleep(IDLE_PAUSE_S * 2 ** min(idle - 1, 3))
        else:
            idle = 0
        # "drain": once the queue is empty (nothing sends to it any more); "now": after this poll.
        if stop.exists() and (idle >= 2 or stop.read_text() == "now"):
            break
    consumer_s = time.perf_counter() - ready_at
    (work / f"{name}.json").write_text(json.dumps({
        "queue": queue, "invocations": runner.invocations, "records": runner.records,
        "failures": runner.failures, "batch_errors": runner.batch_errors,
        "calls": dict(calls), "call_s": {k: round(v, 2) for k, v in call_s.items()},
        "consumer_s": round(consumer_s, 2), "invocation_s": invocations,
        "events": [[*k, *v] for k, v in seen.items()], "advances": advances,
        "manifests": manifests, "applying": applying, "continue_sent": dict(sent_by)}))
    return 0


def merge_consumers(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """The consumers' figures as one: each event's earliest delivery (a message redelivered to
    another consumer is seen twice), all position advances, calls and their seconds summed over
    both queues; invocations and records by queue (the event queue's at the top, the apply
    queue's under "apply")."""
    first: dict[tuple[int, int], tuple[int, ...]] = {}
    returned = STAGES.index("returned")
    for part in parts:
        for txid, idx, *stages in part["events"]:
            if (txid, idx) not in first or stages[returned] < first[(txid, idx)][returned]:
                first[(txid, idx)] = tuple(stages)
    calls: Counter[str] = Counter()
    call_s: Counter[str] = Counter()
    sent: Counter[str] = Counter()
    for part in parts:
        calls.update(part["calls"])
        call_s.update(part["call_s"])
        sent.update(part["continue_sent"])

    def of(queue: str) -> dict[str, Any]:
        mine = [p for p in parts if p["queue"] == queue]
        return {**{k: sum(p[k] for p in mine)
                   for k in ("invocations", "records", "failures", "batch_errors")},
                "consumer_s": max((p["consumer_s"] for p in mine), default=0.0),
                "receive_calls": sum(p["calls"].get("sqs.ReceiveMessage", 0) for p in mine),
                "receive_s": sum(p["call_s"].get("sqs.ReceiveMessage", 0.0) for p in mine),
                "invocation_s": [s for p in mine for s in p["invocation_s"]]}

    return {
        **of("events"), "apply": of("apply"),
        "calls": dict(calls), "call_s": {k: round(v, 2) for k, v in call_s.items()},
        "continue_sent": {q: sent[q] for q in QUEUES},
        "events": [[*k, *first[k]] for k in sorted(first)],
        "advances": [a for p in parts for a in p["advances"]],
        "manifests": sorted(m for p in parts for m in p["manifests"]),
        "applying": sorted(a for p in parts for a in p["applying"])}


if __name__ == "__main__":
    queue_name, url, work_dir, consumer_name = sys.argv[1:]
    if queue_name not in QUEUES:
        raise SystemExit(f"bench.chain_consumer: the queue is one of {QUEUES}, not {queue_name!r}")
    raise SystemExit(consume(queue_name, url, Path(work_dir), consumer_name))
