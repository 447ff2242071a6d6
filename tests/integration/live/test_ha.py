"""Two live agents for one cluster, as on two edge nodes: the real `serve` loop and `run_term`,
one lease and one DynamoDB checkpoint in the agent-state table, one FIFO queue (moto server
over HTTP), one NameNode double. They are threads of this process because JPype allows one JVM
per process; each has its own boto3 clients, stream, sender and lease.

The leader crashes mid-flight: from one instant on, its process makes no call at all (AWS or
NameNode), so it neither renews nor releases the lease, nor flushes its open messages, nor saves
its checkpoint. The standby takes over once the lease has run out and ships the rest from the
shared checkpoint.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from hdfs_events.ids import message_group_id
from onprem_agent.checkpoint import DynamoCheckpointStore
from onprem_agent.config import parse_config
from onprem_agent.lease import Lease, LeaseKeeper
from onprem_agent.live.agent import AgentState, gap_reporter, run_term, serve
from onprem_agent.live.convert import JavaBatchConverter
from onprem_agent.live.settings import load_live_settings
from onprem_agent.live.stream import LiveStats, StreamSource
from onprem_agent.opsmetrics import Alerts
from onprem_agent.sender import SqsSender
from tests.integration.agent.conftest import (
    Drainer,
    check_delivery,
    create_fifo_queue,
    event_keys_by_message,
    manifests,
)
from tests.integration.live.conftest import STATE_TABLE
from tests.unit.agent.chain import check_covered
from tests.unit.live.doubles import ListingDouble, NameNodeDouble, unlink

CLUSTER = "prod"
LEASE_S = 3.0  # short, so the test waits seconds for the takeover, not the default 30
RENEW_S = 0.5
DEADLINE_S = 120.0  # generous: only a hang fails it, never a slow machine


class Process:
    """One agent's process as the outside world sees it. After `kill()` every call it makes to
    AWS or the NameNode blocks, as if the process were gone; a call already under way completes,
    as a request already on the wire would. `reap()` (test teardown) makes the blocked calls
    fail so that its threads unwind; nothing they attempt then reaches AWS either."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.killed = threading.Event()
        self.reaped = threading.Event()
        # (time.time() when it returned or raised, operation), for every call that got past
        # the gate, so reached AWS or the NameNode
        self.calls: list[tuple[float, str]] = []

    def gate(self, operation: str) -> None:
        if self.killed.is_set():
            self.reaped.wait()
            raise ClientError({"Error": {"Code": "ServiceUnavailable",
                                         "Message": f"agent {self.name} is dead"},
                               "ResponseMetadata": {"HTTPStatusCode": 503}}, operation)

    def call(self, operation: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        self.gate(operation)
        try:
            return fn(*args, **kwargs)
        finally:
            self.calls.append((time.time(), operation))

    def client(self, service: str) -> Any:
        return _ProcessClient(boto3.client(service), self)

    def stream_source(self, nn: NameNodeDouble) -> StreamSource:
        def open_stream(after: int | None) -> Any:
            return _ProcessStream(self.call("open_stream", nn.open_stream, after), self)

        return StreamSource(open_stream=open_stream,
                            current_txid=lambda: self.call("current_txid", lambda: nn.last_txid))

    def sends(self) -> list[float]:
        return [t for t, op in self.calls if op == "send_message_batch"]


class _ProcessClient:
    """A boto3 client whose API calls go through the process gate (exceptions, meta pass)."""

    def __init__(self, client: Any, process: Process) -> None:
        self._client, self._process = client, process

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if name not in self._client.meta.method_to_api_mapping:
            return attr
        return lambda *a, **kw: self._process.call(name, attr, *a, **kw)


class _ProcessStream:
    def __init__(self, stream: Any, process: Process) -> None:
        self._stream, self._process = stream, process

    def poll(self, *timeout: Any) -> Any:
        return self._process.call("poll", self._stream.poll, *timeout)

    def getTxidsBehindEstimate(self) -> int:
        return self._process.call("lag", self._stream.getTxidsBehindEstimate)


class Agent:
    """One agent: `serve` with its own lease, each term a real `run_term`."""

    def __init__(self, name: str, nn: NameNodeDouble, config: Any, settings: Any) -> None:
        self.process = Process(name)
        self.state = AgentState(stats=LiveStats())
        self.stop = threading.Event()
        self.error: BaseException | None = None
        dynamodb = self.process.client("dynamodb")
        self.lease = Lease(STATE_TABLE, CLUSTER, duration_s=LEASE_S, holder_id=f"edge-{name}",
                           client=dynamodb)
        self.acquired: list[float] = []  # time.time() after each successful try_acquire
        self.tries = 0
        # time.time() taken before each successful try_acquire or renew: the lease then runs
        # to at least that time + LEASE_S (the lease reads the clock after it).
        self.extended: list[float] = []
        self._record_lease_calls()

        def term(keeper: LeaseKeeper | None) -> None:
            run_term(config, settings, self.state,
                     stream_source=self.process.stream_source(nn),
                     converter=JavaBatchConverter(CLUSTER), lister=ListingDouble([]),
                     sender=SqsSender.from_config(config, client=self.process.client("sqs")),
                     checkpoint=DynamoCheckpointStore(STATE_TABLE, CLUSTER, client=dynamodb),
                     stop=self.stop, on_gap=gap_reporter(CLUSTER, Alerts(None), cloudwatch=False),
                     keeper=keeper)

        self.thread = threading.Thread(target=self._serve, args=(term,), name=f"agent-{name}")

    def _record_lease_calls(self) -> None:
        lease, acquire, renew = self.lease, self.lease.try_acquire, self.lease.renew

        def try_acquire() -> bool:
            self.tries += 1
            before = time.time()
            won = acquire()
            if won:
                self.extended.append(before)
                self.acquired.append(time.time())
            return won

        def renewed() -> bool:
            before = time.time()
            kept = renew()
            if kept:
                self.extended.append(before)
            return kept

        lease.try_acquire, lease.renew = try_acquire, renewed  # type: ignore[method-assign]

    def _serve(self, term: Callable[[LeaseKeeper | None], None]) -> None:
        try:
            serve(self.lease, self.stop, renew_interval_s=RENEW_S, term=term)
        except BaseException as exc:  # the crashed agent's unwinding; asserted on below
            self.error = exc

    def checkpoint(self) -> int | None:
        pipeline = self.state.pipeline
        return None if pipeline is None else pipeline.snapshot().checkpoint_txid


def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.02)


def config_for(queue_url: str):
    doc = {"cluster": CLUSTER, "sqs": {"queue_url": queue_url},
           "checkpoint": {"store": "dynamodb", "table": STATE_TABLE, "interval_ms": 50},
           "packing": {"linger_ms": 50},
           "sending": {"shutdown_timeout_ms": 1000},
           "hdfs": {"uri": "hdfs://nameservice1"},
           "inotify": {"poll_timeout_ms": 20, "gap_policy": "stop"},
           "metrics": {"heartbeat_interval_s": 0, "prometheus_port": 0}}
    config = parse_config(doc, Path("agent.toml"))
    return config, load_live_settings(config)


def produce(nn: NameNodeDouble, first: int, count: int, pause_s: float = 0.0) -> None:
    for i in range(first, first + count):
        nn.log(unlink(f"/data/g{i % 4}/f{i:04d}", ts=1_700_000_000_000 + i))
        if i % 10 == 0:
            nn.skip(1)  # a block allocation: a txid without an event
        if pause_s:
            time.sleep(pause_s)


class CheckpointWatch:
    """Reads the shared checkpoint item all along: every value it ever had, in order."""

    def __init__(self) -> None:
        self.store = DynamoCheckpointStore(STATE_TABLE, CLUSTER)
        self.seen: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="checkpoint-watch")

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            txid = self.store.load()
            if txid is not None and (not self.seen or self.seen[-1][1] != txid):
                self.seen.append((time.time(), txid))

    def __enter__(self) -> CheckpointWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


@pytest.mark.slow
def test_the_standby_takes_over_a_crashed_leader_and_every_event_arrives(state_table, jvm):
    queue = create_fifo_queue("events.fifo")
    nn = NameNodeDouble()
    config, settings = config_for(queue)
    a, b = Agent("a", nn, config, settings), Agent("b", nn, config, settings)
    DynamoCheckpointStore(STATE_TABLE, CLUSTER).save(0)  # ship from the NameNode's first txid
    produce(nn, 0, 150)
    try:
        with Drainer(queue) as drainer, CheckpointWatch() as watch:
            a.thread.start()
            wait_for(lambda: a.state.leader, "A to lead")
            b.thread.start()
            wait_for(lambda: b.tries >= 3, "B to try for the lease (standby)")
            wait_for(lambda: (a.checkpoint() or 0) >= 100, "A to ship and save a checkpoint")

            # More edits arrive while A ships; A dies halfway through them.
            producer = threading.Thread(target=produce, args=(nn, 150, 200, 0.002))
            producer.start()
            wait_for(lambda: nn.last_txid >= 250, "the NameNode to log more edits")
            a.process.killed.set()
            killed_at = time.time()
            producer.join()

            wait_for(lambda: b.state.leader, "B to take over")
            produce(nn, 350, 50)  # edits after the takeover
            wait_for(lambda: b.checkpoint() == nn.last_txid, "B's checkpoint to reach the end")
            b.stop.set()
            b.thread.join(DEADLINE_S)
            received = drainer.finish()
    finally:
        b.stop.set()
        a.process.reaped.set()  # the dead process's threads unwind; nothing reaches AWS
        a.thread.join(DEADLINE_S)
        b.thread.join(DEADLINE_S)

    # Only one ships at a time: the standby touched neither SQS nor the NameNode before it
    # held the lease, it got the lease only after A's last renewal had run out (A never
    # released it), and every send of A's returned before that.
    [b_took_over] = b.acquired
    assert (a.lease.epoch, b.lease.epoch) == (1, 2)
    assert [op for t, op in b.process.calls if t < b_took_over] == ["update_item"] * b.tries
    assert a.process.sends() and b.process.sends()
    assert max(a.process.sends()) < b_took_over < min(b.process.sends())
    assert b_took_over > max(t for t in a.extended) + LEASE_S
    assert b_took_over > killed_at
    assert a.error is not None and b.error is None  # A died; B stopped cleanly

    # The checkpoint never went backwards, and B started exactly where the shared one stood.
    values = [txid for _, txid in watch.seen]
    assert values == sorted(values) and values[-1] == nn.last_txid
    at_takeover = max(txid for t, txid in watch.seen if t <= b_took_over)
    assert at_takeover >= 100
    assert nn.opened == [0, at_takeover]  # A from the start, B from the shared checkpoint

    # Every event the NameNode produced is in the queue; each message is a whole in-order run
    # of its group, so a duplicate is a re-sent message, and only of events A had sent but
    # not yet covered by the checkpoint.
    expected = [e for batch in JavaBatchConverter(CLUSTER).convert(nn.batches)
                for e in batch.events]
    assert len(expected) == 400
    check_delivery(received, expected, lambda e: message_group_id(CLUSTER, e.path))
    counts = Counter(e.key for m in received for e in m.events)
    duplicated = sorted(k for k, n in counts.items() if n > 1)
    assert all(txid > at_takeover for _, txid, _ in duplicated), duplicated[:5]
    # B's ranges start at the shared checkpoint (the end of one of A's acknowledged ranges),
    # overlapping what A had sent after it: no hole for the consumer.
    ranges = check_covered(manifests(received), event_keys_by_message(received),
                           [e.key for e in expected], start=0, end=nn.last_txid)
    assert at_takeover in {r.end for r in ranges}
    assert any(r.after == at_takeover for r in ranges)
