"""A backlog: twenty thousand indexed events waiting, twenty messages and ranges of a thousand
(chunks of CHUNK_EVENTS), applied to the end through the sequencer on in-memory stores (the
index's logic, no AWS), and an event the index can never store in the middle of it, skipped
with its reason while everything after it applies. The rate at a million events is
bench.index_backlog's figure."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence

from hdfs_events.event import EventType, HdfsEvent, INodeType
from hdfs_events.ids import deduplication_id
from hdfs_events.manifest import manifests_for
from lambdas.ingest.index import NamespaceIndex
from lambdas.ingest.index_view import Refused
from lambdas.ingest.sequencer import CHUNK_EVENTS, TXID_DONE, Arrival, IndexSequencer, Position
from tests.kit.backlog import CLUSTER, INDEXED, T0, ObjectLake, backlog, jobs
from tests.kit.memory_stores import MemoryIndexStore, MemorySequenceStore
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


class Lake(ObjectLake):
    """The lake objects another invocation wrote, read in order; says when the `watch`-th is
    read."""

    def __init__(self, objects: dict[str, list[HdfsEvent]], watch: int) -> None:
        super().__init__()
        self.objects, self.watch = objects, watch
        self.read_watched = threading.Event()

    def events_by_object(self, keys: Sequence[str]) -> Iterator[list[HdfsEvent]]:
        for events in super().events_by_object(keys):
            if self.reads > self.watch:
                self.read_watched.set()
            yield events


class FirstWriteWaits(MemoryIndexStore):
    """The first chunk's write wave waits (up to 5 s) for the next chunk's first lake read."""

    def __init__(self, lake: Lake) -> None:
        super().__init__()
        self.lake, self.overlapped = lake, None  # type: ignore[assignment]

    def put_many(self, entries: Sequence) -> list[Refused]:  # type: ignore[type-arg]
        if self.overlapped is None:
            self.overlapped = self.lake.read_watched.wait(timeout=5)
        return super().put_many(entries)


def test_the_next_chunks_lake_objects_are_read_while_a_chunk_applies() -> None:
    """A range of messages other invocations received: its objects come from the lake, and
    the next chunk's are read while this chunk writes, not after its position is saved."""
    per_message = CHUNK_EVENTS // 4
    events = list(jobs(3 * CHUNK_EVENTS))[:3 * CHUNK_EVENTS]
    objects: dict[str, list[HdfsEvent]] = {}
    store = MemorySequenceStore()
    receiver = IndexSequencer(store, NamespaceIndex(MemoryIndexStore(), [INDEXED]),
                              lake=None)  # type: ignore[arg-type]
    for start in range(0, len(events), per_message):
        part = events[start:start + per_message]
        dedup = deduplication_id(CLUSTER, (part[0].txid, part[0].index),
                                 (part[-1].txid, part[-1].index), len(part))
        objects[f"raw/{dedup}"] = part
        receiver.arrived(dedup, part, [f"raw/{dedup}"])
    for manifest in manifests_for(CLUSTER, None, events[-1].txid,
                                  [k.removeprefix("raw/") for k in objects]):
        receiver.manifest(manifest)
    lake = Lake(objects, watch=CHUNK_EVENTS // per_message)  # the second chunk's first object
    index = FirstWriteWaits(lake)
    applier = IndexSequencer(store, NamespaceIndex(index, [INDEXED]), lake)
    report = applier.apply_ranges(CLUSTER, deadline_ms=2**62)
    assert report.position == Position(events[-1].txid, TXID_DONE)
    assert index.overlapped is True
    assert index.live(CLUSTER) == in_order_state(events, INDEXED)
