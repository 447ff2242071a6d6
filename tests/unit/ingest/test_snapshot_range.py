"""A first-start snapshot's range through the sequencer: one txid, SNAPSHOT records in a couple of
hundred messages of MESSAGE_EVENTS each, as the agent ships them. The Lambda holds a few
messages' events at a time, not the range's; a range resumed after a deadline reads only the
objects from the position on; the index ends in the in-order state."""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence

from hdfs_events.event import EventType, HdfsEvent, INodeType
from hdfs_events.ids import deduplication_id, deduplication_range
from hdfs_events.manifest import manifests_for
from lambdas.ingest.index import NamespaceIndex
from lambdas.ingest.sequencer import TXID_DONE, Arrival, IndexSequencer, Position
from tests.kit.memory_stores import MemoryIndexStore, MemorySequenceStore
from tests.kit.replay import in_order_state

CLUSTER = "prod"
T = 5200  # the txid the listing was taken at
MESSAGES, MESSAGE_EVENTS = 60, 1000
LATE_MS = 10**13  # the clock once an invocation's deadline has passed


class CountedEvent(HdfsEvent):
    """An event that counts how many of its kind are alive (decoded and still referenced)."""

    __slots__ = ()
    live = 0
    peak = 0

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        CountedEvent.live += 1
        CountedEvent.peak = max(CountedEvent.peak, CountedEvent.live)

    def __del__(self) -> None:
        CountedEvent.live -= 1


def record(index: int) -> HdfsEvent:
    if index == 0:
        return CountedEvent(CLUSTER, T, 0, EventType.SNAPSHOT, "/data",
                            inode_type=INodeType.DIRECTORY, owner="etl", group="hadoop",
                            perms="0755", mtime=1, atime=1)
    return CountedEvent(CLUSTER, T, index, EventType.SNAPSHOT, f"/data/part-{index:07d}",
                        inode_type=INodeType.FILE, owner="etl", group="hadoop", perms="0644",
                        size=index, replication=3, mtime=1, atime=1)


class SnapshotLakeDouble:
    """A lake double: each raw object's SNAPSHOT records made when the sequencer takes it (the
    real lake decodes them then), so the count of live events is what the sequencer holds."""

    def __init__(self, objects: dict[str, range]) -> None:
        self.objects = objects
        self.read: list[str] = []

    def events_by_object(self, keys: Sequence[str]) -> Iterator[list[HdfsEvent]]:
        for key in keys:
            self.read.append(key)
            yield [record(i) for i in self.objects[key]]


def snapshot_range(rng: random.Random) -> tuple[IndexSequencer, SnapshotLakeDouble,
                                                dict[str, str]]:
    """The sequencer with the snapshot's messages arrived (in any order) and its manifest
    stored; and each lake key's dedup id."""
    store = MemorySequenceStore()
    objects: dict[str, range] = {}
    ids: dict[str, str] = {}
    for m in rng.sample(range(MESSAGES), MESSAGES):
        first, last = m * MESSAGE_EVENTS, (m + 1) * MESSAGE_EVENTS - 1
        dedup_id = deduplication_id(CLUSTER, (T, first), (T, last), MESSAGE_EVENTS)
        key = f"raw/cluster={CLUSTER}/dt=2026-11-21/hour=10/{dedup_id}.jsonl.gz"
        objects[key], ids[key] = range(first, last + 1), dedup_id
        store.put_arrival(CLUSTER, Arrival(dedup_id, (key,)))
    for part in manifests_for(CLUSTER, T - 1, T, list(ids.values())):
        store.put_manifest(part, received_ms=1)
    lake = SnapshotLakeDouble(objects)
    index = NamespaceIndex(MemoryIndexStore(), ["/data"])
    return IndexSequencer(store, index, lake), lake, ids


def in_order() -> dict[str, dict]:
    return in_order_state((record(i) for i in range(MESSAGES * MESSAGE_EVENTS)), "/data")


def test_a_snapshot_range_is_applied_holding_a_few_messages_of_events_at_a_time() -> None:
    sequencer, lake, _ = snapshot_range(random.Random(7))
    CountedEvent.live = CountedEvent.peak = 0

    report = sequencer.apply_ranges(CLUSTER, deadline_ms=LATE_MS)

    assert report.position == Position(T, TXID_DONE) and not report.more
    assert report.events == MESSAGES * MESSAGE_EVENTS
    # One message being merged, the next one decoded, a chunk waiting to be applied.
    assert CountedEvent.peak <= 3 * MESSAGE_EVENTS, CountedEvent.peak
    assert sorted(lake.read) == sorted(lake.objects)  # each object read once
    assert sequencer.index.store.live(CLUSTER) == in_order()  # type: ignore[attr-defined]


def test_a_snapshot_range_resumed_after_its_deadline_reads_only_from_the_position_on() -> None:
    sequencer, lake, ids = snapshot_range(random.Random(8))
    sequencer.chunk_events = 700  # positions fall inside messages, not only at their ends
    half = MESSAGES // 2
    sequencer.clock_ms = lambda: 0 if len(lake.read) <= half else LATE_MS

    first = sequencer.apply_ranges(CLUSTER, deadline_ms=LATE_MS - 1)
    assert first.more and first.position is not None
    stopped = first.position
    assert stopped.txid == T and (half - 1) * MESSAGE_EVENTS < stopped.event_index < TXID_DONE

    lake.read.clear()
    sequencer.clock_ms = lambda: 0
    second = sequencer.apply_ranges(CLUSTER, deadline_ms=LATE_MS)

    assert second.position == Position(T, TXID_DONE)
    assert first.events + second.events == MESSAGES * MESSAGE_EVENTS
    after = {k for k, i in ids.items()
             if deduplication_range(i)[1] > (T, stopped.event_index)}  # type: ignore[index]
    assert set(lake.read) == after and len(lake.read) == len(after) < MESSAGES
    assert sequencer.index.store.live(CLUSTER) == in_order()  # type: ignore[attr-defined]
