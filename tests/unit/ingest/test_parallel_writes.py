"""A batch's writes run in parallel (MessageConsumer.storing_ahead), and what the batch reports,
logs and counts is what the one-by-one processing of its records says."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from botocore.exceptions import ClientError

from hdfs_events import names
from hdfs_events.continue_request import ContinueRequest
from lambdas.ingest import handler
from lambdas.ingest.sequencer import Arrival
from tests.kit.ingest_aws import emf_documents, log_lines
from tests.kit.ingest_builders import two_groups_batch
from tests.kit.lambda_events import Context, event, record

WAIT_S = 5  # long for three moto PUTs; a consumer writing one by one fails after it, not hangs
SLOW_S = 0.3  # a write still under way when the processor has finished the batch


def _failed(response: dict[str, Any]) -> list[str]:
    return [f["itemIdentifier"] for f in response["batchItemFailures"]]


def _on_lake_put(hook: Any) -> None:
    """`hook(key)` runs as each lake PUT starts, in the thread making it."""
    handler.consumer().lake.s3.meta.events.register(
        "before-parameter-build.s3.PutObject", lambda params, **_: hook(params["Key"]))


def _slow_down(key: str) -> None:
    raise ClientError({"Error": {"Code": "SlowDown", "Message": "Reduce your rate"},
                       "ResponseMetadata": {"HTTPStatusCode": 503}}, "PutObject")


class RecordingSequenceStore:
    """Double of the consumer's sequence store: the real one, with the order in which arrivals
    were stored, and one arrival slow to store."""

    def __init__(self, store: Any, slow_arrival: str, calls: list[str]) -> None:
        self.store, self.slow_arrival, self.calls = store, slow_arrival, calls

    def put_arrival(self, cluster: str, arrival: Arrival) -> None:
        if arrival.dedup_id == self.slow_arrival:
            time.sleep(SLOW_S)
        self.store.put_arrival(cluster, arrival)
        self.calls.append(f"arrival {arrival.dedup_id}")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


class RecordingContinueRequests:
    """Double of the consumer's apply queue: the real one, noting when a request was sent."""

    def __init__(self, requests: Any, calls: list[str]) -> None:
        self.requests, self.calls = requests, calls

    def send_continue(self, request: ContinueRequest, *, key: str) -> None:
        self.calls.append(f"continue {request.cluster}")
        self.requests.send_continue(request, key=key)


def test_the_lake_puts_of_a_batch_are_in_flight_at_once(aws) -> None:
    batch = two_groups_batch()
    all_in_flight = threading.Barrier(len(batch), timeout=WAIT_S)
    _on_lake_put(lambda key: all_in_flight.wait())
    assert handler.handler(event(*batch), Context()) == {"batchItemFailures": []}
    assert len(aws.lake_keys("raw/")) == len(batch)


def test_a_failed_put_fails_its_group_and_what_ran_ahead_is_logged_only_when_processed(
        aws, capsys, logs) -> None:
    a1, b1, a2 = two_groups_batch()
    broken = {a1.dedup_id}

    def put(key: str) -> None:
        if any(dedup_id in key for dedup_id in broken):
            _slow_down(key)
        if a2.dedup_id in key:
            time.sleep(SLOW_S)  # still writing when the processor has skipped A2

    _on_lake_put(put)
    batch = event(a1, b1, a2)
    records = batch["Records"]
    assert _failed(handler.handler(batch, Context())) == [records[0]["messageId"],
                                                          records[2]["messageId"]]
    # A2's writes ran ahead and were waited for, but A2 itself was skipped: no line, no count.
    assert [k for k in aws.lake_keys("raw/") if a2.dedup_id in k]
    out = capsys.readouterr().out
    assert sorted(r["txid"] for r in log_lines(out) if r.get("message") == "hdfs event") == [
        20, 21, 22]
    (counted,) = [d for d in emf_documents(out) if names.METRIC_MESSAGES in d]
    assert counted[names.METRIC_MESSAGES] == [1.0]

    # SQS delivers A1 and A2 again; the fault has passed. Nothing of the last batch is left over:
    # A2 is written again and logged once, now.
    broken.clear()
    puts: list[str] = []
    _on_lake_put(puts.append)
    retry = {"Records": [record(a1, receive_count=2), record(a2, receive_count=2)]}
    assert _failed(handler.handler(retry, Context())) == []
    assert len([k for k in puts if a2.dedup_id in k]) == 1
    out = capsys.readouterr().out
    assert sorted(r["txid"] for r in log_lines(out) if r.get("message") == "hdfs event") == [
        10, 11, 12, 30, 31, 32]


def test_every_arrival_of_the_batch_is_stored_before_the_continue_request_is_sent(
        aws, monkeypatch: pytest.MonkeyPatch) -> None:
    """The request's invocation must find every arrival its batch stored: one stored after it
    would wait for the next request."""
    a1, b1, a2 = two_groups_batch()
    consumer, calls = handler.consumer(), []
    monkeypatch.setattr(consumer.sequencer, "store", RecordingSequenceStore(
        consumer.sequencer.store, slow_arrival=a2.dedup_id, calls=calls))
    monkeypatch.setattr(consumer, "continue_requests", RecordingContinueRequests(
        consumer.continue_requests, calls))
    _on_lake_put(lambda key: _slow_down(key) if a1.dedup_id in key else None)
    handler.handler(event(a1, b1, a2), Context())
    # A2 was skipped (A1 failed), but its arrival, stored ahead, is a true one: stored before.
    assert sorted(calls[:-1]) == sorted([f"arrival {b1.dedup_id}", f"arrival {a2.dedup_id}"])
    assert calls[-1] == "continue prod"
