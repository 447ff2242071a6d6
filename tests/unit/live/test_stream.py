"""The poll loop, purged edits and snapshot recovery against a DFSInotifyEventInputStream double
that hands out real Hadoop EventBatch objects and raises Hadoop's MissingEventsException."""

from __future__ import annotations

import threading
from itertools import islice

import pytest

from hdfs_events.event import EventType, INodeType
from onprem_agent.live.convert import JavaBatchConverter
from onprem_agent.live.snapshot import namespace_snapshot, walk
from onprem_agent.live.stream import Gap, InotifyGapError, LiveSource
from tests.unit.live.doubles import (
    ListingDouble,
    NameNodeDouble,
    dir_entry,
    file_entry,
    mkdir,
    unlink,
)

C = "prod"


@pytest.fixture(scope="module")
def converter(inotify_messages) -> JavaBatchConverter:
    return JavaBatchConverter(C, inotify_messages)


def live(nn: NameNodeDouble, converter, *, start: int | None, stop: threading.Event | None = None,
         **kw) -> LiveSource:
    kw.setdefault("gap_policy", "stop")
    return LiveSource(nn.source(), converter, start_txid=start,
                      stop=stop or threading.Event(), poll_timeout_ms=kw.pop("timeout", 50), **kw)


def test_reads_every_batch_after_the_checkpoint_in_txid_order(converter):
    nn = NameNodeDouble()
    for i in range(1, 6):
        nn.log(unlink(f"/old/{i}", ts=100 + i))
        nn.skip(2)  # block allocations: no event, still txids
    stop = threading.Event()
    source = live(nn, converter, start=4, stop=stop, on_idle=stop.set)
    got = list(source)
    assert [b.txid for b in got] == [7, 10, 13]
    assert [b.events[0].path for b in got] == ["/old/3", "/old/4", "/old/5"]
    assert all(b.events[0].index == 0 and b.events[0].cluster == C for b in got)
    assert nn.opened == [4]
    assert source.stats.events_read == 3 and source.stats.last_txid == 13
    assert source.stats.last_event_ms == 105


def test_poll_is_bounded_and_short_then_drains_without_waiting(converter):
    nn = NameNodeDouble()
    for i in range(5):
        nn.log(unlink(f"/{i}"))
    stop = threading.Event()
    got = list(live(nn, converter, start=0, stop=stop, on_idle=stop.set, timeout=1000))
    assert len(got) == 5
    timed = [p for p in nn.polls if p]
    assert timed[0][0] == 1000 and str(timed[0][1]) == "MILLISECONDS"
    assert nn.polls[1:5] == [(), (), (), ()]  # the drain uses the non-blocking poll()


def test_drain_stops_at_its_limit(converter):
    nn = NameNodeDouble()
    for i in range(7):
        nn.log(unlink(f"/{i}"))
    calls: list[int] = []

    class Counting:
        def convert(self, batches):
            calls.append(len(batches))
            return converter.convert(batches)

    stop = threading.Event()
    got = list(LiveSource(nn.source(), Counting(), start_txid=0, stop=stop, gap_policy="stop",
                          poll_timeout_ms=10, max_batches_per_drain=3, on_idle=stop.set))
    assert len(got) == 7 and calls == [3, 3, 1]


def test_lag_is_the_streams_txids_behind_estimate(converter):
    nn = NameNodeDouble()
    for i in range(10):
        nn.log(unlink(f"/{i}"))
    stop = threading.Event()
    source = live(nn, converter, start=0, stop=stop, max_batches_per_drain=4)
    it = iter(source)
    next(it)
    assert source.stats.txids_behind == 6  # 10 logged, 4 read in the first drain
    list(islice(it, 9))
    assert source.stats.txids_behind == 0


def test_stop_ends_an_idle_stream(converter):
    nn = NameNodeDouble()
    stop = threading.Event()
    timer = threading.Timer(0.2, stop.set)
    timer.start()
    assert list(live(nn, converter, start=None, stop=stop)) == []
    assert nn.opened == [None]  # no checkpoint: from the NameNode's current txid


def test_purged_edits_with_policy_stop_report_the_gap_and_fail(converter):
    nn = NameNodeDouble()
    for i in range(20):
        nn.log(unlink(f"/{i}"))
    nn.purge_before(15)
    gaps: list[Gap] = []
    source = live(nn, converter, start=3, on_gap=gaps.append)
    with pytest.raises(InotifyGapError, match=r"needed txid 4 .* first available txid is 15"):
        list(source)
    assert gaps == [Gap(expected_txid=4, available_txid=15)]
    assert source.stats.gaps == gaps


def test_purged_edits_never_skip_silently_even_mid_drain(converter):
    nn = NameNodeDouble()
    for i in range(3):
        nn.log(unlink(f"/{i}"))
    stop = threading.Event()
    source = live(nn, converter, start=0, stop=stop, gap_policy="stop")
    it = iter(source)
    assert [next(it).txid for _ in range(3)] == [1, 2, 3]
    nn.skip(5)
    nn.log(unlink("/late"))
    nn.purge_before(9)  # txids 4..8 are gone before the stream read past 3
    with pytest.raises(InotifyGapError):
        next(it)


def test_snapshot_policy_emits_the_namespace_then_resumes_after_its_txid(converter):
    nn = NameNodeDouble()
    for i in range(10):
        nn.log(unlink(f"/data/{i}"))
    nn.purge_before(8)
    namespace = [dir_entry("/data"), dir_entry("/data/a"), file_entry("/data/a/f1", size=7),
                 file_entry("/data/b.txt", size=3), dir_entry("/other")]

    def changes_during_listing(path: str) -> None:
        if path == "/data":  # written while the walk runs: after T, so read from the stream
            nn.log(mkdir("/data/new"))

    listing = ListingDouble(namespace, on_list=changes_during_listing)
    gaps: list[Gap] = []
    stop = threading.Event()
    source = live(nn, converter, start=2, stop=stop, on_idle=stop.set, gap_policy="snapshot",
                  on_gap=gaps.append, snapshot=namespace_snapshot(C, listing, ["/data"]))
    got = list(source)
    assert gaps == [Gap(3, 8)]
    snapshot, *after = got
    assert snapshot.txid == 10  # the NameNode's txid before the listing
    assert [(e.index, e.type, e.path) for e in snapshot.events] == [
        (0, EventType.CREATE, "/data"),
        (1, EventType.CREATE, "/data/a"),
        (2, EventType.CREATE, "/data/a/f1"),
        (3, EventType.CLOSE, "/data/a/f1"),
        (4, EventType.CREATE, "/data/b.txt"),
        (5, EventType.CLOSE, "/data/b.txt"),
    ]
    assert snapshot.events[3].size == 7 and snapshot.events[1].inode_type is INodeType.DIRECTORY
    assert [(b.txid, b.events[0].path) for b in after] == [(11, "/data/new")]
    assert nn.opened == [2, 10]
    assert source.stats.snapshots == 1


def test_snapshot_policy_needs_a_snapshot_function(converter):
    with pytest.raises(ValueError, match="snapshot"):
        live(NameNodeDouble(), converter, start=0, gap_policy="snapshot")


def test_walk_lists_each_directory_once_in_parallel():
    listing = ListingDouble([dir_entry("/a"), dir_entry("/a/b"), dir_entry("/a/b/c"),
                             file_entry("/a/b/c/f"), dir_entry("/z"), file_entry("/z/g")])
    entries = walk(listing, ["/a/b", "/a", "/z", "/missing"], workers=4)
    assert [e.path for e in entries] == ["/a", "/a/b", "/a/b/c", "/a/b/c/f", "/z", "/z/g"]
    assert sorted(listing.listed) == ["/a", "/a/b", "/a/b/c", "/z"]
