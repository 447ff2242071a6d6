"""What a lease hold knew of the index table, carried into the same sequencer's next hold (a
warm Lambda container's next invocation), and only when no one took the lease in between and
the position is where that hold left it."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from hdfs_events.event import EventType, HdfsEvent, MetadataType
from hdfs_events.ids import deduplication_id
from hdfs_events.manifest import manifests_for
from lambdas.ingest.index import NamespaceIndex
from lambdas.ingest.index_model import Entry
from lambdas.ingest.sequencer import TXID_DONE, Arrival, IndexSequencer, Position
from tests.kit.index_builders import ev, mkdir, mkfile
from tests.kit.memory_stores import MemoryIndexStore, MemorySequenceStore
from tests.kit.replay import in_order_state

CLUSTER = "prod"  # tests.kit.index_builders' events


class Lake:
    """The sequencer's raw reader: each message's events under one key."""

    def __init__(self) -> None:
        self.objects: dict[str, list[HdfsEvent]] = {}

    def events_by_object(self, keys: Sequence[str]) -> Iterator[list[HdfsEvent]]:
        for key in keys:
            yield list(self.objects[key])


class Cluster:
    """One cluster's stores and lake, shared by the sequencers of several containers."""

    def __init__(self) -> None:
        self.store, self.index_store, self.lake = MemorySequenceStore(), MemoryIndexStore(), Lake()
        self.events: list[HdfsEvent] = []
        self.end: int | None = None  # the last range's end

    def sequencer(self) -> IndexSequencer:
        """A container's sequencer: its own memory, the cluster's stores."""
        return IndexSequencer(self.store, NamespaceIndex(self.index_store, ["/data"]), self.lake)

    def arrive(self, events: list[HdfsEvent]) -> None:
        """One message holding `events`, and the range's manifest after the last range."""
        first, last = events[0], events[-1]
        dedup_id = deduplication_id(CLUSTER, (first.txid, first.index),
                                    (last.txid, last.index), len(events))
        self.lake.objects[dedup_id] = events
        self.store.put_arrival(CLUSTER, Arrival(dedup_id, (dedup_id,)))
        for part in manifests_for(CLUSTER, self.end, last.txid, [dedup_id]):
            self.store.put_manifest(part, received_ms=1)
        self.events += events
        self.end = last.txid

    def apply(self, sequencer: IndexSequencer) -> int:
        """Applies what has arrived; the entries the sequencer read from the table."""
        reads = self.index_store.calls["get"]
        report = sequencer.apply_ranges(CLUSTER, deadline_ms=sequencer.clock_ms() + 60_000)
        assert report.position == Position(self.end, TXID_DONE) and report.waiting_for is None
        return self.index_store.calls["get"] - reads


def touched(txid: int, path: str) -> HdfsEvent:
    return ev(txid, EventType.METADATA, path, metadata_type=MetadataType.TIMES, mtime=txid,
              atime=txid)


def chmod(txid: int, path: str, perms: str) -> HdfsEvent:
    return ev(txid, EventType.METADATA, path, metadata_type=MetadataType.PERMS, perms=perms)


def test_the_next_hold_takes_what_the_last_one_read_or_wrote_from_memory() -> None:
    # The chain's step, in two invocations: files created in one, renamed, deleted and closed
    # in the next. The second reads nothing: the first hold wrote every path it touches.
    cluster = Cluster()
    cluster.arrive([mkdir(1, "/data"), mkdir(2, "/data/d")]
                   + [mkfile(10 + i, f"/data/d/f{i}") for i in range(10)])
    container = cluster.sequencer()
    cluster.apply(container)
    cluster.arrive([ev(30 + i, EventType.RENAME, f"/data/d/f{i}", dst_path=f"/data/d/f{i}.done")
                    for i in range(5)]
                   + [ev(40 + i, EventType.UNLINK, f"/data/d/f{5 + i}") for i in range(3)]
                   + [ev(50, EventType.CLOSE, "/data/d/f9", size=7)])
    assert cluster.apply(container) == 0
    assert cluster.index_store.live(CLUSTER) == in_order_state(cluster.events, "/data")
    # Another container's sequencer knows nothing yet: it reads.
    cluster.arrive([touched(60, "/data/d/f8")])
    assert cluster.apply(cluster.sequencer()) > 0


def test_a_hold_after_another_container_held_the_lease_reads_the_table_again() -> None:
    cluster = Cluster()
    cluster.arrive([mkdir(1, "/data"), mkfile(2, "/data/f")])
    first = cluster.sequencer()
    cluster.apply(first)
    cluster.arrive([chmod(3, "/data/f", "0600")])
    cluster.apply(cluster.sequencer())  # another container applies the chmod
    cluster.arrive([touched(4, "/data/f")])
    # What `first` held says 0644: written back with the new times, the chmod would be lost.
    assert cluster.apply(first) > 0
    assert cluster.index_store.live(CLUSTER)["/data/f"]["perms"] == "0600"
    assert cluster.index_store.live(CLUSTER) == in_order_state(cluster.events, "/data")


def test_a_hold_after_the_position_moved_without_the_lease_reads_the_table_again() -> None:
    # The inventory job's gap repair rewrites entries from an fsimage and moves the position
    # past the gap without taking the lease.
    cluster = Cluster()
    cluster.arrive([mkdir(1, "/data"), mkfile(2, "/data/f")])
    container = cluster.sequencer()
    cluster.apply(container)
    held = cluster.index_store.get_many(CLUSTER, ["/data/f"])["/data/f"]
    cluster.index_store.put_many([Entry(CLUSTER, "/data/f", {**held.attrs, "perms": "0600"},
                                        (9, TXID_DONE))])
    cluster.store.positions[CLUSTER] = Position(9)
    cluster.end = 9
    cluster.arrive([touched(10, "/data/f")])
    assert cluster.apply(container) > 0
    assert cluster.index_store.live(CLUSTER)["/data/f"]["perms"] == "0600"


def test_a_hold_after_another_took_the_lease_without_moving_the_position_reads_again() -> None:
    # Any holder may write entries (a redrive holds the lease for a message; a holder that
    # crashes writes a chunk and never saves the position): who took the lease decides.
    cluster = Cluster()
    cluster.arrive([mkdir(1, "/data"), mkfile(2, "/data/f")])
    first = cluster.sequencer()
    cluster.apply(first)
    other = cluster.sequencer()
    with other.holding(CLUSTER, other.clock_ms() + 60_000) as position:
        assert position == Position(2, TXID_DONE)
        other.index.apply_until_walk([chmod(3, "/data/f", "0600")])
    cluster.arrive([touched(4, "/data/f")])
    assert cluster.apply(first) > 0
    assert cluster.index_store.live(CLUSTER)["/data/f"]["perms"] == "0600"
