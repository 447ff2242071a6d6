"""The index applied in order on a dict store: named cases, a chunk applied again after a
crash at any point of its writes, and events DynamoDB could never store."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hdfs_events.event import EventType
from lambdas.ingest.index import HeldEntries, NamespaceIndex
from lambdas.ingest.index_model import Entry
from lambdas.ingest.index_view import Refused
from tests.kit.index_builders import apply_in_order, ev, mkdir, mkfile
from tests.kit.memory_stores import MemoryIndexStore
from tests.kit.random_namespace import RandomNamespace
from tests.kit.replay import in_order_state


def check(events, page: int = 100, chunk: int = 1000) -> MemoryIndexStore:
    store = MemoryIndexStore()
    assert apply_in_order(NamespaceIndex(store, ["/data"], subtree_budget=page), events,
                          chunk) == []
    assert store.live("prod") == in_order_state(events, "/data")
    return store


def test_a_temp_file_renamed_into_place_is_written_once_per_path() -> None:
    events = [mkdir(1, "/data"), mkfile(2, "/data/_tmp.x"),
              ev(3, EventType.CLOSE, "/data/_tmp.x", size=42),
              ev(4, EventType.RENAME, "/data/_tmp.x", dst_path="/data/x")]
    store = check(events)
    assert store.puts == 2  # /data and /data/x: the temp file was born and gone in the chunk
    # Every path was first created or moved into: nothing read before applying; the one read
    # (beside the writes) checks the table holds no /data/_tmp.x to end.
    assert store.calls["get"] == 1
    assert "_tmp.x" not in store.partitions["prod#/data"]


def test_a_rename_chain_back_to_the_start() -> None:
    check([mkdir(1, "/data"), mkdir(2, "/data/b"),
           ev(3, EventType.RENAME, "/data/b", dst_path="/data/c"),
           ev(4, EventType.RENAME, "/data/c", dst_path="/data/g"),
           ev(5, EventType.RENAME, "/data/g", dst_path="/data/b")])


def test_a_directory_renamed_at_depth_then_changed_beneath() -> None:
    events = [mkdir(1, "/data"), mkdir(2, "/data/d"), mkdir(3, "/data/d/e"),
              mkfile(4, "/data/d/e/a"), ev(5, EventType.CLOSE, "/data/d/e/a", size=5),
              mkfile(6, "/data/d/b"),
              ev(7, EventType.RENAME, "/data/d", dst_path="/data/z"),
              mkfile(8, "/data/z/b"), ev(9, EventType.CLOSE, "/data/z/b", size=99),
              ev(10, EventType.UNLINK, "/data/z/e")]
    for page in (1, 2, 100):
        check(events, page=page)


def test_paths_outside_the_prefixes_are_not_indexed() -> None:
    store = MemoryIndexStore()
    apply_in_order(NamespaceIndex(store, ["/data"]),
                   [mkdir(1, "/tmp"), mkfile(2, "/tmp/x"), mkfile(3, "/database")])
    assert store.entries() == []


def test_an_impossible_event_is_skipped_with_its_reason_and_the_rest_applies() -> None:
    long_name = "/data/" + "n" * 1100
    good = [mkdir(1, "/data"), mkfile(2, "/data/a")]
    events = [*good, mkfile(3, long_name), ev(4, EventType.RENAME, "/data/a",
                                               dst_path="/data/a/inside"),
              mkfile(5, "/data/b")]
    store = MemoryIndexStore()
    skipped = apply_in_order(NamespaceIndex(store, ["/data"]), events)
    assert [(s.txid, s.path) for s in skipped] == [(3, long_name), (4, "/data/a")]
    assert "1024" in skipped[0].reason and "own subtree" in skipped[1].reason
    assert store.live("prod") == in_order_state([*good, events[-1]], "/data")


class CrashingStore(MemoryIndexStore):
    """Writes a random part of one put_many, then fails (the Lambda died mid-flush)."""

    def __init__(self, rng: random.Random) -> None:
        super().__init__()
        self.rng, self.crash_at = rng, rng.randrange(1, 12)

    def put_many(self, entries):  # type: ignore[no-untyped-def]
        self.crash_at -= 1
        if self.crash_at == 0:
            part = [e for e in entries if self.rng.random() < 0.5]
            super().put_many(part)
            raise ConnectionError("the invocation ended mid-flush")
        return super().put_many(entries)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), steps=st.integers(1, 40), chunk=st.integers(1, 30),
       page=st.integers(1, 4))
def test_a_chunk_applied_again_after_a_crash_mid_write_ends_in_the_in_order_state(
        seed, steps, chunk, page) -> None:
    """An invocation that died applying ranges with part of a chunk's (or a walk step's)
    writes landed starts again from its saved position: the index ends as if it had not."""
    rng = random.Random(seed)
    events = RandomNamespace(rng, dir_op_depth=1).run(steps)
    store = CrashingStore(rng)
    index = NamespaceIndex(store, ["/data"], subtree_budget=page, listing_budget=3 * page)
    done, walk = 0, None  # the saved position
    while done < len(events) or walk is not None:
        try:
            if walk is not None:
                walk, _ = index.resume(walk)
                continue
            applied = index.apply_until_walk(events[done:done + chunk])
        except ConnectionError:
            continue  # the next invocation goes on from the saved position
        done, walk = done + applied.taken, applied.walk
    assert store.live("prod") == in_order_state(events, "/data")


def test_a_chunk_applied_twice_changes_nothing_the_second_time() -> None:
    events = RandomNamespace(random.Random(4), dir_op_depth=99).run(60)
    store = check(events)
    before = {e.path: e for e in store.entries()}
    apply_in_order(NamespaceIndex(store, ["/data"]), events)
    assert {e.path: e for e in store.entries()} == before


@pytest.mark.parametrize("refused_path", ["/data/b"])
def test_an_entry_the_store_refuses_is_reported_and_the_others_land(refused_path) -> None:
    class Refusing(MemoryIndexStore):
        def put_many(self, entries):  # type: ignore[no-untyped-def]
            kept = [e for e in entries if e.path != refused_path]
            super().put_many(kept)
            return [Refused(e, "DynamoDB refused the entry: test") for e in entries
                    if e.path == refused_path]

    store = Refusing()
    skipped = apply_in_order(NamespaceIndex(store, ["/data"]),
                             [mkdir(1, "/data"), mkfile(2, "/data/a"), mkfile(3, "/data/b")])
    assert [(s.path, s.txid) for s in skipped] == [(refused_path, 3)]
    assert set(store.live("prod")) == {"/data", "/data/a"}
    assert isinstance(store.entries()[0], Entry)


def test_a_lease_hold_takes_what_it_read_or_wrote_from_memory_not_the_table() -> None:
    # The chain's step: create a file, then, chunks later, rename it and delete one written
    # chunks before. Within one lease hold the table holds what the hold wrote: no read.
    events = [mkdir(1, "/data"), mkdir(2, "/data/d")]
    events += [mkfile(10 + i, f"/data/d/f{i}") for i in range(10)]
    events += [ev(30 + i, EventType.RENAME, f"/data/d/f{i}", dst_path=f"/data/d/f{i}.done")
               for i in range(5)]
    events += [ev(40 + i, EventType.UNLINK, f"/data/d/f{i}.done") for i in range(3)]
    events += [ev(50, EventType.CLOSE, "/data/d/f9", size=7)]
    chunks = [events[:12], events[12:17], events[17:]]
    reads: dict[bool, int] = {}
    for hold in (False, True):
        store = MemoryIndexStore()
        index = NamespaceIndex(store, ["/data"])
        held = HeldEntries() if hold else None
        for chunk in chunks:
            assert index.apply_until_walk(chunk, held).taken == len(chunk)
        assert store.live("prod") == in_order_state(events, "/data")
        reads[hold] = index.reads
    # Without: the 5 renamed files, the 3 deleted ones and the closed one (each written a chunk
    # before), and both parents in the second and third chunks. With: nothing (every path was
    # first created in the hold).
    assert reads == {False: 5 + 3 + 1 + 2 * 2, True: 0}
