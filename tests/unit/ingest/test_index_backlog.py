"""A backlog: twenty thousand indexed events waiting, twenty messages and ranges of a thousand
(chunks of CHUNK_EVENTS), applied to the end through the sequencer on in-memory stores (the
index's logic, no AWS), and an event the index can never store in the middle of it, skipped
with its reason while everything after it applies. The rate at a million events is
bench.index_backlog's figure."""

from __future__ import annotations

from collections.abc import Iterable

from hdfs_events.event import EventType, HdfsEvent, INodeType
from lambdas.ingest.sequencer import CHUNK_EVENTS, TXID_DONE, Arrival, Position
from tests.kit.backlog import CLUSTER, INDEXED, T0, backlog, jobs
from tests.kit.memory_stores import MemorySequenceStore
from tests.kit.replay import in_order_state


def test_a_backlog_of_twenty_messages_is_applied_to_the_end_once_in_order() -> None:
    events = list(jobs(20 * CHUNK_EVENTS))
    sequencer = backlog(events, per_message=CHUNK_EVENTS)
    report = sequencer.apply_ranges(CLUSTER, deadline_ms=2**62)
    assert report.position == Position(events[-1].txid, TXID_DONE)
    assert report.events == len(events) and not report.more and report.waiting_for is None
    store = sequencer.index.store
    assert store.live(CLUSTER) == in_order_state(events, INDEXED)  # type: ignore[attr-defined]
    # Coalesced: far fewer writes than events (temp files and their markers, each once).
    assert store.puts < 0.5 * len(events)  # type: ignore[attr-defined]


def test_an_event_dynamodb_cannot_store_is_skipped_and_the_ranges_after_it_apply() -> None:
    events = list(jobs(2_000))
    bad = HdfsEvent(CLUSTER, events[500].txid, 1, EventType.CREATE, "/data/" + "x" * 2000,
                    inode_type=INodeType.FILE, ctime=T0, timestamp=T0)
    with_bad = [*events[:501], bad, *events[501:]]
    sequencer = backlog(with_bad, per_message=100)  # the bad event's range, then 15 more
    report = sequencer.apply_ranges(CLUSTER, deadline_ms=2**62)
    assert report.position == Position(events[-1].txid, TXID_DONE)
    assert [(s.txid, s.event_index) for s in report.skipped_events] == [(bad.txid, 1)]
    assert "1024" in report.skipped_events[0].reason
    assert sequencer.index.store.live(CLUSTER) == in_order_state(  # type: ignore[attr-defined]
        events, INDEXED)


class CountingSequenceStore(MemorySequenceStore):
    """Counts the round trips the sequencer's own items cost: arrival reads, position saves."""

    def __init__(self) -> None:
        super().__init__()
        self.arrival_reads = self.saves = 0

    def arrivals(self, cluster: str, dedup_ids: Iterable[str]) -> dict[str, Arrival]:
        self.arrival_reads += 1
        return super().arrivals(cluster, dedup_ids)

    def advance(self, cluster: str, owner: str, position: Position) -> None:
        self.saves += 1
        super().advance(cluster, owner, position)


def test_complete_ranges_waiting_one_after_another_are_applied_as_one_span() -> None:
    """An index behind by twenty small ranges (the agent closes one every checkpoint interval)
    reads their arrivals once and saves its position once a chunk, not once a range: a
    backlog costs the chunk's round trips per CHUNK_EVENTS, however the ranges cut it."""
    events = list(jobs(CHUNK_EVENTS))[:CHUNK_EVENTS]
    store = CountingSequenceStore()
    sequencer = backlog(events, per_message=CHUNK_EVENTS // 20, store=store)
    report = sequencer.apply_ranges(CLUSTER, deadline_ms=2**62)
    assert report.position == Position(events[-1].txid, TXID_DONE)
    assert report.ranges == 20 and report.events == len(events)
    assert (store.arrival_reads, store.saves) == (1, 1)
    assert sequencer.index.store.live(CLUSTER) == in_order_state(  # type: ignore[attr-defined]
        events, INDEXED)
