"""The poll loop, purged edits and snapshot recovery against a DFSInotifyEventInputStream double
that hands out real Hadoop EventBatch objects and raises Hadoop's MissingEventsException."""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from itertools import islice

import jpype
import pytest

from hdfs_events.event import EventType, HdfsEvent, INodeType
from hdfs_events.schema import validator
from onprem_agent.live.convert import JavaBatchConverter
from onprem_agent.live.snapshot import NamespaceEntry, namespace_snapshot, walk
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
    return LiveSource(nn.source(), converter, cluster=C, start_txid=start,
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
    got = list(LiveSource(nn.source(), Counting(), cluster=C, start_txid=0, stop=stop,
                          gap_policy="stop", poll_timeout_ms=10, max_batches_per_drain=3, on_idle=stop.set))
    assert len(got) == 7 and calls == [3, 3, 1]


def test_a_drain_is_stamped_with_its_first_batchs_read(converter):
    # The pipeline lingers a drain's messages from when its first batch was read
    # (source.ReadChunk), so the stamp is taken when the timed poll returns, not before it
    # waited, nor after the drain.
    nn = NameNodeDouble()
    for i in range(5):
        nn.log(unlink(f"/{i}"))
    ticks = iter(range(100, 1000))
    stop = threading.Event()
    source = LiveSource(nn.source(), converter, cluster=C, start_txid=0, stop=stop,
                        gap_policy="stop", poll_timeout_ms=10, max_batches_per_drain=2,
                        on_idle=stop.set, monotonic=lambda: float(next(ticks)))
    chunks = list(source.chunks())
    assert [len(c) for c in chunks] == [2, 2, 1]
    assert [c.read_at for c in chunks] == [100.0, 101.0, 102.0]  # one stamp a drain


class RollingNameNode(NameNodeDouble):
    """A NameNode double whose source can roll its edit log. `rolls` holds the agent's last txid
    read at each roll it asked for; the first `fail_first` rolls raise the Java exception a
    NameNode in safe mode gives."""

    def __init__(self, fail_first: int = 0) -> None:
        super().__init__()
        self.rolls: list[int] = []
        self.reader: LiveSource | None = None
        self._failing = fail_first

    def live(self, converter, **kw) -> LiveSource:
        stop = threading.Event()
        source = replace(self.source(), roll_edits=self._roll)
        self.reader = LiveSource(source, converter, cluster=C, start_txid=0, stop=stop,
                                 gap_policy="stop", poll_timeout_ms=10, on_idle=stop.set, **kw)
        return self.reader

    def _roll(self) -> int:
        if self._failing:
            self._failing -= 1
            raise jpype.JClass("java.io.IOException")("Log not rolled. Name node is in safe mode.")
        assert self.reader is not None
        self.rolls.append(self.reader.stats.last_txid)
        return self.last_txid + 1


def test_the_agent_rolls_the_edit_log_every_so_many_txids_it_reads(converter):
    """Each inotify call rereads the in-progress segment up to the txid asked for: the agent
    rolls it every roll_edits_every_txids txids it read, counted from its first drain."""
    nn = RollingNameNode()
    for i in range(10):
        nn.log(unlink(f"/{i}"))
    source = nn.live(converter, max_batches_per_drain=2, roll_edits_every_txids=3)
    assert [b.txid for b in source] == list(range(1, 11))
    # Drains end at txids 2 (counting starts), 4, 6 (4 read: a roll), 8 and 10 (a roll).
    assert nn.rolls == [6, 10] and source.stats.edit_log_rolls == 2


def test_rolls_follow_the_txids_read_as_they_are_logged(converter):
    nn = RollingNameNode()
    source = iter(nn.live(converter, roll_edits_every_txids=5))
    for i in range(1, 13):
        nn.log(unlink(f"/{i}"))
        assert next(source).txid == i  # a drain a txid
    assert nn.rolls == [6, 11]  # counted from txid 1: 6 - 1 >= 5, 11 - 6 >= 5


def test_a_failed_roll_is_logged_and_reading_goes_on(converter, caplog):
    nn = RollingNameNode(fail_first=1)
    for i in range(10):
        nn.log(unlink(f"/{i}"))
    source = nn.live(converter, max_batches_per_drain=2, roll_edits_every_txids=3)
    assert [b.txid for b in source] == list(range(1, 11))
    # Drains end at 2 (counting starts), 4, 6 (the roll fails: next try 3 txids on), 8, 10.
    assert nn.rolls == [10] and source.stats.edit_log_rolls == 1
    failed = [r.getMessage() for r in caplog.records if "could not roll" in r.getMessage()]
    assert len(failed) == 1 and "Name node is in safe mode" in failed[0]


def test_no_roll_when_switched_off(converter):
    nn = RollingNameNode()
    for i in range(10):
        nn.log(unlink(f"/{i}"))
    source = nn.live(converter, max_batches_per_drain=1, roll_edits_every_txids=0)
    assert len(list(source)) == 10 and nn.rolls == []


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
    nn.skip(3)
    stop = threading.Event()
    assert list(live(nn, converter, start=None, stop=stop, on_idle=stop.set)) == []
    # No checkpoint: from the NameNode's current txid, asked once (a reopen resumes there).
    assert nn.opened == [3]


def purged_before_15() -> NameNodeDouble:
    """20 txids of which the NameNode purged the first 14: a stream from 3 meets a gap at 4."""
    nn = NameNodeDouble()
    for i in range(20):
        nn.log(unlink(f"/{i}"))
    nn.purge_before(15)
    return nn


def test_purged_edits_with_policy_stop_yield_the_gap_record_then_fail(converter):
    nn = purged_before_15()
    gaps: list[Gap] = []
    source = live(nn, converter, start=3, on_gap=gaps.append, clock_ms=lambda: 1_700_000_000_123)
    it = iter(source)
    batch = next(it)
    assert batch.txid == 4 and len(batch.events) == 1
    gap = batch.events[0]
    assert (gap.cluster, gap.txid, gap.index, gap.type, gap.path) == (C, 4, 0, EventType.GAP, "/")
    assert gap.gap_end_txid == 15 and gap.timestamp == 1_700_000_000_123
    assert HdfsEvent.from_dict(json.loads(gap.to_json())) == gap  # the contract reads it back
    assert not list(validator("event").iter_errors(json.loads(gap.to_json())))
    with pytest.raises(InotifyGapError, match=r"needed txid 4 .* first available txid is 15"):
        next(it)
    assert gaps == [Gap(expected_txid=4, available_txid=15)]
    assert source.stats.gaps == gaps
    assert source.stats.last_event_ms is None  # the agent's clock is no measure of the lag


def test_policy_fsimage_ships_the_gap_and_ends_the_term_as_stop_does_never_listing(converter):
    # run_term always hands in the snapshot function: the policy alone keeps it from listing.
    nn = purged_before_15()
    listing = ListingDouble([dir_entry("/data")])
    chunks = live(nn, converter, start=3, gap_policy="fsimage",
                  snapshot=namespace_snapshot(C, listing, ["/"])).chunks()
    (gap_batch,) = next(chunks)
    assert [(e.type, e.txid) for e in gap_batch.events] == [(EventType.GAP, 4)]
    with pytest.raises(InotifyGapError, match=r'needed txid 4 .*\(gap_policy = "fsimage"\)$') \
            as info:
        next(chunks)
    assert info.value.gap == Gap(4, 15) and info.value.policy == "fsimage"
    assert listing.listed == [] and nn.opened == [3]


def test_the_gap_the_image_cannot_repair_is_listed_and_a_later_one_ends_the_term(converter):
    nn = purged_before_15()
    listing = ListingDouble([dir_entry("/data")])
    source = live(nn, converter, start=3, gap_policy="fsimage", list_gap_at=4,
                  snapshot=namespace_snapshot(C, listing, ["/"]))
    it = iter(source)
    assert next(it).events[0].key == (C, 4, 0)  # the same GAP key as the term before
    snapshot = next(it)
    assert (snapshot.txid, [e.path for e in snapshot.events]) == (20, ["/data"])
    nn.log(unlink("/late"))
    assert [e.path for e in next(it).events] == ["/late"]
    nn.skip(4)
    nn.log(unlink("/later"))
    nn.purge_before(26)  # another gap, at 22: the image may repair that one
    assert next(it).events[0].key == (C, 22, 0)
    with pytest.raises(InotifyGapError, match=r'\(gap_policy = "fsimage"\)'):
        next(it)
    assert listing.listed == ["/", "/data"] and source.stats.snapshots == 1


def test_a_restart_that_meets_the_same_gap_writes_the_same_gap_key(converter):
    nn = purged_before_15()
    keys = []
    for found_ms in (1000, 2000):  # the agent, then the agent restarted from the same checkpoint
        it = iter(live(nn, converter, start=3, clock_ms=lambda t=found_ms: t))
        keys.append(next(it).events[0].key)
    assert keys == [(C, 4, 0), (C, 4, 0)]


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
    gap = next(it).events[0]
    assert (gap.type, gap.txid, gap.gap_end_txid) == (EventType.GAP, 4, 9)
    with pytest.raises(InotifyGapError):
        next(it)


def test_snapshot_policy_emits_gap_then_snapshot_records_then_resumes_after_its_txid(converter):
    nn = NameNodeDouble()
    for i in range(10):
        nn.log(unlink(f"/data/{i}"))
    nn.purge_before(8)
    namespace = [dir_entry("/data", mtime=50), dir_entry("/data/a"),
                 file_entry("/data/a/f1", size=7, mtime=60), file_entry("/data/b.txt", size=3),
                 NamespaceEntry("/data/link", INodeType.SYMLINK, size=0, mtime=70, atime=71,
                                owner="etl", group="hadoop", perms="0777",
                                symlink_target="/data/a/f1"),
                 dir_entry("/other")]

    def changes_during_listing(path: str) -> None:
        if path == "/data":  # written while the walk runs: after T, so read from the stream
            nn.log(mkdir("/data/new"))

    listing = ListingDouble(namespace, on_list=changes_during_listing)
    gaps: list[Gap] = []
    stop = threading.Event()
    clock = iter([1000, 2000])  # the gap is found at 1000, the listing starts at 2000
    source = live(nn, converter, start=2, stop=stop, on_idle=stop.set, gap_policy="snapshot",
                  on_gap=gaps.append, clock_ms=lambda: next(clock),
                  snapshot=namespace_snapshot(C, listing, ["/data"], clock_ms=lambda: next(clock)))
    got = list(source)
    assert gaps == [Gap(3, 8)]
    gap_batch, snapshot, *after = got
    assert [(e.txid, e.type, e.gap_end_txid, e.timestamp) for e in gap_batch.events] == [
        (3, EventType.GAP, 8, 1000)]
    assert snapshot.txid == 10  # the NameNode's txid before the listing
    assert [(e.index, e.type, e.path, e.inode_type) for e in snapshot.events] == [
        (0, EventType.SNAPSHOT, "/data", INodeType.DIRECTORY),
        (1, EventType.SNAPSHOT, "/data/a", INodeType.DIRECTORY),
        (2, EventType.SNAPSHOT, "/data/a/f1", INodeType.FILE),
        (3, EventType.SNAPSHOT, "/data/b.txt", INodeType.FILE),
        (4, EventType.SNAPSHOT, "/data/link", INodeType.SYMLINK),
    ]
    assert {e.timestamp for e in snapshot.events} == {2000}  # when the listing began
    data, _, f1, _, link = snapshot.events
    assert (f1.size, f1.mtime, f1.replication, f1.block_size, f1.erasure_coded) == (
        7, 60, 3, 134217728, False)
    assert (data.mtime, data.owner, data.perms, data.size, data.replication) == (
        50, "etl", "0755", None, None)
    assert (link.symlink_target, link.atime, link.size, link.block_size) == (
        "/data/a/f1", 71, None, None)
    assert all(e.ctime is None for e in snapshot.events)
    assert [(b.txid, b.events[0].path) for b in after] == [(11, "/data/new")]
    assert nn.opened == [2, 10]
    assert source.stats.snapshots == 1


def test_snapshot_records_follow_the_contract_schema():
    listing = ListingDouble([dir_entry("/d"), file_entry("/d/f"), NamespaceEntry(
        "/d/l", INodeType.SYMLINK, owner="o", group="g", perms="0777", symlink_target="/d/f")])
    (batch,) = namespace_snapshot(C, listing, ["/"], clock_ms=lambda: 5)(42)
    check = validator("event")
    for event in batch.events:
        doc = json.loads(event.to_json())
        assert not list(check.iter_errors(doc)), event
        assert HdfsEvent.from_dict(doc) == event
    assert [e.path for e in batch.events] == ["/d", "/d/f", "/d/l"]


def test_snapshot_policy_needs_a_snapshot_function(converter):
    with pytest.raises(ValueError, match="snapshot"):
        live(NameNodeDouble(), converter, start=0, gap_policy="snapshot")


def test_walk_lists_each_directory_once_in_parallel():
    listing = ListingDouble([dir_entry("/a"), dir_entry("/a/b"), dir_entry("/a/b/c"),
                             file_entry("/a/b/c/f"), dir_entry("/z"), file_entry("/z/g")])
    entries = list(walk(listing, ["/a/b", "/a", "/z", "/missing"], workers=4))
    assert [e.path for e in entries] == ["/a", "/a/b", "/a/b/c", "/a/b/c/f", "/z", "/z/g"]
    assert sorted(listing.listed) == ["/a", "/a/b", "/a/b/c", "/z"]
