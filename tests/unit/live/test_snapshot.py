"""The snapshot's walk and pieces (snapshot.py) on a listing double: the cases a NameNode
cannot be made to show on demand (read-ahead bounds, a failure on one page, name orders a
test cluster would need special names for). tests/integration/hdfs/test_namespace_listing.py
runs the same walk on the real NameNode."""

from __future__ import annotations

import random
import threading
from typing import Any

import pytest

from onprem_agent.live.convert import JavaBatchConverter
from onprem_agent.live.reconnect import Backoff
from onprem_agent.live.snapshot import (
    ListingPage,
    NamespaceEntry,
    namespace_snapshot,
    snapshot_pieces,
    walk,
)
from onprem_agent.live.stream import LiveSource
from tests.unit.live.doubles import ListingDouble, NameNodeDouble, dir_entry, file_entry

C = "prod"


def flat(n: int) -> list[NamespaceEntry]:
    return [dir_entry("/d"), *(file_entry(f"/d/f{i:05}") for i in range(n))]


def test_a_directory_is_read_a_page_at_a_time_after_the_last_name_read():
    listing = ListingDouble(flat(10), page_size=3)
    paths = [e.path for e in walk(listing, ["/d"], workers=1)]
    assert paths == ["/d", *(f"/d/f{i:05}" for i in range(10))]
    assert listing.pages == [("/d", None), ("/d", "f00002"), ("/d", "f00005"),
                             ("/d", "f00008")]


def test_a_huge_directory_is_never_read_far_ahead_of_the_walk():
    listing = ListingDouble(flat(20_000), page_size=100)
    entries = walk(listing, ["/d"], workers=4)
    for _ in range(150):  # into the second page
        next(entries)
    # The page in hand, the next one, and read-ahead of at most 2 x workers pages.
    assert len(listing.pages) <= 2 + 2 * 4
    assert sum(1 for _ in entries) == 20_001 - 150
    assert len(listing.pages) == 200  # each page read once, read-ahead included


def test_a_parent_comes_before_its_children_in_the_namenode_order_of_names():
    # HDFS compares names as signed bytes: "é" (0xC3 ...) before ASCII; and the walk enters
    # /r/a before going on with /r/a-x, which a sort of whole paths would put first.
    listing = ListingDouble([dir_entry("/r"), dir_entry("/r/a"), file_entry("/r/a/b"),
                             file_entry("/r/a-x"), file_entry("/r/\u00e9"),
                             file_entry("/r/Z")])
    assert [e.path for e in walk(listing, ["/r"], workers=2)] == [
        "/r", "/r/\u00e9", "/r/Z", "/r/a", "/r/a/b", "/r/a-x"]


def test_the_order_depends_on_the_namespace_only():
    rng = random.Random(7)
    entries, dirs = [dir_entry("/t")], ["/t"]
    for i in range(1500):
        parent = rng.choice(dirs)
        if rng.random() < 0.2:
            dirs.append(f"{parent}/d{i}")
            entries.append(dir_entry(dirs[-1]))
        else:
            entries.append(file_entry(f"{parent}/f{rng.randrange(10**6)}-{i}"))
    one_by_one = [e.path for e in walk(ListingDouble(entries, page_size=1000), ["/t"],
                                       workers=1)]
    paged_ahead = [e.path for e in walk(ListingDouble(entries, page_size=2), ["/t"],
                                        workers=8)]
    assert one_by_one == paged_ahead and len(one_by_one) == 1501
    seen = {"/t"}
    for path in one_by_one[1:]:
        assert path.rsplit("/", 1)[0] in seen  # a parent before its children
        seen.add(path)


@pytest.mark.parametrize(("n", "sizes"), [(2500, [1000, 1000, 500]), (2000, [1000, 1000]),
                                          (0, [0])])
def test_snapshot_pieces_number_the_records_across_pieces(n, sizes):
    entries = [file_entry(f"/d/f{i:05}") for i in range(n)]
    pieces = list(snapshot_pieces(C, 42, entries, listed_ms=5))
    assert [len(p.events) for p in pieces] == sizes
    assert [p.more for p in pieces] == [True] * (len(sizes) - 1) + [False]
    assert {p.txid for p in pieces} == {42}
    assert [e.index for p in pieces for e in p.events] == list(range(n))


class FlakyListing(ListingDouble):
    """Refuses one page once, as a NameNode that restarts mid-walk does (ConnectException)."""

    def __init__(self, entries: list[NamespaceEntry], fail_at: tuple[str, str | None],
                 **kw: Any) -> None:
        super().__init__(entries, **kw)
        self.fail_at, self.failed = fail_at, 0

    def list_page(self, path: str, after: str | None) -> ListingPage:
        if (path, after) == self.fail_at and not self.failed:
            import jpype

            self.failed += 1
            raise jpype.JClass("java.net.ConnectException")("Connection refused")
        return super().list_page(path, after)


@pytest.mark.parametrize("workers", [1, 4])
def test_a_namenode_gone_mid_walk_is_waited_for_at_the_page_it_was_reading(
        inotify_messages, workers):
    namespace = [*flat(10), dir_entry("/d/sub"), file_entry("/d/sub/x")]
    listing = FlakyListing(namespace, fail_at=("/d", "f00005"), page_size=3)
    nn = NameNodeDouble()
    stop = threading.Event()
    source = LiveSource(nn.source(), JavaBatchConverter(C, inotify_messages), cluster=C,
                        start_txid=None, stop=stop, gap_policy="snapshot",
                        snapshot=namespace_snapshot(C, listing, ["/d"], workers=workers,
                                                    piece_events=4),
                        on_idle=stop.set, poll_timeout_ms=10,
                        backoff=Backoff(initial_s=0.001, max_s=0.002))
    pieces = list(source)
    # With read-ahead the failed page was a worker's: the walk reads it again on its own
    # thread, where the NameNode is back; without, the walk itself waited the outage out.
    assert listing.failed == 1 and source.stats.outages == (1 if workers == 1 else 0)
    assert not source.stats.namenode_unavailable
    clean = [e.path for e in walk(ListingDouble(namespace), ["/d"], workers=1)]
    assert [e.path for p in pieces for e in p.events] == clean
    assert [e.index for p in pieces for e in p.events] == list(range(len(clean)))
    assert [p.more for p in pieces] == [True, True, True, False]
    assert source.stats.snapshots == 1


def test_a_directory_gone_mid_walk_ends_its_listing():
    listing = ListingDouble([dir_entry("/d"), dir_entry("/d/gone"), file_entry("/d/gone/x"),
                             file_entry("/d/y")])

    def remove(path: str) -> None:  # deleted after /d's page named it: its UNLINK is > T
        if path == "/d/gone":
            del listing.entries["/d/gone/x"], listing.entries["/d/gone"]

    listing.on_list = remove
    assert [e.path for e in walk(listing, ["/d"], workers=1)] == ["/d", "/d/gone", "/d/y"]
