"""Directory operations on trees larger than a chunk lists (issue 32, item 4): a RENAME,
UNLINK or SNAPSHOT walk costs round trips per level of its tree, not per directory, keeps what
the chunk listed, and ends in the in-order state, after a crash at any point too."""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hdfs_events.event import EventType, HdfsEvent, INodeType
from lambdas.ingest import subtree
from lambdas.ingest.index import NamespaceIndex
from lambdas.ingest.index_model import Entry
from lambdas.ingest.index_table import DynamoIndexStore
from lambdas.ingest.index_view import Refused
from tests.kit.big_renames import big_renames
from tests.kit.index_builders import apply_in_order, ev, live
from tests.kit.ingest_aws import TABLE
from tests.kit.memory_stores import MemoryIndexStore
from tests.kit.replay import in_order_state

GROUPS, DIRS, FILES = 10, 20, 5  # 1,000 files in 200 directories, and a hot one of 150
LEVELS = 4  # /data/t, its groups, their directories, the files
BUDGET = 1000  # entries a chunk lists, and a table walk's step reads


class Serialized:
    """A boto3 client whose calls run one at a time: moto in-process can lose writes under
    parallel requests (FACTS.md); the store still issues them together."""

    def __init__(self, client: Any) -> None:
        self._client, self._lock = client, threading.Lock()

    def __getattr__(self, name: str) -> Any:
        call = getattr(self._client, name)

        def serialized(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                return call(*args, **kwargs)
        return serialized


def test_renames_of_a_tree_over_the_listing_budget_cost_trips_per_level() -> None:
    """Round trips counted as the store's calls: each is one wave of requests issued
    together (BatchGetItem pages, Queries, BatchWriteItem calls)."""
    events = big_renames(GROUPS, DIRS, FILES)
    first_op = next(i for i, e in enumerate(events) if e.type == EventType.RENAME)
    store = MemoryIndexStore()
    index = NamespaceIndex(store, ["/data"], subtree_budget=100, listing_budget=BUDGET)
    assert apply_in_order(index, events[:first_op]) == []
    assert any(p.startswith("prod#/data/t/hot//") for p in store.partitions), (
        "the hot directory's children are in its shards: the walks must read them")
    trips: dict[str, int] = {}
    for event in events[first_op:]:  # each its own chunk: the chain crosses chunks
        store.calls = {"get": 0, "put": 0, "query": 0}
        assert apply_in_order(index, [event]) == []
        if event.type == EventType.RENAME and event.path.rstrip("0123456789") == "/data/t":
            trips[f"{event.path} -> {event.dst_path}"] = sum(store.calls.values())
    assert store.live("prod") == in_order_state(events, "/data")
    assert len(trips) == 3
    # Per level: a wave listing it, or a table step's shard read, Query wave and write wave;
    # the walk of 16 directories a step took over 40 for each.
    assert max(trips.values()) <= 4 * LEVELS, trips


def test_wide_walks_over_dynamodb_take_sharded_directories_along(ddb: Any) -> None:
    """The same operations on a smaller tree through DynamoIndexStore (moto in-process): a
    table step's Queries over many directories and a sharded one's partitions."""
    events = big_renames(2, 5, 2, hot_files=105)
    first_op = next(i for i, e in enumerate(events) if e.type == EventType.RENAME)
    store = DynamoIndexStore(TABLE, Serialized(ddb))
    assert apply_in_order(NamespaceIndex(store, ["/data"]), events[:first_op]) == []
    index = NamespaceIndex(store, ["/data"], subtree_budget=40, listing_budget=60)
    steps = 0
    for event in events[first_op:]:
        applied = index.apply_until_walk([event])
        walk = applied.walk
        while walk is not None:
            walk, refused = index.resume(walk)
            assert refused == []
            steps += 1
    assert steps > 0  # the tree is over the budget: walked from the table
    assert live(ddb) == in_order_state(events, "/data")


def test_a_walk_keeps_its_saved_cursor_within_the_position_item(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The cursor is saved in the position item (400 KB at most in DynamoDB): a wide tree
    walked with room for a few frames only still ends, each saved cursor within the room."""
    monkeypatch.setattr(subtree, "MAX_CURSOR_BYTES", 300)
    events = big_renames(4, 8, 2, hot_files=0)
    store = MemoryIndexStore()
    index = NamespaceIndex(store, ["/data"], subtree_budget=50, listing_budget=40)
    first_op = next(i for i, e in enumerate(events) if e.type == EventType.RENAME)
    assert apply_in_order(index, events[:first_op]) == []
    done, cursors = first_op, []
    while done < len(events):
        applied = index.apply_until_walk(events[done:done + 1])
        done += applied.taken
        walk = applied.walk
        while walk is not None:
            cursors.append(json.loads(walk.to_json())["cursor"])
            walk, _ = index.resume(walk)
    assert max(len(c) for c in cursors) > 3  # wide steps
    assert max(len(json.dumps(c)) for c in cursors) < 300 + 100  # one descent over, at most
    assert store.live("prod") == in_order_state(events, "/data")


@pytest.mark.parametrize("budget", [20_000, 10])
def test_a_directory_snapshot_ends_the_children_of_its_shards(budget: int) -> None:
    """A sharded directory listed again (a gap's SNAPSHOT): what it held and the listing
    does not name ends, in the chunk or from the table (budget 10: its count must survive
    the chunk's write of the directory's item for the table walk to read the shards)."""
    events = big_renames(0, 0, 0, hot_files=150)
    before = events[:next(i for i, e in enumerate(events) if e.type == EventType.RENAME)]
    store = MemoryIndexStore()
    assert apply_in_order(NamespaceIndex(store, ["/data"]), before) == []
    assert any(p.startswith("prod#/data/t/hot//") for p in store.partitions)
    listed = {"inode_type": INodeType.DIRECTORY, "owner": "etl", "group": "etl",
              "perms": "0755"}
    snapshot = [ev(9000, EventType.SNAPSHOT, "/data/t/hot", **listed),
                ev(9001, EventType.SNAPSHOT, "/data/t/hot/h0007",
                   **{**listed, "inode_type": INodeType.FILE})]
    index = NamespaceIndex(store, ["/data"], listing_budget=budget, subtree_budget=10)
    assert apply_in_order(index, snapshot) == []
    live = store.live("prod")
    assert [p for p in live if p.startswith("/data/t/hot/")] == ["/data/t/hot/h0007"]
    assert live == in_order_state([*before, *snapshot], "/data")


class CrashingStore(MemoryIndexStore):
    """Writes a random part of one put_many, then fails (the Lambda died mid-flush)."""

    def __init__(self, rng: random.Random) -> None:
        super().__init__()
        self.rng, self.crash_at = rng, rng.randrange(1, 40)

    def put_many(self, entries: Sequence[Entry]) -> list[Refused]:
        self.crash_at -= 1
        if self.crash_at == 0:
            super().put_many([e for e in entries if self.rng.random() < 0.5])
            raise ConnectionError("the invocation ended mid-flush")
        return super().put_many(entries)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), chunk=st.integers(1, 60), page=st.integers(1, 5),
       budget=st.integers(20, 80))
def test_big_walks_applied_again_after_a_crash_mid_write_end_in_the_in_order_state(
        seed: int, chunk: int, page: int, budget: int) -> None:
    """Wide table walks (a step reads budget / 10 directories) saved and resumed after a
    crash with part of a chunk's or a step's writes landed."""
    rng = random.Random(seed)
    events = big_renames(3, 5, 2, hot_files=12)
    store = CrashingStore(rng)
    index = NamespaceIndex(store, ["/data"], subtree_budget=page, listing_budget=budget)
    _apply_with_crashes(index, events, chunk)
    assert store.live("prod") == in_order_state(events, "/data")


def _apply_with_crashes(index: NamespaceIndex, events: list[HdfsEvent], chunk: int) -> None:
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


def _partitions(ddb: Any) -> set[str]:
    pages = ddb.get_paginator("scan").paginate(TableName=TABLE)
    return {item["parent"]["S"] for page in pages for item in page["Items"]}
