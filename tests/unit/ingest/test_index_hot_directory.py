"""A hot directory (issue 32): 10,000 creates/s into one directory are written without going over
DynamoDB's 1,000 WCU/s per partition key, because its children's keys are sharded; a rename or
delete of it takes every child along; `index ls` pages through it in name order."""

from __future__ import annotations

from typing import Any

import pytest

from hdfs_events import names
from hdfs_events.event import EventType, HdfsEvent, INodeType
from hdfs_events.index_item import INDEX_SHARDS
from hdfs_events_cli.index_reader import IndexReader
from lambdas.ingest import index_view
from lambdas.ingest.index import NamespaceIndex
from lambdas.ingest.index_table import DynamoIndexStore
from lambdas.ingest.sequencer import CHUNK_EVENTS
from tests.kit.index_builders import T0, apply_in_order, ev, live, mkdir, mkfile
from tests.kit.ingest_aws import TABLE
from tests.kit.memory_stores import MemoryIndexStore, PartitionLimit
from tests.kit.replay import in_order_state

CREATES_PER_S = 10_000
SMOKE_CREATES = CREATES_PER_S  # a second of them


def hot_directory(files: int, txid: int = 10) -> list[HdfsEvent]:
    return [mkdir(1, "/data"), mkdir(2, "/data/hot"),
            *(mkfile(txid + i, f"/data/hot/f{i:06d}") for i in range(files))]


def throttled_writes(events: list[HdfsEvent], limit: PartitionLimit,
                     store: MemoryIndexStore) -> int:
    """Applies the events a chunk at a time as the sequencer does, the simulated clock at the
    time the chunk's events arrived (CREATES_PER_S)."""
    index = NamespaceIndex(store, ["/data"])
    for start in range(0, len(events), CHUNK_EVENTS):
        limit.now_s = start / CREATES_PER_S
        assert index.apply_until_walk(events[start:start + CHUNK_EVENTS]).taken == min(
            CHUNK_EVENTS, len(events) - start)
    return limit.throttled


def test_a_directory_receiving_10k_creates_a_second_is_written_without_throttling(
        monkeypatch: pytest.MonkeyPatch) -> None:
    events = hot_directory(SMOKE_CREATES)
    sharded = MemoryIndexStore(on_write=(limit := PartitionLimit(1000)))
    assert throttled_writes(events, limit, sharded) == 0
    assert sharded.live("prod") == in_order_state(events, "/data")
    hot = names.index_partition("prod", "/data/hot")
    assert len(sharded.partitions.get(hot, {})) == 0  # sharded from the first chunk on
    assert len([p for p in sharded.partitions if p.startswith(hot + "//")]) == INDEX_SHARDS

    # The same events with sharding off: the model of the limit bites.
    monkeypatch.setattr(index_view, "SHARD_AFTER_WRITES", 10**9)
    unsharded = MemoryIndexStore(on_write=(baseline := PartitionLimit(1000)))
    assert throttled_writes(events, baseline, unsharded) > SMOKE_CREATES // 2
    assert unsharded.live("prod") == sharded.live("prod")


def test_a_quiet_directory_keeps_its_one_partition() -> None:
    events = hot_directory(index_view.SHARD_AFTER_WRITES)
    store = MemoryIndexStore()
    apply_in_order(NamespaceIndex(store, ["/data"]), events)
    assert set(store.partitions) == {"prod#/", "prod#/data", "prod#/data/hot"}


def test_children_written_before_the_directory_was_sharded_stay_readable() -> None:
    """Some children in the directory's own partition, later ones (and later changes of the
    early ones) in its shards: every read merges them, the later write kept."""
    early = hot_directory(50)
    late = [*(mkfile(1000 + i, f"/data/hot/g{i:04d}") for i in range(300)),
            *(ev(2000 + i, EventType.CLOSE, f"/data/hot/f{i:06d}", size=i) for i in range(20)),
            *(ev(3000 + i, EventType.UNLINK, f"/data/hot/f{i:06d}") for i in range(20, 30))]
    store = MemoryIndexStore()
    apply_in_order(NamespaceIndex(store, ["/data"]), early)
    apply_in_order(NamespaceIndex(store, ["/data"]), late)
    assert store.get_many("prod", ["/data/hot"])["/data/hot"].shards == INDEX_SHARDS
    assert store.live("prod") == in_order_state([*early, *late], "/data")
    [children] = store.children_many("prod", [("/data/hot", None)], limit=10**6)
    expected = sorted(p for p in in_order_state([*early, *late], "/data")
                      if p.startswith("/data/hot/"))
    assert [c.path for c in children if c.alive] == expected


def crowded_listing(children_num: bool) -> list[HdfsEvent]:
    """A first start's SNAPSHOT records of /data/crowded: 150 child directories of 9 files
    each, in walk order, so its children are spread over two chunks, at most 100 in one: no
    chunk gives it the child writes that shard a directory."""
    paths = [("/data", INodeType.DIRECTORY, 1), ("/data/crowded", INodeType.DIRECTORY, 150)]
    for i in range(150):
        paths.append((f"/data/crowded/c{i:03d}", INodeType.DIRECTORY, 9))
        paths += [(f"/data/crowded/c{i:03d}/f{j}", INodeType.FILE, None) for j in range(9)]
    return [HdfsEvent("prod", 50, i, EventType.SNAPSHOT, path, timestamp=T0,
                      inode_type=kind, owner="etl", group="etl", mtime=T0, atime=T0,
                      perms="0755" if kind is INodeType.DIRECTORY else "0644",
                      size=None if count is not None else 7,
                      replication=None if count is not None else 3,
                      children_num=count if children_num else None)
            for i, (path, kind, count) in enumerate(paths)]


@pytest.mark.parametrize("children_num", [True, False])
def test_a_snapshot_shards_a_crowded_directory_whose_children_span_chunks(
        children_num: bool) -> None:
    events = crowded_listing(children_num)
    chunks = [events[i:i + CHUNK_EVENTS] for i in range(0, len(events), CHUNK_EVENTS)]
    per_chunk = [sum(e.path.count("/") == 3 for e in chunk) for chunk in chunks]
    assert len(chunks) == 2 and max(per_chunk) <= index_view.SHARD_AFTER_WRITES
    store = MemoryIndexStore()
    apply_in_order(NamespaceIndex(store, ["/data"]), events, chunk=CHUNK_EVENTS)
    assert store.live("prod") == in_order_state(events, "/data")
    crowded = store.get_many("prod", ["/data/crowded"])["/data/crowded"]
    own = store.partitions.get(names.index_partition("prod", "/data/crowded"), {})
    if children_num:  # from its own record on, as the image job writes it
        assert crowded.shards == INDEX_SHARDS and len(own) == 0
    else:  # a record from an agent before children_num: the chunk rule alone, as before
        assert crowded.shards == 0 and len(own) == 150
    # A directory of no more than SHARD_AFTER_WRITES children keeps its one partition.
    assert store.get_many("prod", ["/data/crowded/c000"])["/data/crowded/c000"].shards == 0


@pytest.mark.parametrize("subtree_budget", [500, 2])  # 2: the walks go on from the table
def test_no_older_copy_outlives_the_delete_marker_that_hides_it(subtree_budget: int) -> None:
    """A child written before its directory was sharded, written again after (its shard), then
    deleted: the marker hides the copy in the directory's own partition only until DynamoDB's
    TTL removes the marker (30 days), so the write that leaves a copy behind removes it."""
    early = hot_directory(50)
    late = [*(mkfile(1000 + i, f"/data/hot/g{i:04d}") for i in range(300)),
            *(ev(2000 + i, EventType.CLOSE, f"/data/hot/f{i:06d}", size=i) for i in range(20)),
            *(ev(3000 + i, EventType.UNLINK, f"/data/hot/f{i:06d}") for i in range(10, 30))]
    gone = [ev(4000, EventType.RENAME, "/data/hot", dst_path="/data/moved"),
            ev(4001, EventType.UNLINK, "/data/moved/g0001")]
    store = MemoryIndexStore()
    for events in (early, late, gone):
        apply_in_order(NamespaceIndex(store, ["/data"], subtree_budget=subtree_budget), events)
    store.expire_delete_markers()
    assert store.live("prod") == in_order_state([*early, *late, *gone], "/data")
    names_by_path: dict[str, int] = {}
    for part in store.partitions.values():
        for entry in part.values():
            names_by_path[entry.path] = names_by_path.get(entry.path, 0) + 1
    assert [p for p, n in names_by_path.items() if n > 1] == []


@pytest.mark.parametrize("subtree_budget", [500, 2])  # 2: the walks go on from the table
def test_a_rename_and_a_delete_of_a_sharded_directory_take_every_child(
        subtree_budget: int) -> None:
    before = [*hot_directory(400), mkdir(900, "/data/hot/sub"),
              *(mkfile(901 + i, f"/data/hot/sub/s{i}") for i in range(3))]
    renamed = [ev(1000, EventType.RENAME, "/data/hot", dst_path="/data/moved")]
    deleted = [ev(1001, EventType.UNLINK, "/data/moved")]
    store = MemoryIndexStore()
    apply_in_order(NamespaceIndex(store, ["/data"], subtree_budget=subtree_budget), before)
    assert store.get_many("prod", ["/data/hot"])["/data/hot"].shards == INDEX_SHARDS
    apply_in_order(NamespaceIndex(store, ["/data"], subtree_budget=subtree_budget), renamed)
    moved = store.live("prod")
    assert moved == in_order_state([*before, *renamed], "/data")
    assert len([p for p in moved if p.startswith("/data/moved/")]) == 404
    apply_in_order(NamespaceIndex(store, ["/data"], subtree_budget=subtree_budget), deleted)
    assert store.live("prod") == in_order_state([*before, *renamed, *deleted], "/data") == {
        "/data": moved["/data"]}



def test_index_ls_pages_a_sharded_directory_in_name_order(ddb: Any) -> None:
    later = [ev(5000, EventType.UNLINK, "/data/hot/f000007"),
             ev(5001, EventType.CLOSE, "/data/hot/f000008", size=8)]
    events = [*hot_directory(250), *later]
    apply_in_order(NamespaceIndex(DynamoIndexStore(TABLE), ["/data"]), events[:-2])
    apply_in_order(NamespaceIndex(DynamoIndexStore(TABLE), ["/data"]), later)
    reader = IndexReader(TABLE, "prod", ddb)
    assert reader.stat("/data/hot").type == "DIRECTORY"
    assert ddb.get_item(TableName=TABLE, Key={
        names.INDEX_PK: {"S": "prod#/data"}, names.INDEX_SK: {"S": "hot"}})["Item"]["shards"]
    pages, after = [], None
    while True:
        page, after = reader.ls_page("/data/hot", after=after, limit=100)
        pages.append(page)
        if after is None:
            break
    listed = [e.path for page in pages for e in page]
    expected = sorted(p for p in in_order_state(events, "/data") if p.startswith("/data/hot/"))
    assert listed == expected and len(listed) == 249  # the delete marker left out
    assert len(pages) > 2 and all(len(p) <= 100 for p in pages)
    assert reader.stat("/data/hot/f000008").size == 8
    assert reader.stat("/data/hot/f000007").deleted
    assert [e.path for e in reader.ls("/data/hot")] == expected
    assert live(ddb) == in_order_state(events, "/data")


def test_the_table_holds_no_path_twice_once_its_copies_were_written_again(ddb: Any) -> None:
    """DynamoDB's side of the twin rule: each early child written again after the sharding
    (updated, deleted, or moved by the rename's walk) keeps one item, not two."""
    early = hot_directory(50)
    late = [*(mkfile(1000 + i, f"/data/hot/g{i:04d}") for i in range(150)),
            *(ev(2000 + i, EventType.CLOSE, f"/data/hot/f{i:06d}", size=i) for i in range(20)),
            *(ev(3000 + i, EventType.UNLINK, f"/data/hot/f{i:06d}") for i in range(20, 30))]
    moved = [ev(4000, EventType.RENAME, "/data/hot", dst_path="/data/moved")]
    for events in (early, late, moved):
        apply_in_order(NamespaceIndex(DynamoIndexStore(TABLE), ["/data"]), events)
    items = [item for page in ddb.get_paginator("scan").paginate(TableName=TABLE)
             for item in page["Items"] if "path" in item]
    paths = [item["path"]["S"] for item in items]
    assert len(paths) > 200 and len(paths) == len(set(paths))
