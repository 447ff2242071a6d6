"""Faults between the agent and SQS lose nothing and keep each group's order.

Injected with botocore's own event hooks on the sender's client, talking to moto server:
throttling and 5xx responses on a share of calls (botocore retries, then the sender), entries
reported in the response's `Failed` list (not sent), and responses lost after SQS accepted the
batch (the sender re-sends whole messages; a dedup on (cluster, txid, index) removes them)."""

from __future__ import annotations

import json
import random
import threading
from pathlib import Path
from typing import Any

import boto3
from botocore.awsrequest import AWSResponse
from botocore.config import Config
from botocore.exceptions import ConnectionClosedError

from hdfs_events.ids import message_group_id
from onprem_agent.commands.replay import replay
from onprem_agent.config import load_config
from onprem_agent.sender import SqsSender
from tests.kit.workload import write_edit_log
from tests.unit.agent.chain import check_covered

from .conftest import (
    Drainer,
    check_delivery,
    create_fifo_queue,
    event_keys_by_message,
    manifests,
    source_events,
)


class _Raw:
    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **kwargs: Any):
        yield self._body


class FaultInjector:
    def __init__(self, client: Any, *, seed: int, throttle: float, server_error: float,
                 partial: float, lost_response: float) -> None:
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.throttle, self.server_error = throttle, server_error
        self.partial, self.lost_response = partial, lost_response
        self.counts = {"throttled": 0, "5xx": 0, "failed_entries": 0, "lost": 0, "calls": 0}
        events = client.meta.events
        events.register("provide-client-params.sqs.SendMessageBatch", self.drop_entries)
        events.register("before-send.sqs.SendMessageBatch", self.fail_call)
        events.register("after-call.sqs.SendMessageBatch", self.report_dropped)

    def _roll(self, share: float) -> bool:
        with self.lock:
            return self.rng.random() < share

    def _count(self, what: str, n: int = 1) -> None:
        with self.lock:
            self.counts[what] += n

    def drop_entries(self, params: dict[str, Any], context: dict[str, Any], **kw: Any) -> None:
        """A partial batch failure: some entries are not sent and come back in `Failed`.

        A batch of one fails whole, answered without sending (fail_call): a loaded machine packs
        slower than the sender sends, and then nearly every batch holds one entry."""
        self._count("calls")
        entries = params["Entries"]
        if not self._roll(self.partial):
            return
        if len(entries) == 1:  # SendMessageBatch takes no empty batch
            context["dropped"], context["unsent"] = [entries[0]["Id"]], True
            return
        dropped = [e for e in entries[1:] if self._roll(0.5)]
        params["Entries"] = [e for e in entries if e not in dropped]
        context["dropped"] = [e["Id"] for e in dropped]

    def fail_call(self, request: Any, **kw: Any) -> AWSResponse | None:
        if self._roll(self.throttle):
            self._count("throttled")
            return self._error(400, "ThrottlingException", "Rate exceeded")
        if self._roll(self.server_error):
            self._count("5xx")
            return self._error(500, "InternalError", "We encountered an internal error")
        if request.context.get("unsent"):  # report_dropped fills in `Failed`
            return self._response(200, {"Successful": [], "Failed": []})
        return None

    def report_dropped(self, parsed: dict[str, Any], context: dict[str, Any], **kw: Any) -> None:
        dropped = context.get("dropped", [])
        if dropped and "Successful" in parsed:
            parsed.setdefault("Failed", []).extend(
                {"Id": i, "SenderFault": False, "Code": "InternalError",
                 "Message": "injected"} for i in dropped)
            self._count("failed_entries", len(dropped))
        if "Successful" in parsed and not context.get("unsent") and self._roll(self.lost_response):
            # SQS has the messages; the agent never hears so.
            self._count("lost")
            raise ConnectionClosedError(endpoint_url="injected")

    @classmethod
    def _error(cls, status: int, code: str, message: str) -> AWSResponse:
        return cls._response(status, {"__type": f"com.amazonaws.sqs#{code}", "message": message})

    @staticmethod
    def _response(status: int, body: dict[str, Any]) -> AWSResponse:
        raw = json.dumps(body).encode()
        return AWSResponse("http://injected", status,
                           {"Content-Type": "application/x-amz-json-1.0"}, _Raw(raw))


def test_throttling_5xx_partial_failures_and_lost_responses_lose_nothing(
        moto_endpoint: str, tmp_path: Path, agent_toml) -> None:
    edits = tmp_path / "edits.xml"
    write_edit_log(edits, ops=12_000, seed=8)
    url = create_fifo_queue()
    config = load_config(agent_toml(url, max_message_bytes=2048, linger_ms=20))
    client = boto3.client("sqs", config=Config(retries={"mode": "standard", "max_attempts": 2}))
    faults = FaultInjector(client, seed=1, throttle=0.15, server_error=0.1, partial=0.3,
                           lost_response=0.05)
    sender = SqsSender(url, client, max_in_flight_batches=4, max_backoff_s=0.2)
    with Drainer(url) as drainer:
        assert replay(config, [edits], stop=threading.Event(), sender=sender) == 0
        received = drainer.finish()
    counts = faults.counts
    assert min(counts["throttled"], counts["5xx"], counts["failed_entries"], counts["lost"]) > 0
    expected = source_events(edits, "c1")
    check_delivery(received, expected, lambda e: message_group_id("c1", e.path, "prefix:2"))
    assert json.loads((tmp_path / "checkpoint.json").read_text())["txid"] == 12_000
    # Manifests went through the same faults: a re-sent one arrives twice, none is missing.
    check_covered(manifests(received), event_keys_by_message(received),
                  [e.key for e in expected], start=None, end=12_000)
