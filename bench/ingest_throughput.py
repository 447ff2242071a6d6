"""Consumer Lambda throughput: events/s per invocation, a batch of 10 records (Lambda's FIFO
maximum): 9 full packed event messages (~1000 events each) and the agent's manifest for them,
against moto server, with the time split by part; with the index on, the invocation of the
apply queue that applies the batch's range counted with it.

    python -m bench.ingest_throughput [--invocations 3] [--events-per-message 1000] [--ops 60000]
                                     [--ddb-latency-ms 0]

The index is fed in txid order (lambdas/ingest/sequencer.py): a message records its arrival,
the manifest closes its txid range, and the invocation ends by sending a continue request to
the apply queue, whose invocation applies the range, reading its events back from the lake. So
every invocation carries the manifest the agent would send for its messages: the range (end of
the previous invocation's range, last txid of its messages], naming them
(hdfs_events.manifest.manifests_for). Messages end at a txid's end, so a range never waits for
a message of the next invocation. After each invocation of event messages, the apply queue's
requests go through the real handler too (tests.kit.sqs_lambda, as its event source mapping
delivers them), timed apart and added: events/s is of both, the consumer's whole work on a
batch. Lambda runs the two concurrently, so the event invocation alone is what holds a batch's
message groups (reported as "event ms").

Parts timed inside the real handler (powertools batch processor included): decode (envelope
decode + checks), logging (powertools Logger lines, to /dev/null), metrics (EMF aggregation and
flush), S3 (PutObject of the lake objects, GetObject of the objects applying ranges reads),
DynamoDB (the index store's and the sequence store's calls: arrivals, manifests, the position
and its lease), SQS (the continue requests sent), and the rest (index logic, sequencer, batch
processor, key derivation). S3, DynamoDB and SQS are timed request by request on the
function's boto3 clients. The function makes calls at once (a batch's lake writes and
arrivals, consumer.AHEAD_WORKERS threads; applying ranges' lake reads, lake_store.
READ_CONCURRENCY; the index's writes, index_table.WRITE_CONCURRENCY), so a part's time is
wall-clock: the time at least one of its calls was in flight, what the invocation waited.
Parts may overlap one another: "AWS wait" is the time any S3, DynamoDB or SQS call was in
flight, "other" the time no timed call ran (never negative). The calls' durations added up
over threads are kept apart (parts_summed_ms, calls): per-call latency, and how many calls
were in flight while the invocation waited.
Configurations: index off / on, log mode all and summary. The baseline, measured in the same
run, is decode alone: what any consumer must spend to read the messages at all. The index's
own rate beside its previous design is bench/index_apply.py's (the previous code run from git).
DynamoDB requests are counted on the wire (API calls, retries not counted), per event, split
into the index's entries and the sequencer's items; round trips are the requests waited for
one after another. Every index-on run must change the index: the bench counts the entries
afterwards and fails if applying ranges missed its invocation's events.

Moto server runs in this process and answers in CPU time alone, shared with the function:
requests issued at once are in flight together but each takes longer, so they hide little of
one another here. `--ddb-latency-ms` adds a sleep to every DynamoDB request, standing in
for real DynamoDB's round trip (single-digit milliseconds): that is what concurrent writes
hide. Writes bench-out/ingest_throughput.json.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import json
import logging
import math
import os
import re
import statistics
import threading
import time
import urllib.request
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

OUT = Path("bench-out/ingest_throughput.json")
PARTS = ("decode", "logging", "metrics", "s3", "dynamodb", "sqs")
SERVICES = ("s3", "dynamodb", "sqs")  # the parts that are AWS calls, timed on their clients
_STARTED = "bench_call_started"  # where a call's start waits in botocore's request context
CLUSTER = "bench"
SENDER_ID = "AIDAEXAMPLEBENCHAGENT"  # the bench cluster's agent, as CLUSTER_SENDERS names it
BATCH = 10  # records per invocation: SQS FIFO event source mappings deliver at most 10
# The sequencer's items sit beside the entries, "<cluster>!..." (lambdas/ingest/sequence_store);
# an entry's partition is "<cluster>#<parent>", and a cluster name holds neither "!" nor "#".
_SEQUENCER_PK = re.compile(r"[^#!]+!(manifests|arrived#|position)")
_PURPOSE = {"manifests": "manifest", "arrived#": "arrival", "position": "position"}
_runs = itertools.count()


class RoundTrips:
    """How many DynamoDB round trips the index waits for, one after another: a read is one
    (its BatchGetItem pages go at once), a walk step's Queries one, a write one per
    WRITE_CONCURRENCY BatchWriteItem calls. Moto answers in CPU time shared with this process,
    so concurrency shows in this count rather than in moto's wall time."""

    def __init__(self, store: Any) -> None:
        self._store, self.waits = store, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def get_many(self, cluster: str, paths: Any) -> Any:
        self.waits += 1
        return self._store.get_many(cluster, paths)

    def children_many(self, *args: Any, **kwargs: Any) -> Any:
        self.waits += 1
        return self._store.children_many(*args, **kwargs)

    def put_many(self, writes: Any) -> Any:
        from lambdas.ingest.index_table import BATCH_WRITE_LIMIT, WRITE_CONCURRENCY
        self.waits += -(-len(writes) // (BATCH_WRITE_LIMIT * WRITE_CONCURRENCY))
        return self._store.put_many(writes)


class SequencerRoundTrips:
    """The sequence store's round trips: every call is one request waited for, but arrivals
    (one BatchGetItem per 100 keys)."""

    def __init__(self, store: Any) -> None:
        self._store, self.waits = store, 0

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._store, name)
        if not callable(value):
            return value

        def waited(*args: Any, **kwargs: Any) -> Any:
            self.waits += 1
            return value(*args, **kwargs)
        return waited

    def arrivals(self, cluster: str, dedup_ids: Any) -> Any:
        from lambdas.ingest.index_table import BATCH_GET_LIMIT
        ids = list(dedup_ids)
        self.waits += -(-len(ids) // BATCH_GET_LIMIT)
        return self._store.arrivals(cluster, ids)


def ddb_purpose(params: Mapping[str, Any]) -> str:
    """What a DynamoDB request (boto3 client parameters) touches in the index table: "index"
    (namespace entries), the sequencer's "arrival", "manifest" or "position", or "other"."""
    pk = _partition_key(params)
    if pk is None:
        return "other"
    match = _SEQUENCER_PK.match(pk)
    if match:
        return _PURPOSE[match.group(1)]
    return "index" if "#" in pk else "other"


def _partition_key(params: Mapping[str, Any]) -> str | None:
    from hdfs_events import names

    def value(item: Mapping[str, Any] | None) -> str | None:
        attr = (item or {}).get(names.INDEX_PK)
        return attr.get("S") if isinstance(attr, Mapping) else None

    if "Item" in params:
        return value(params["Item"])
    if "Key" in params:
        return value(params["Key"])
    if "KeyConditionExpression" in params:
        attr = params.get("ExpressionAttributeValues", {}).get(":pk")
        return attr.get("S") if isinstance(attr, Mapping) else None
    for request in params.get("RequestItems", {}).values():
        if isinstance(request, Mapping):  # BatchGetItem
            return value((request.get("Keys") or [None])[0])
        for write in request:  # BatchWriteItem
            put = write.get("PutRequest") or write.get("DeleteRequest") or {}
            return value(put.get("Item") or put.get("Key"))
    return None


class DynamoRequests:
    """Counts the DynamoDB clients' API calls by what they touch and operation, and adds
    `latency_s` to each, as a stand-in for real DynamoDB's round trip (a sleep: concurrent
    requests overlap)."""

    def __init__(self, clients: Sequence[Any], latency_s: float) -> None:
        self.by_op: dict[str, int] = defaultdict(int)
        self.latency_s = latency_s
        self._lock = threading.Lock()
        emitters = {id(c.meta.events): c.meta.events for c in clients}  # may be shared
        for events in emitters.values():
            events.register("before-parameter-build.dynamodb", self._count)
            if latency_s:
                events.register("before-send.dynamodb", self._wait)

    def _count(self, event_name: str, params: Mapping[str, Any], **_: Any) -> None:
        key = f"{ddb_purpose(params)}.{event_name.rsplit('.', 1)[1]}"
        with self._lock:
            self.by_op[key] += 1

    def _wait(self, **_: Any) -> None:
        time.sleep(self.latency_s)

    def take(self) -> dict[str, int]:
        with self._lock:
            counts, self.by_op = dict(self.by_op), defaultdict(int)
        return counts


def covered_s(intervals: Iterable[tuple[float, float]]) -> float:
    """Seconds during which at least one of `intervals` ([start, end], in any order) was open:
    the length of their union. Calls made at once on several threads count once."""
    covered, reach = 0.0, -math.inf
    for start, end in sorted(intervals):
        if end > reach:
            covered += end - max(start, reach)
            reach = end
    return covered


def time_split(intervals: Mapping[str, Sequence[tuple[float, float]]],
               total_s: float) -> dict[str, Any]:
    """An invocation's `total_s` split by part, from the intervals its parts' calls ran in.
    A part's time is the wall-clock time at least one of its calls was in flight, the time
    waited for it; the calls' durations summed ("summed", per-call latency) exceed it when
    calls ran at once (a batch's lake writes and arrivals, on AHEAD_WORKERS threads). "aws
    wait" is the union of the S3, DynamoDB and SQS calls, "other" what no timed call
    covered: total minus the union of every part's calls, so never negative."""
    def of(parts: Iterable[str]) -> list[tuple[float, float]]:
        return [i for p in parts for i in intervals.get(p, ())]
    return {"parts_s": {p: covered_s(of([p])) for p in PARTS},
            "parts_summed_s": {p: sum(end - start for start, end in of([p])) for p in PARTS},
            "calls": {p: len(of([p])) for p in PARTS},
            "aws_wait_s": covered_s(of(SERVICES)),
            "other_s": total_s - covered_s(of(intervals))}


class Timer:
    """The [start, end] of every timed call, by part, from whichever thread made it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._intervals: dict[str, list[tuple[float, float]]] = defaultdict(list)

    def record(self, part: str, start: float, end: float) -> None:
        with self._lock:
            self._intervals[part].append((start, end))

    def take(self) -> dict[str, list[tuple[float, float]]]:
        """The intervals recorded since the last take."""
        with self._lock:
            taken, self._intervals = dict(self._intervals), defaultdict(list)
        return taken

    def wrap(self, part: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.record(part, start, time.perf_counter())
        return timed

    @contextlib.contextmanager
    def timing_calls(self, clients: Sequence[Any]) -> Iterator[None]:
        """Every API call of the boto3 `clients`, timed under its service's name (s3,
        dynamodb, sqs) from botocore's before-call to its after-call (or after-call-error):
        the request on the wire, retries and any latency the bench adds included, whichever
        thread made it, paginated and fanned-out calls one by one."""
        emitters = {id(c.meta.events): c.meta.events for c in clients}  # may be shared
        hooks = [(f"{stage}.{service}", handler, f"bench-timer-{id(self)}-{stage}.{service}")
                 for service in SERVICES
                 for stage, handler in (("before-call", self._call_started),
                                        ("after-call", self._call_ended),
                                        ("after-call-error", self._call_ended))]
        for events in emitters.values():
            for event, handler, unique_id in hooks:
                events.register(event, handler, unique_id=unique_id)
        try:
            yield
        finally:
            for events in emitters.values():
                for event, _, unique_id in hooks:
                    events.unregister(event, unique_id=unique_id)

    def _call_started(self, context: dict[str, Any], **_: Any) -> None:
        context[_STARTED] = time.perf_counter()

    def _call_ended(self, event_name: str, context: dict[str, Any], **_: Any) -> None:
        start = context.pop(_STARTED, None)
        if start is not None:
            self.record(event_name.split(".")[1], start, time.perf_counter())


class TimedProxy:
    """Every method call on `target` counts toward `part`."""

    def __init__(self, target: Any, part: str, timer: Timer) -> None:
        self._target, self._part, self._timer = target, part, timer

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        return self._timer.wrap(self._part, value) if callable(value) else value


def make_events(ops: int) -> list[Any]:
    from onprem_agent.editlog import read_ops
    from onprem_agent.translate import translate_ops
    from tests.kit.workload import write_edit_log

    buf = io.StringIO()
    write_edit_log(buf, ops=ops, seed=1)
    return list(translate_ops(read_ops(io.BytesIO(buf.getvalue().encode())), CLUSTER))


def message_events(events: Sequence[Any], per_message: int) -> list[list[Any]]:
    """Consecutive events, `per_message` to a message, each message ending at a txid's end
    (one more event or a few when a txid has several), so a range ends with its messages."""
    out: list[list[Any]] = []
    start = 0
    while start < len(events):
        end = min(len(events), start + per_message)
        while end < len(events) and events[end].txid == events[end - 1].txid:
            end += 1
        out.append(list(events[start:end]))
        start = end
    return out


def lambda_events(events: Sequence[Any], per_message: int, batch: int = BATCH) -> list[dict]:
    """Invocations of `batch` records: `batch - 1` event messages, then the agent's manifest
    for them. Only whole invocations; the ranges chain from the first (after = None)."""
    from hdfs_events.envelope import encode_message
    from hdfs_events.ids import message_group_id
    from hdfs_events.manifest import manifests_for

    messages = message_events(events, per_message)
    group = message_group_id(CLUSTER, "/", "single")
    invocations, after = [], None
    for first in range(0, len(messages) - (batch - 1) + 1, batch - 1):
        chunk = messages[first:first + batch - 1]
        wires = [encode_message(m, group_id=group) for m in chunk]
        records = [_record(w.body, w.group_id, w.dedup_id,
                           {"encoding": {"stringValue": w.attributes["encoding"]["StringValue"],
                                         "dataType": "String"}}, n=first + i)
                   for i, w in enumerate(wires)]
        end = chunk[-1][-1].txid
        parts = manifests_for(CLUSTER, after, end, [w.dedup_id for w in wires])
        assert len(parts) == 1, "a bench invocation names far fewer than 400 messages"
        m = parts[0]
        records.append(_record(m.to_json(), m.group_id, m.dedup_id,
                               {"kind": {"stringValue": m.message_attributes()["kind"]
                                         ["StringValue"], "dataType": "String"}},
                               n=first + batch - 1))
        invocations.append({"Records": records})
        after = end
    return invocations


def _record(body: str, group_id: str, dedup_id: str, attributes: dict[str, Any],
            n: int) -> dict[str, Any]:
    return {"messageId": f"m-{n}", "receiptHandle": f"r-{n}", "body": body,
            "attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": "1767225600000",
                           "SenderId": SENDER_ID, "MessageGroupId": group_id,
                           "MessageDeduplicationId": dedup_id,
                           "ApproximateFirstReceiveTimestamp": "1767225600100",
                           "SequenceNumber": str(10**19 + n)},
            "messageAttributes": attributes, "md5OfBody": "", "eventSource": "aws:sqs",
            "eventSourceARN": "arn:aws:sqs:eu-west-1:123456789012:bench.fifo",
            "awsRegion": "eu-west-1"}


def batch_events(batch: dict) -> list[Any]:
    """The events of an invocation's event messages (not its manifest)."""
    from hdfs_events.envelope import decode_message
    from hdfs_events.manifest import is_manifest
    return [e for r in batch["Records"] if not is_manifest(r["messageAttributes"])
            for e in decode_message(r["body"], r["messageAttributes"])]


def index_entries(ddb: Any, table: str, cluster: str = CLUSTER) -> int:
    """Namespace entries of `cluster` in the table (not the sequencer's items)."""
    from hdfs_events import names
    pages = ddb.get_paginator("scan").paginate(TableName=table,
                                              ProjectionExpression="#pk",
                                              ExpressionAttributeNames={"#pk": names.INDEX_PK})
    return sum(1 for page in pages for item in page["Items"]
               if item[names.INDEX_PK]["S"].startswith(f"{cluster}#"))


def reset_moto(endpoint: str) -> Callable[[], None]:
    def reset() -> None:
        urllib.request.urlopen(urllib.request.Request(f"{endpoint}/moto-api/reset",
                                                      method="POST"), timeout=30).read()
    return reset


def run_config(name: str, batches: list[dict], *, index: bool, log_mode: str,
               latency_s: float = 0.0,
               reset: Callable[[], None] | None = None) -> dict[str, Any]:
    """Runs `batches` through the real handler, one invocation each, against the AWS the
    environment points at (moto server in `main`, moto in-process in the tests)."""
    import boto3
    from aws_lambda_powertools import Logger

    from hdfs_events import names
    from lambdas.ingest import consumer as consumer_module
    from lambdas.ingest import handler
    from tests.kit.ingest_aws import BUCKET, TABLE, create_resources, wait_for_the_next_window
    from tests.kit.lambda_events import Context
    from tests.kit.sqs_lambda import LocalSqsLambdaRunner

    if reset is not None:
        reset()
    sqs = boto3.client("sqs")
    queues = create_resources(boto3.client("s3"), boto3.client("dynamodb"), sqs)
    os.environ.update({names.ENV_LAKE_BUCKET: BUCKET, names.ENV_INDEX_TABLE: TABLE,
                       names.ENV_INDEX_PREFIXES: "/" if index else "",
                       names.ENV_LOG_MODE: log_mode, names.ENV_APPLY_QUEUE_URL: queues.apply,
                       names.ENV_CLUSTER_SENDERS: json.dumps({CLUSTER: [SENDER_ID]})})
    devnull = open(os.devnull, "w")  # noqa: SIM115 - lives for the run
    # powertools reuses the stream of a service name it has seen: one name per run.
    handler_logger = handler.logger
    handler.logger = Logger(service=f"bench-{next(_runs)}-{name}", stream=devnull)
    handler.consumer.cache_clear()
    consumer = handler.consumer()
    timer = Timer()
    consumer.logger = TimedProxy(consumer.logger, "logging", timer)
    consumer.telemetry = TimedProxy(consumer.telemetry, "metrics", timer)
    # S3, DynamoDB and SQS are timed on the function's clients, call by call, in any thread.
    clients = [consumer.lake.s3]
    if consumer.continue_requests is not None:
        clients.append(consumer.continue_requests.sqs)
    requests = trips = seq_trips = None
    sequencer = consumer.sequencer
    if sequencer is not None:
        ddb_clients = [sequencer.index.store.ddb, sequencer.store.ddb]
        clients += [sequencer.lake.s3, *ddb_clients]
        trips = RoundTrips(sequencer.index.store)
        sequencer.index.store = trips
        seq_trips = SequencerRoundTrips(sequencer.store)
        sequencer.store = seq_trips
        requests = DynamoRequests(ddb_clients, latency_s)
    applied: list[dict[str, Any]] = []
    apply_ranges = consumer.apply_ranges

    def apply_noted(deadline_ms: int) -> dict[str, Any]:
        reports = apply_ranges(deadline_ms)
        applied.append(reports)
        return reports

    consumer.apply_ranges = apply_noted  # type: ignore[method-assign]
    apply_s: list[float] = []

    def timed_apply(event: dict[str, Any], context: Any) -> Any:
        start = time.perf_counter()
        with contextlib.redirect_stdout(devnull):
            response = handler.handler(event, context)
        apply_s.append(time.perf_counter() - start)
        return response

    # The apply queue's mapping: its requests delivered as Lambda does, through the handler.
    apply_queue = LocalSqsLambdaRunner(queues.apply, timed_apply, wait_seconds=0, sqs=sqs)
    decode = consumer_module.decode_envelope  # the contract's checks included
    consumer_module.decode_envelope = timer.wrap("decode", decode)
    rows = []
    try:
        with timer.timing_calls(clients):
            for batch in batches:
                timer.take()
                if requests is not None:
                    requests.take()
                for counter in (trips, seq_trips):
                    if counter is not None:
                        counter.waits = 0
                events = batch_events(batch)
                applied.clear()
                apply_s.clear()
                start = time.perf_counter()
                with contextlib.redirect_stdout(devnull):
                    response = handler.handler(batch, Context())
                event_s = time.perf_counter() - start
                assert response == {"batchItemFailures": []}, response
                # Untimed: under load a window a second and cluster serves every batch of that
                # second; one batch at a time, each would wait out its own.
                wait_for_the_next_window()
                apply_queue.run_until_idle(max_idle_polls=1)
                if apply_queue.failures or apply_queue.batch_errors:
                    raise AssertionError(f"{name}: an apply invocation failed")
                if sequencer is not None:
                    _check_applied(name, applied,
                                   [e for e in events if sequencer.index.relevant(e)])
                by_op = requests.take() if requests is not None else {}
                total_s = event_s + sum(apply_s)
                split = time_split(timer.take(), total_s)
                rows.append({"events": len(events), "total_s": total_s,
                             "event_s": event_s, "apply_s": sum(apply_s),
                             "apply_invocations": len(apply_s), **split,
                             "s3_calls": split["calls"]["s3"], "ddb_calls": sum(by_op.values()),
                             "ddb_by_op": by_op,
                             "ddb_waits": (trips.waits if trips else 0)
                             + (seq_trips.waits if seq_trips else 0),
                             "ddb_sequencer_waits": seq_trips.waits if seq_trips else 0})
        entries = index_entries(boto3.client("dynamodb"), TABLE) if index else 0
    finally:
        consumer_module.decode_envelope = decode
        handler.consumer.cache_clear()
        handler.logger = handler_logger
        devnull.close()
    if index and entries == 0:
        raise AssertionError(f"{name}: the index holds no entry after {len(rows)} invocations")
    return {**summarise(name, rows), "index_entries": entries}


def _check_applied(name: str, applied: list[dict[str, Any]], relevant: list[Any]) -> None:
    """The invocation applied its range: every indexed event of its messages."""
    reports = applied[-1] if applied else {}
    report = reports.get(CLUSTER)
    if report is None:
        raise AssertionError(f"{name}: applying ranges failed (the handler's log line "
                             "'index apply failed')")
    if report.waiting_for is not None or report.more or report.busy:
        raise AssertionError(f"{name}: applying ranges stopped short: {report}")
    if report.ranges != 1 or report.events != len(relevant):
        raise AssertionError(f"{name}: the invocation applied {report.ranges} range(s), "
                             f"{report.events} events; expected 1 and {len(relevant)}")
    last = max(e.txid for e in relevant)
    if report.position is None or report.position.txid is None or report.position.txid < last:
        raise AssertionError(f"{name}: position {report.position} short of txid {last}")


def summarise(name: str, rows: list[dict]) -> dict[str, Any]:
    total = statistics.median(r["total_s"] for r in rows)
    events = rows[0]["events"]

    def ms(value: Callable[[dict], float]) -> float:
        return statistics.median(value(r) for r in rows) * 1000

    def parts_ms(key: str) -> dict[str, float]:
        return {p: statistics.median(r.get(key, {}).get(p, 0.0) for r in rows) * 1000
                for p in PARTS}

    def per_event(calls: Callable[[dict], float]) -> float:
        return statistics.median(calls(r) / r["events"] for r in rows)

    def calls_of(r: dict, purposes: tuple[str, ...]) -> int:
        return sum(n for k, n in r.get("ddb_by_op", {}).items()
                   if k.split(".", 1)[0] in purposes)

    return {"config": name, "events_per_invocation": events, "invocations": len(rows),
            "total_ms": total * 1000, "events_per_s": events / total,
            # The invocation of event messages alone, and the apply queue's it asked for.
            "event_ms": statistics.median(r.get("event_s", r["total_s"]) for r in rows) * 1000,
            "apply_ms": statistics.median(r.get("apply_s", 0.0) for r in rows) * 1000,
            "apply_invocations": statistics.median(r.get("apply_invocations", 0) for r in rows),
            # Wall-clock: the time at least one of a part's calls ran (time_split).
            "parts_ms": parts_ms("parts_s"),
            # The calls' durations added up across threads: per-call latency, not time waited.
            "parts_summed_ms": parts_ms("parts_summed_s"),
            "aws_wait_ms": ms(lambda r: r.get("aws_wait_s", 0.0)),
            # The invocations' time with no AWS call in flight: the function's own work.
            "own_ms": ms(lambda r: r["total_s"] - r.get("aws_wait_s", 0.0)),
            "other_ms": ms(lambda r: r.get("other_s", r["total_s"])),
            "calls": {p: statistics.median(r.get("calls", {}).get(p, 0) for r in rows)
                      for p in PARTS},
            "s3_calls": statistics.median(r.get("s3_calls", 0) for r in rows),
            "dynamodb_calls": statistics.median(r.get("ddb_calls", 0) for r in rows),
            "dynamodb_calls_per_event": per_event(lambda r: r.get("ddb_calls", 0)),
            "dynamodb_index_calls_per_event": per_event(lambda r: calls_of(r, ("index",))),
            "dynamodb_sequencer_calls_per_event": per_event(
                lambda r: calls_of(r, ("arrival", "manifest", "position"))),
            "dynamodb_waits_per_event": per_event(lambda r: r.get("ddb_waits", 0)),
            "dynamodb_sequencer_waits_per_event": per_event(
                lambda r: r.get("ddb_sequencer_waits", 0)),
            "dynamodb_by_op": {op: statistics.median(r.get("ddb_by_op", {}).get(op, 0)
                                                     for r in rows)
                               for op in sorted({o for r in rows
                                                 for o in r.get("ddb_by_op", {})})}}


def baseline_decode(batches: list[dict]) -> dict[str, Any]:
    from hdfs_events.envelope import decode_message
    from hdfs_events.manifest import is_manifest
    rows = []
    for batch in batches:
        start = time.perf_counter()
        n = sum(len(decode_message(r["body"], r["messageAttributes"])) for r in batch["Records"]
                if not is_manifest(r["messageAttributes"]))
        rows.append({"events": n, "total_s": time.perf_counter() - start})
    return summarise("baseline: decode only", rows)


def print_results(results: list[dict[str, Any]], *, per_message: int, invocations: int,
                  endpoint: str, latency_ms: float) -> None:
    base = results[0]["total_ms"]
    print(f"consumer: batch of {BATCH - 1} messages x {per_message} events + their manifest, "
          f"median of {invocations} invocations, moto server on {endpoint}, DynamoDB latency "
          f"added {latency_ms:g} ms; total = the event invocation (event ms) + the apply "
          f"queue's invocation it asked for (index on); a part's ms are wall-clock, the time "
          f"at least one of its calls ran (AWS wait: any S3, DynamoDB or SQS call), other = "
          f"total - the time any timed call ran")
    head = f"{'config':<28}{'events/s':>10}{'total ms':>10}{'event ms':>10}{'x decode':>9}"
    head += "".join(f"{p:>10}" for p in (*PARTS, "AWS wait", "other"))
    head += f"{'S3 req':>8}{'DDB req':>9}"
    head += f"{'DDB/ev':>8}{'waits/ev':>9}{'entries':>9}"
    print(head)
    for r in results:
        parts = r.get("parts_ms", {})
        line = (f"{r['config']:<28}{r['events_per_s']:>10.0f}{r['total_ms']:>10.1f}"
                f"{r.get('event_ms', r['total_ms']):>10.1f}{r['total_ms'] / base:>9.1f}")
        line += "".join(f"{parts.get(p, 0.0):>10.1f}" for p in PARTS)
        line += f"{r.get('aws_wait_ms', 0.0):>10.1f}{r.get('other_ms', 0.0):>10.1f}"
        line += f"{r.get('s3_calls', 0):>8.0f}{r.get('dynamodb_calls', 0):>9.0f}"
        line += f"{r.get('dynamodb_calls_per_event', 0):>8.2f}"
        line += f"{r.get('dynamodb_waits_per_event', 0):>9.3f}"
        line += f"{r['index_entries']:>9}" if r.get("index_entries") else f"{'':>9}"
        print(line)
    print("AWS calls' durations added up over the threads that made them at once (ms summed "
          "/ calls = ms per call; summed / wall-clock = calls in flight while waiting):")
    for r in results:
        summed, calls = r.get("parts_summed_ms", {}), r.get("calls", {})
        if not any(calls.get(p) for p in SERVICES):
            continue
        print(f"  {r['config']:<28}" + "; ".join(
            f"{p} {summed[p]:.1f} / {calls[p]:.0f} = {summed[p] / calls[p]:.1f} ms, "
            f"x{summed[p] / max(r['parts_ms'][p], 1e-9):.1f}"
            for p in SERVICES if calls.get(p)))
    print("DynamoDB per event, index-on rows: index entries / sequencer items (requests; round "
          "trips), and what the round trips alone allow at DynamoDB's ~5 ms each:")
    for r in results:
        if not r.get("index_entries"):
            continue
        ceiling = 1 / (r["dynamodb_waits_per_event"] * 0.005)
        print(f"  {r['config']:<28} requests {r['dynamodb_index_calls_per_event']:.3f} / "
              f"{r['dynamodb_sequencer_calls_per_event']:.3f}; round trips "
              f"{r['dynamodb_waits_per_event'] - r['dynamodb_sequencer_waits_per_event']:.3f}"
              f" / {r['dynamodb_sequencer_waits_per_event']:.3f}: at most {ceiling:.0f} "
              f"events/s; {r['dynamodb_by_op']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--invocations", type=int, default=3)
    parser.add_argument("--events-per-message", type=int, default=1000)
    parser.add_argument("--ops", type=int, default=0, help="edit-log records to generate")
    parser.add_argument("--ddb-latency-ms", type=float, default=0.0,
                        help="added to every DynamoDB request (real DynamoDB: ~5)")
    args = parser.parse_args(argv)
    latency_s = args.ddb_latency_ms / 1000
    for key, value in {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
                       "AWS_DEFAULT_REGION": "eu-west-1", "AWS_REGION": "eu-west-1"}.items():
        os.environ.setdefault(key, value)
    needed = args.invocations * (BATCH - 1) * args.events_per_message
    events = make_events(args.ops or needed * 4)
    batches = lambda_events(events, args.events_per_message)[:args.invocations]
    if len(batches) < args.invocations:
        raise SystemExit(f"{len(events)} events generated, {needed}+ needed: raise --ops")

    from moto.server import ThreadedMotoServer

    from tests.kit import moto_fixes
    moto_fixes.apply()  # the index's parallel writes to a new partition all land
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    os.environ["AWS_ENDPOINT_URL"] = endpoint
    try:
        results = [baseline_decode(batches)]
        configs = [("index off, log all", False, "all"),
                   ("index off, log summary", False, "summary"),
                   ("index on, log all", True, "all"),
                   ("index on, log summary", True, "summary")]
        for name, index, mode in configs:
            results.append(run_config(name, batches, index=index, log_mode=mode,
                                      latency_s=latency_s, reset=reset_moto(endpoint)))
    finally:
        server.stop()
    print_results(results, per_message=args.events_per_message, invocations=args.invocations,
                  endpoint=endpoint, latency_ms=args.ddb_latency_ms)
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps({"batch_size": BATCH, "event_messages_per_invocation": BATCH - 1,
                               "events_per_message": args.events_per_message,
                               "ddb_latency_ms": args.ddb_latency_ms, "results": results},
                              indent=2))
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
