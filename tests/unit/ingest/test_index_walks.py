"""Subtree walks within a chunk: over held children (listed level by level for every walk of the
chunk at once, plus what the chunk itself put there), each compared with the in-order replay,
with every chunk size, and again after a crash mid-write."""

from __future__ import annotations

import pytest

from hdfs_events.event import EventType, HdfsEvent
from lambdas.ingest.index import NamespaceIndex
from tests.kit.index_builders import apply_in_order, ev, mkdir, mkfile
from tests.kit.memory_stores import MemoryIndexStore
from tests.kit.replay import in_order_state


def tree(txid: int, root: str, depth: int, files: int = 2) -> list[HdfsEvent]:
    """A directory chain `depth` deep under `root`, with files at every level."""
    out, path = [mkdir(txid, root)], root
    for level in range(depth):
        for f in range(files):
            out.append(mkfile(txid + len(out), f"{path}/f{f}"))
        path = f"{path}/d{level}"
        out.append(mkdir(txid + len(out), path))
    return out


def rename(txid: int, src: str, dst: str) -> HdfsEvent:
    return ev(txid, EventType.RENAME, src, dst_path=dst)


def unlink(txid: int, path: str) -> HdfsEvent:
    return ev(txid, EventType.UNLINK, path)


def check_every_chunking(before: list[HdfsEvent], chunk: list[HdfsEvent]) -> None:
    """`before` applied and written, then `chunk`, cut every way: the in-order state."""
    for size in (1, 2, 3, 5, len(chunk)):
        store = MemoryIndexStore()
        apply_in_order(NamespaceIndex(store, ["/data"]), before)
        assert apply_in_order(NamespaceIndex(store, ["/data"]), chunk, size) == []
        assert store.live("prod") == in_order_state([*before, *chunk], "/data"), size


BEFORE = [mkdir(1, "/data"), *tree(2, "/data/a", depth=3), *tree(40, "/data/k", depth=2)]


def test_a_walk_over_a_directory_renamed_earlier_in_the_chunk() -> None:
    check_every_chunking(BEFORE, [rename(100, "/data/a", "/data/b"),
                                  mkfile(101, "/data/b/d0/new"),
                                  unlink(102, "/data/b/d0"),
                                  rename(103, "/data/b", "/data/c")])


def test_a_walk_over_a_directory_created_earlier_in_the_chunk() -> None:
    check_every_chunking(BEFORE, [*tree(100, "/data/n", depth=3),
                                  rename(120, "/data/n/d0", "/data/m"),
                                  unlink(121, "/data/n"), unlink(122, "/data/m/d1")])


def test_a_walk_root_created_again_in_the_chunk() -> None:
    check_every_chunking(BEFORE, [unlink(100, "/data/a"), mkdir(101, "/data/a"),
                                  mkfile(102, "/data/a/f0"), mkdir(103, "/data/a/d0"),
                                  unlink(104, "/data/a")])


def test_a_rename_chain_within_a_chunk() -> None:
    check_every_chunking(BEFORE, [rename(100, "/data/a", "/data/b"),
                                  rename(101, "/data/b", "/data/c"),
                                  rename(102, "/data/c/d0", "/data/e"),
                                  unlink(103, "/data/e/d1/f0")])


def test_the_parent_of_a_renamed_directory_deleted_in_the_same_chunk() -> None:
    check_every_chunking(BEFORE, [rename(100, "/data/a/d0/d1", "/data/k/moved"),
                                  unlink(101, "/data/a"),
                                  unlink(102, "/data/k/moved/f1"),
                                  rename(103, "/data/k", "/data/z")])


def test_a_directory_moved_into_a_tree_then_the_tree_deleted() -> None:
    check_every_chunking(BEFORE, [rename(100, "/data/k", "/data/a/d0/k"),
                                  unlink(101, "/data/a/d0")])


def test_many_walks_of_a_chunk_list_their_trees_together_level_by_level() -> None:
    """Ten trees four levels deep deleted in one chunk: a wave of Queries per level (and
    the reads with the first), not one per level and tree; then one write."""
    before = [mkdir(1, "/data")]
    for t in range(10):
        before += tree(len(before) + 1, f"/data/t{t}", depth=4)
    store = MemoryIndexStore()
    apply_in_order(NamespaceIndex(store, ["/data"]), before)
    store.calls = {"get": 0, "put": 0, "query": 0}
    chunk = [unlink(1000 + t, f"/data/t{t}") for t in range(10)]
    assert apply_in_order(NamespaceIndex(store, ["/data"]), chunk) == []
    assert store.live("prod") == {"/data": in_order_state(before, "/data")["/data"]}
    assert store.calls["query"] == 5  # the roots, then levels d0..d3
    assert store.calls["get"] == 1 and store.calls["put"] == 1


def test_a_tree_created_and_deleted_in_one_chunk_is_neither_listed_nor_written() -> None:
    store = MemoryIndexStore()
    apply_in_order(NamespaceIndex(store, ["/data"]), [mkdir(1, "/data")])
    store.calls, store.puts = {"get": 0, "put": 0, "query": 0}, 0
    chunk = [*tree(10, "/data/_temporary", depth=4), rename(50, "/data/_temporary/d0/f0",
                                                           "/data/part-0"),
             unlink(51, "/data/_temporary")]
    apply_in_order(NamespaceIndex(store, ["/data"]), chunk)
    assert store.live("prod") == in_order_state([mkdir(1, "/data"), *chunk], "/data")
    assert store.calls["query"] == 0
    assert store.puts == 1  # /data/part-0; the temporary tree was born and gone unseen


def test_files_an_earlier_chunk_wrote_are_read_not_listed_when_they_go() -> None:
    """A path the chunk did not create is of unknown type until read, so its UNLINK or RENAME
    away starts a walk; the read shows a file, and no Query is made for it (the whole chain's
    steady state: create, rename, delete of a file written a while before, bench.chain_speed)."""
    before = [mkdir(1, "/data"), mkdir(2, "/data/t"), mkfile(3, "/data/t/a"),
              mkfile(4, "/data/t/b"), mkdir(5, "/data/t/d"), mkfile(6, "/data/t/d/c")]
    store = MemoryIndexStore()
    apply_in_order(NamespaceIndex(store, ["/data"]), before)
    store.calls = {"get": 0, "put": 0, "query": 0}
    chunk = [unlink(10, "/data/t/a"), rename(11, "/data/t/b", "/data/t/b.done"),
             mkfile(12, "/data/t/e")]
    assert apply_in_order(NamespaceIndex(store, ["/data"]), chunk) == []
    assert store.live("prod") == in_order_state([*before, *chunk], "/data")
    assert store.calls == {"get": 1, "put": 1, "query": 0}
    # A directory among them is still listed, in the wave after the read.
    store.calls = {"get": 0, "put": 0, "query": 0}
    later = [unlink(20, "/data/t/b.done"), unlink(21, "/data/t/d")]
    assert apply_in_order(NamespaceIndex(store, ["/data"]), later) == []
    assert store.live("prod") == in_order_state([*before, *chunk, *later], "/data")
    assert store.calls == {"get": 1, "put": 1, "query": 1}


def test_a_walk_over_the_listing_budget_goes_on_from_the_table() -> None:
    store = MemoryIndexStore()
    apply_in_order(NamespaceIndex(store, ["/data"]), BEFORE)
    index = NamespaceIndex(store, ["/data"], listing_budget=3)
    applied = index.apply_until_walk([mkfile(100, "/data/a/x"), unlink(101, "/data/a"),
                                      mkfile(102, "/data/y")])
    assert applied.taken == 2 and applied.walk is not None and applied.walk.src == "/data/a"
    # What the chunk listed (/data/a) is done with it: the table walk starts beneath.
    assert applied.walk.cursor == (("/d0", None, None),)
    live = store.live("prod")
    assert not {"/data/a/x", "/data/a/f0", "/data/a/d0"} & live.keys()
    assert "/data/a/d0/f0" in live  # the table walk's
    walk = applied.walk
    while walk is not None:
        walk, _ = index.resume(walk)
    apply_in_order(index, [mkfile(102, "/data/y")])
    assert store.live("prod") == in_order_state(
        [*BEFORE, mkfile(100, "/data/a/x"), unlink(101, "/data/a"), mkfile(102, "/data/y")],
        "/data")


class CrashAt(MemoryIndexStore):
    """Lands only the writes `keep` picks of the `at`-th put_many, then fails."""

    def __init__(self, at: int, keep) -> None:  # type: ignore[no-untyped-def]
        super().__init__()
        self.at, self.keep = at, keep

    def put_many(self, entries):  # type: ignore[no-untyped-def]
        self.at -= 1
        if self.at != 0:
            return super().put_many(entries)
        super().put_many([e for i, e in enumerate(entries) if self.keep(i)])
        raise ConnectionError("the invocation ended mid-flush")


@pytest.mark.parametrize("at", [1, 2, 3])
@pytest.mark.parametrize("keep", [lambda i: False, lambda i: i % 2 == 0, lambda i: i % 2 == 1,
                                  lambda i: i % 3 == 0])
def test_a_chunk_of_walks_applied_again_after_a_crash_mid_write(at, keep) -> None:
    chunk = [rename(100, "/data/a", "/data/b"), *tree(101, "/data/a", depth=2),
             unlink(120, "/data/b/d0"), rename(121, "/data/k", "/data/b/k"),
             unlink(122, "/data/a/d0"), mkfile(123, "/data/b/k/f9"),
             rename(124, "/data/b/k/f9", "/data/a/g"), unlink(125, "/data/b")]
    store = MemoryIndexStore()
    apply_in_order(NamespaceIndex(store, ["/data"]), BEFORE)
    crashing = CrashAt(at, keep)
    crashing.partitions = store.partitions
    index = NamespaceIndex(crashing, ["/data"])
    done, crashed = 0, False  # the saved position
    while done < len(chunk):
        try:
            applied = index.apply_until_walk(chunk[done:])
        except ConnectionError:
            crashed = True
            continue  # the next invocation starts again from the saved position
        done += applied.taken
        assert applied.walk is None
    assert crashed
    assert crashing.live("prod") == in_order_state([*BEFORE, *chunk], "/data")


def test_a_chunk_cut_elsewhere_before_a_crash_leaves_nothing_alive_it_ended() -> None:
    """First run: the listing budget cuts the chunk at the big walk, so /data/t is written
    alive, and the invocation dies before saving its position. The next run (more budget)
    takes the whole chunk, where /data/t is born and gone: it is not skipped blindly."""
    store = MemoryIndexStore()
    apply_in_order(NamespaceIndex(store, ["/data"]), BEFORE)
    chunk = [mkfile(100, "/data/t"), unlink(101, "/data/a"), unlink(102, "/data/t")]
    first = NamespaceIndex(store, ["/data"], listing_budget=3).apply_until_walk(chunk)
    assert first.taken == 2 and store.live("prod")["/data/t"]
    assert apply_in_order(NamespaceIndex(store, ["/data"]), chunk) == []
    assert store.live("prod") == in_order_state([*BEFORE, *chunk], "/data")
