"""The index through the sequencer: messages of every group strategy delivered in any order
(each group in order, redelivered at random), the agent's manifests in their own group, ranges applied
stopped at random deadlines and walks split into continuations: the index ends exactly in the
in-order state. Directory renames and deletes across groups included, the case the index's
merge rules alone could not always get right (test_index_property)."""

from __future__ import annotations

import itertools
import random
from collections import defaultdict, deque

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hdfs_events import names
from hdfs_events.continue_request import (
    CLOCK_SKEW_MS,
    ContinueRequest,
    continue_dedup_id,
    continue_group_id,
    encode_continue_request,
)
from hdfs_events.envelope import encode_message
from hdfs_events.event import EventType, HdfsEvent
from hdfs_events.ids import message_group_id
from hdfs_events.manifest import Manifest, manifests_for
from lambdas.ingest.consumer import LOOK_INTERVAL_MS, MessageConsumer
from lambdas.ingest.index import NamespaceIndex
from lambdas.ingest.records import QueueMessage
from lambdas.ingest.senders import ClusterSenders
from lambdas.ingest.sequencer import TXID_DONE, IndexSequencer, Position
from tests.kit.memory_consumer import MemoryLake
from tests.kit.memory_stores import MemoryIndexStore, MemorySequenceStore
from tests.kit.random_namespace import CLUSTER, RandomNamespace, chunks, with_a_gap
from tests.kit.replay import in_order_state

STRATEGIES = ["prefix:1", "prefix:2", "prefix:3", "parent", "path"]
AGENT = "AIDAIO23YVJENQZJOL4VO"  # SenderId of the random namespace's cluster's agent
SENDERS = ClusterSenders({CLUSTER: frozenset({AGENT})})

# Cross-group directory moves and deletes whose index once ended wrong when messages were
# applied on arrival (found by fuzzing the design before the sequencer):
# (namespace seed, steps, group strategy, subtree page).
CROSS_GROUP_CASES = [
    (610, 4, "path", 3), (772, 5, "prefix:2", 3), (563, 7, "prefix:2", 3),
    (48, 11, "prefix:1", 1), (132, 8, "prefix:1", 1), (41, 23, "prefix:1", 1),
    (8, 29, "prefix:1", 1), (137, 5, "path", 3), (836, 7, "path", 3), (145, 8, "path", 3),
    (1080, 11, "prefix:2", 3), (1943, 10, "path", 3),
]


class Logger:
    def __init__(self) -> None:
        self.lines: list[tuple[str, str, dict]] = []

    def _log(self, level: str, msg: str, *args: object, extra: dict | None = None,
             **kw: object) -> None:
        self.lines.append((level, msg, extra or {}))

    def info(self, msg: str, *args: object, **kw: object) -> None:
        self._log("INFO", msg, *args, **kw)

    def error(self, msg: str, *args: object, **kw: object) -> None:
        self._log("ERROR", msg, *args, **kw)

    def warning(self, msg: str, *args: object, **kw: object) -> None:
        self._log("WARNING", msg, *args, **kw)

    def exception(self, msg: str, *args: object, **kw: object) -> None:
        raise AssertionError(f"{msg}: {kw}")  # failing to apply ranges is a bug in these tests


def _message(body: str, group: str, dedup: str, **attrs: str) -> QueueMessage:
    return QueueMessage(
        message_id=f"m-{dedup}", body=body,
        message_attributes={k: {"stringValue": v, "dataType": "String"} for k, v in attrs.items()},
        group_id=group, dedup_id=dedup, sent_timestamp_ms=1_700_000_000_000, receive_count=1,
        sequence_number="1", attributes={"SenderId": AGENT})


class Queue:
    """The FIFO queue as the harness delivers it: per-group deques."""

    def __init__(self) -> None:
        self.groups: dict[str, deque[QueueMessage]] = defaultdict(deque)
        self.seen: set[str] = set()  # SQS drops a dedup id it saw within 5 minutes

    def put(self, message: QueueMessage) -> None:
        if message.dedup_id not in self.seen:
            self.seen.add(message.dedup_id or "")
            self.groups[message.group_id or ""].append(message)

    # what the consumer sends back to the queue
    def send_continue(self, request: ContinueRequest, *, key: str) -> None:
        self.put(_message(encode_continue_request(request), continue_group_id(request.cluster),
                          continue_dedup_id(request.cluster, key), kind=names.KIND_CONTINUE))


def in_memory_consumer(queue: Queue, **sequencer_options: object) -> MessageConsumer:
    """The real consumer on in-memory stores, indexing /data, continue requests to `queue`."""
    lake = MemoryLake()
    sequencer = IndexSequencer(MemorySequenceStore(), NamespaceIndex(MemoryIndexStore(),
                                                                     ["/data"]),
                               lake, **sequencer_options)  # type: ignore[arg-type]
    return MessageConsumer(lake=lake, sequencer=sequencer, continue_requests=queue,
                           log_mode="summary", logger=Logger(), senders=SENDERS)


def agent_messages(events: list[HdfsEvent], strategy: str,
                   rng: random.Random) -> tuple[list[QueueMessage], list[Manifest]]:
    """Event messages as the agent packs them (consecutive events of a group, 1-4 each) and
    manifests over ranges of 1-6 txids naming every message with an event in the range."""
    by_group: dict[str, list[HdfsEvent]] = defaultdict(list)
    for e in events:
        by_group[message_group_id(e.cluster, e.path, strategy)].append(e)
    sizes = iter(lambda: rng.randrange(1, 5), None)
    messages, spans = [], []
    for group, evs in by_group.items():
        for chunk in chunks(evs, sizes):
            wire = encode_message(chunk, group_id=group)
            messages.append(_message(wire.body, group, wire.dedup_id, encoding="gzip+base64"))
            spans.append((wire.dedup_id, {e.txid for e in chunk}))
    txids = sorted({e.txid for e in events})
    manifests: list[Manifest] = []
    after: int | None = None
    i = 0
    while i < len(txids):
        end = txids[min(len(txids), i + rng.randrange(1, 7)) - 1]
        named = [d for d, ts in spans if any((after is None or t > after) and t <= end
                                            for t in ts)]
        manifests += manifests_for(CLUSTER, after, end, named)
        after, i = end, txids.index(end) + 1
    return messages, manifests


def converge(events: list[HdfsEvent], strategy: str, budget: int, rng: random.Random,
             pick=None, redeliver=None) -> tuple[dict, MessageConsumer]:
    pick = pick or rng.choice
    redeliver = redeliver or (lambda: rng.randrange(10) == 0)
    clock = itertools.count(1_700_000_000_000)
    queue = Queue()
    # Walks over 3 x budget entries go on from the table, saved and resumed: both sources
    # of a walk's children meet in one history.
    index = NamespaceIndex(MemoryIndexStore(), ["/data"], subtree_budget=budget,
                           listing_budget=3 * budget)
    lake = MemoryLake()
    sequencer = IndexSequencer(MemorySequenceStore(), index, lake,
                               clock_ms=lambda: next(clock), chunk_events=rng.randrange(1, 6))
    consumer = MessageConsumer(lake=lake, sequencer=sequencer, continue_requests=queue,
                               log_mode="summary", logger=Logger(), senders=SENDERS,
                               clock_ms=lambda: next(clock))
    messages, manifests = agent_messages(events, strategy, rng)
    for m in messages:
        queue.put(m)
    for m in manifests:
        queue.put(_message(m.to_json(), m.group_id, m.dedup_id, kind="manifest"))
    while ready := sorted(g for g, q in queue.groups.items() if q):
        group = pick(ready)
        message = queue.groups[group][0]
        consumer.process(message)
        if not redeliver():
            queue.groups[group].popleft()
        if rng.randrange(3) == 0:  # the end of an invocation: apply ranges, maybe out of time
            consumer.apply_ranges(next(clock) + rng.randrange(1, 60))
    consumer.to_apply.add(CLUSTER)
    report = consumer.apply_ranges(next(clock) + 10**9)[CLUSTER]
    assert report.waiting_for is None and not report.more, report
    assert report.position == Position(max(e.txid for e in events), TXID_DONE)
    return index.store.live(CLUSTER), consumer


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.large_base_example,
                                 HealthCheck.data_too_large])
@given(seed=st.integers(0, 2**32 - 1), steps=st.integers(1, 40),
       strategy=st.sampled_from(STRATEGIES), budget=st.integers(1, 6), data=st.data())
def test_directory_moves_across_groups_end_in_the_in_order_state(seed, steps, strategy,
                                                                 budget, data) -> None:
    """Directory renames and deletes at any depth, files and directories under them in other
    groups, any interleaving, random redelivery, walks a few children per invocation."""
    rng = random.Random(seed)
    events = RandomNamespace(rng, dir_op_depth=1).run(steps)
    live, _ = converge(events, strategy, budget, rng,
                       pick=lambda ready: data.draw(st.sampled_from(ready), label="group"),
                       redeliver=lambda: data.draw(st.integers(0, 9), label="redeliver") == 0)
    assert live == in_order_state(events, "/data")


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.large_base_example,
                                 HealthCheck.data_too_large])
@given(seed=st.integers(0, 2**32 - 1), steps=st.integers(2, 40),
       strategy=st.sampled_from(STRATEGIES), data=st.data())
def test_after_purged_edits_the_snapshot_brings_the_index_to_the_namespace(
        seed, steps, strategy, data) -> None:
    rng = random.Random(seed)
    events = RandomNamespace(rng, dir_op_depth=1).run(steps)
    live, _ = converge(with_a_gap(events, rng), strategy, 3, rng,
                       pick=lambda ready: data.draw(st.sampled_from(ready), label="group"))
    assert live == in_order_state(events, "/data")


# Random histories whose index diverged from the in-order state when messages were applied on
# arrival (docs/consumer.md before the sequencer): the regression cases of the merge rules,
# and the fuzzer's long cross-group rename chains that they never fixed.
DIVERGED_ON_ARRIVAL = [(seed, steps, strategy, budget)
                       for seed, steps, strategy, budget in CROSS_GROUP_CASES] + [
    (233, 25, "prefix:2", 3), (196, 25, "prefix:3", 3), (214, 25, "prefix:3", 3),
    (196, 25, "path", 3), (146, 50, "path", 3)]


@pytest.mark.parametrize(("seed", "steps", "strategy", "budget"), DIVERGED_ON_ARRIVAL)
def test_workloads_that_diverged_when_applied_on_arrival_converge(seed, steps, strategy,
                                                                  budget) -> None:
    for attempt in range(5):  # five interleavings of each
        rng = random.Random(seed * 100 + attempt)
        events = RandomNamespace(random.Random(seed), dir_op_depth=1).run(steps)
        live, _ = converge(events, strategy, budget, rng)
        assert live == in_order_state(events, "/data")


def test_a_range_waits_for_its_last_message_and_says_which() -> None:
    rng = random.Random(7)
    events = RandomNamespace(rng, dir_op_depth=1).run(12)
    queue = Queue()
    consumer = in_memory_consumer(queue)
    index, sequencer = consumer.index, consumer.sequencer
    messages, manifests = agent_messages(events, "path", rng)
    held_back = messages[-1]
    for m in messages[:-1]:
        consumer.process(m)
    for m in manifests:
        consumer.process(_message(m.to_json(), m.group_id, m.dedup_id, kind="manifest"))
    report = consumer.apply_ranges(sequencer.clock_ms() + 60_000)[CLUSTER]
    assert report.waiting_for is not None and held_back.dedup_id in report.waiting_for
    waiting_at = report.position
    assert waiting_at is not None and (waiting_at.txid or 0) < max(e.txid for e in events)
    consumer.process(held_back)  # its arrival applies the rest
    report = consumer.apply_ranges(sequencer.clock_ms() + 60_000)[CLUSTER]
    assert report.waiting_for is None
    assert index.store.live(CLUSTER) == in_order_state(events, "/data")


def test_a_quarantined_message_does_not_stop_the_index_and_is_counted() -> None:
    rng = random.Random(3)
    events = RandomNamespace(rng, dir_op_depth=99).run(10)
    queue = Queue()
    consumer = in_memory_consumer(queue)
    sequencer = consumer.sequencer
    messages, manifests = agent_messages(events, "path", rng)
    broken = messages[-1]
    for m in messages[:-1]:
        consumer.process(m)
    outcome = consumer.process(_message("not base64!", broken.group_id or "", broken.dedup_id or "",
                                        encoding="gzip+base64"))
    assert outcome.status == "quarantined"
    for m in manifests:
        consumer.process(_message(m.to_json(), m.group_id, m.dedup_id, kind="manifest"))
    report = consumer.apply_ranges(sequencer.clock_ms() + 60_000)[CLUSTER]
    assert report.waiting_for is None and report.skipped_messages == 1
    assert consumer.telemetry.clusters[CLUSTER].skipped == 1


def test_applying_ranges_out_of_time_asks_for_another_invocation() -> None:
    rng = random.Random(11)
    events = RandomNamespace(rng, dir_op_depth=99).run(30)
    queue = Queue()
    clock = itertools.count(0, 10)
    index = NamespaceIndex(MemoryIndexStore(), ["/data"])
    lake = MemoryLake()
    sequencer = IndexSequencer(MemorySequenceStore(), index, lake,
                               clock_ms=lambda: next(clock), chunk_events=2)
    consumer = MessageConsumer(lake=lake, sequencer=sequencer, continue_requests=queue,
                               log_mode="summary", logger=Logger(), senders=SENDERS,
                               clock_ms=sequencer.clock_ms)
    messages, manifests = agent_messages(events, "prefix:1", rng)
    for m in messages:
        consumer.process(m)
    for m in manifests:
        consumer.process(_message(m.to_json(), m.group_id, m.dedup_id, kind="manifest"))
    report = consumer.apply_ranges(sequencer.clock_ms() + 50)[CLUSTER]
    assert report.more and report.events > 0
    assert len(queue.groups[continue_group_id(CLUSTER)]) == 1
    while queue.groups[continue_group_id(CLUSTER)]:  # each request applies a little more
        consumer.process(queue.groups[continue_group_id(CLUSTER)].popleft())
        consumer.apply_ranges(sequencer.clock_ms() + 50)
    assert index.store.live(CLUSTER) == in_order_state(events, "/data")


class Clock:
    """Time for two invocations at once: it moves only when told (or slept)."""

    def __init__(self, now_ms: int) -> None:
        self.now_ms = now_ms

    def __call__(self) -> int:
        return self.now_ms


class OneWindow:
    """Invocations of one cluster within one second (WINDOW_END_MS), each an execution
    environment of its own on shared stores. The first event invocation has stored every
    message but the last (`held_back`) and every manifest, and left one continue request."""

    WINDOW_END_MS = 1_700_000_001_000

    def __init__(self, seed: int) -> None:
        rng = random.Random(seed)
        self.events = RandomNamespace(rng, dir_op_depth=99).run(12)
        self.clock, self.queue, self.lake = Clock(1_700_000_000_250), Queue(), MemoryLake()
        self.store = MemorySequenceStore()
        self.index = NamespaceIndex(MemoryIndexStore(), ["/data"])
        messages, manifests = agent_messages(self.events, "path", rng)
        self.held_back = messages[-1]
        first = self.invocation()
        for m in [*messages[:-1], *(_message(m.to_json(), m.group_id, m.dedup_id, kind="manifest")
                                    for m in manifests)]:
            first.process(m)
        first.finish(self.clock() + 60_000)
        self.requests = self.queue.groups[continue_group_id(CLUSTER)]

    def invocation(self, **options: object) -> MessageConsumer:
        sequencer = IndexSequencer(self.store, self.index, self.lake, clock_ms=self.clock)
        return MessageConsumer(lake=self.lake, sequencer=sequencer, continue_requests=self.queue,
                               log_mode="summary", logger=Logger(), senders=SENDERS,
                               clock_ms=self.clock, **options)  # type: ignore[arg-type]

    def store_the_last_arrival(self) -> None:
        """Another event invocation, in the same window: SQS drops its request."""
        late = self.invocation()
        late.process(self.held_back)
        late.finish(self.clock() + 60_000)
        assert not self.requests

    def applied_in_order(self) -> bool:
        return self.index.store.live(CLUSTER) == in_order_state(self.events, "/data")


def test_requests_of_one_window_are_sent_once_and_their_taker_looks_until_it_ends() -> None:
    """Two event invocations store arrivals in one second: the second's request is dropped as a
    duplicate of the first's, so the invocation that took the first applies both, looking until
    the second has ended (hdfs_events/continue_request.py). Without the looks it leaves the last
    message's range unapplied, with no request left to apply it."""
    w = OneWindow(13)
    assert len(w.requests) == 1
    leases: list[int] = []
    acquire = w.store.acquire
    w.store.acquire = lambda *a, **k: leases.append(w.clock()) or acquire(*a, **k)  # type: ignore
    slept: list[int] = []

    def sleep(seconds: float) -> None:
        if not slept:  # while the taker waits, another invocation stores the last arrival
            w.store_the_last_arrival()
        slept.append(w.clock())
        w.clock.now_ms += int(seconds * 1000)

    taker = w.invocation(sleep=sleep)
    taker.process(w.requests.popleft())
    taker.finish(w.clock() + 60_000)
    assert w.applied_in_order() and not w.requests
    # It looked until a look had started after the window's end and the skew, and no longer.
    assert slept[-1] < w.WINDOW_END_MS + CLOCK_SKEW_MS <= w.clock()
    assert w.clock() < w.WINDOW_END_MS + CLOCK_SKEW_MS + 2 * LOOK_INTERVAL_MS
    # The lease only for the first look and the one that found the last arrival's range: a
    # look that finds nothing takes none.
    assert len(leases) == 2 and len(slept) > 5


def test_a_first_look_that_outlasts_the_window_is_followed_by_one_more_not_a_request() -> None:
    """Under load a look can start inside the window and end past it, an arrival stored while
    it ran: one more look, at once, applies it; sending a request for it would cost an
    invocation (bench.chain_speed saw 168 in 423)."""
    w = OneWindow(17)
    taker = w.invocation(sleep=lambda s: None)
    taker.process(w.requests.popleft())
    release = w.store.release

    def slow_first_look(cluster: str, owner: str) -> None:  # the end of the first lease hold
        release(cluster, owner)
        if w.clock() < w.WINDOW_END_MS:
            w.store_the_last_arrival()
            w.clock.now_ms += 1_500  # the look ends past the window and the skew

    w.store.release = slow_first_look  # type: ignore[method-assign]
    taker.finish(w.clock() + 60_000)
    assert not w.requests
    assert w.applied_in_order()


def test_events_outside_the_indexed_prefixes_are_not_read_back() -> None:
    rng = random.Random(5)
    events = RandomNamespace(rng, prefix="/tmp", dir_op_depth=99).run(10)
    _, consumer = converge(events, "path", 3, rng)
    assert consumer.sequencer is not None
    assert consumer.sequencer.lake.reads == 0  # type: ignore[attr-defined]


def test_a_gap_record_does_not_change_the_index() -> None:
    rng = random.Random(9)
    events = RandomNamespace(rng, dir_op_depth=99).run(5)
    last = events[-1].txid
    gap = HdfsEvent(CLUSTER, last + 1, 0, EventType.GAP, "/", gap_end_txid=last + 5)
    live, _ = converge([*events, gap], "path", 3, rng)
    assert live == in_order_state(events, "/data")
