"""Reorderings the property tests found, kept as named cases (index logic on a dict store)."""

from __future__ import annotations

from bench.namespace_replay import in_order_state
from hdfs_events.event import EventType, HdfsEvent, INodeType, MetadataType
from lambdas.ingest.index import NamespaceIndex
from tests.unit.ingest.memory_store import MemoryIndexStore


def ev(txid: int, type_: EventType, path: str, **kw) -> HdfsEvent:
    return HdfsEvent(cluster="prod", txid=txid, index=0, type=type_, path=path,
                     timestamp=1_700_000_000_000 + txid, **kw)


def mkdir(txid: int, path: str) -> HdfsEvent:
    return ev(txid, EventType.CREATE, path, inode_type=INodeType.DIRECTORY, ctime=txid,
              owner="etl", group="etl", perms="0755")


def mkfile(txid: int, path: str) -> HdfsEvent:
    return ev(txid, EventType.CREATE, path, inode_type=INodeType.FILE, ctime=txid,
              owner="etl", group="etl", perms="0644", replication=3)


def apply_in(order: list[list[HdfsEvent]], events: list[HdfsEvent], budget: int = 100) -> None:
    """Applies the messages in `order`; subtree continuations run after all of them, as when
    the group's later messages were queued before the continuation."""
    store = MemoryIndexStore()
    index = NamespaceIndex(store, ["/data"], subtree_budget=budget)
    pending = [op for message in order for op in index.apply(message)]
    while pending:
        op = index.resume(pending.pop(0))
        if op is not None:
            pending.append(op)
    assert store.live("prod") == in_order_state(events, "/data")


def test_size_and_owner_from_two_groups_both_survive() -> None:
    create, close = mkfile(2, "/data/f"), ev(3, EventType.CLOSE, "/data/f", size=10)
    chown = ev(4, EventType.METADATA, "/data/f", metadata_type=MetadataType.OWNER,
               owner="bob")
    events = [mkdir(1, "/data"), create, close, chown]
    apply_in([[events[0]], [chown], [create], [close]], events)


def test_rename_chain_back_to_the_start_arriving_backwards() -> None:
    events = [mkdir(1, "/data"), mkdir(2, "/data/b"),
              ev(3, EventType.RENAME, "/data/b", dst_path="/data/c"),
              ev(4, EventType.RENAME, "/data/c", dst_path="/data/g"),
              ev(5, EventType.RENAME, "/data/g", dst_path="/data/b")]
    apply_in([[events[0]], [events[4]], [events[1]], [events[3]], [events[2]]], events)


def test_late_change_follows_the_file_to_where_it_was_renamed() -> None:
    events = [mkdir(1, "/data"), mkfile(2, "/data/tmp"),
              ev(3, EventType.CLOSE, "/data/tmp", size=42),
              ev(4, EventType.RENAME, "/data/tmp", dst_path="/data/final")]
    apply_in([[events[0]], [events[3]], [events[1]], [events[2]]], events)


def test_change_after_a_delete_does_not_resurrect_the_file() -> None:
    events = [mkdir(1, "/data"), mkfile(2, "/data/x"),
              ev(3, EventType.CLOSE, "/data/x", size=1), ev(4, EventType.UNLINK, "/data/x")]
    apply_in([[events[0]], [events[3]], [events[2]], [events[1]]], events)


def test_overwrite_of_a_moved_file_before_the_directory_walk_reaches_it() -> None:
    events = [mkdir(1, "/data"), mkdir(2, "/data/d"), mkfile(3, "/data/d/a"),
              ev(4, EventType.CLOSE, "/data/d/a", size=5), mkfile(5, "/data/d/b"),
              ev(6, EventType.RENAME, "/data/d", dst_path="/data/e"),
              mkfile(7, "/data/e/b"), ev(8, EventType.CLOSE, "/data/e/b", size=99)]
    apply_in([events[:6], events[6:]], events, budget=1)


def test_paths_outside_the_prefixes_are_not_indexed() -> None:
    store = MemoryIndexStore()
    NamespaceIndex(store, ["/data"]).apply([mkdir(1, "/tmp"), mkfile(2, "/tmp/x"),
                                           mkfile(3, "/database")])
    assert store.items == {}


class _RacingStore(MemoryIndexStore):
    """Another invocation writes the entry between our read and our first write."""

    def __init__(self) -> None:
        super().__init__()
        self.raced = False

    def put(self, entry, *, expected_rev: int) -> bool:
        if not self.raced and expected_rev > 0:
            self.raced = True
            key = self.key(entry.cluster, entry.path)
            from dataclasses import replace
            self.items[key] = replace(self.items[key], rev=self.items[key].rev + 1)
        return super().put(entry, expected_rev=expected_rev)


def test_concurrent_write_makes_the_message_apply_again_from_fresh_reads() -> None:
    store = _RacingStore()
    index = NamespaceIndex(store, ["/data"])
    events = [mkdir(1, "/data"), mkfile(2, "/data/f"), ev(3, EventType.CLOSE, "/data/f", size=8)]
    index.apply(events[:2])
    index.apply(events[2:])
    assert store.raced
    assert store.live("prod") == in_order_state(events, "/data")


def test_redelivered_directory_delete_resumes_where_it_first_applied() -> None:
    """The first delivery deleted /data/h/c (walk unfinished) and moved /data/h; its
    continuations were never sent. The redelivery must restart the walk at /data/h/c, not
    treat the delete as a late event under the moved /data/x."""
    events = [mkdir(1, "/data"), mkdir(2, "/data/h"), mkdir(3, "/data/h/c"),
              mkfile(4, "/data/h/c/a"), mkfile(5, "/data/h/c/b"), mkdir(6, "/data/h/c/d"),
              mkfile(7, "/data/h/c/d/e"),
              ev(8, EventType.UNLINK, "/data/h/c"),
              ev(9, EventType.RENAME, "/data/h", dst_path="/data/x")]
    store = MemoryIndexStore()
    index = NamespaceIndex(store, ["/data"], subtree_budget=1)
    index.apply(events[:7])
    index.apply(events[7:])  # continuations lost: the record failed after this
    pending = index.apply(events[7:])  # SQS delivers it again
    while pending:
        op = index.resume(pending.pop(0))
        if op is not None:
            pending.append(op)
    assert store.live("prod") == in_order_state(events, "/data")
