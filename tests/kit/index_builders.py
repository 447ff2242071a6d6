"""Building index inputs by hand (single events, a history, a subtree to walk), applying them
as the sequencer does (in order, a chunk at a time, every walk finished before what follows),
and reading the table back as a user sees it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hdfs_events.dynamodb_json import from_wire
from hdfs_events.event import EventType, HdfsEvent, INodeType
from lambdas.ingest.index import NamespaceIndex, SkippedEvent
from lambdas.ingest.index_model import Entry
from lambdas.ingest.index_table import item_to_entry

T0 = 1_700_000_000_000  # NameNode time of txid 0 in these histories


def ev(txid: int, type_: EventType, path: str, **kw) -> HdfsEvent:
    return HdfsEvent(cluster="prod", txid=txid, index=0, type=type_, path=path,
                     timestamp=T0 + txid, **kw)


def mkdir(txid: int, path: str) -> HdfsEvent:
    return ev(txid, EventType.CREATE, path, inode_type=INodeType.DIRECTORY, ctime=txid,
              owner="etl", group="etl", perms="0755")


def mkfile(txid: int, path: str) -> HdfsEvent:
    return ev(txid, EventType.CREATE, path, inode_type=INodeType.FILE, ctime=txid,
              owner="etl", group="etl", perms="0644", replication=3)


# Files in the directory `tree()` walks: more than a chunk lists at the tests' small listing
# budgets, so a walk of it goes on from the table, a page of children at a time.
TREE_FILES = 30


class EventLog:
    """A cluster's history built one txid at a time, as the NameNode logs it."""

    def __init__(self) -> None:
        self.txid, self.events = 1000, []

    def add(self, type_: EventType, path: str, **kw) -> None:
        self.txid += 1
        self.events.append(HdfsEvent(cluster="prod", txid=self.txid, index=0, type=type_,
                                     path=path, timestamp=T0 + self.txid, **kw))

    def mkdir(self, path: str) -> None:
        self.add(EventType.CREATE, path, inode_type=INodeType.DIRECTORY, ctime=T0,
                 owner="etl", group="etl", perms="0755")

    def file(self, path: str, size: int) -> None:
        self.add(EventType.CREATE, path, inode_type=INodeType.FILE, ctime=T0, owner="etl",
                 group="etl", perms="0644", replication=3)
        self.add(EventType.CLOSE, path, size=size)


def tree() -> EventLog:
    """/data/d holding TREE_FILES files and a directory of 5 more: a subtree to walk."""
    log = EventLog()
    log.mkdir("/data")
    log.mkdir("/data/d")
    for i in range(TREE_FILES):
        log.file(f"/data/d/f{i:02d}", 100 + i)
    log.mkdir("/data/d/sub")
    for i in range(5):
        log.file(f"/data/d/sub/g{i}", 200 + i)
    return log


def apply_in_order(index: NamespaceIndex, events: Sequence[HdfsEvent],
                   chunk: int = 1000) -> list[SkippedEvent]:
    """What applying one range does, without the sequencer's bookkeeping."""
    skipped: list[SkippedEvent] = []
    done = 0
    while done < len(events):
        applied = index.apply_until_walk(events[done:done + chunk])
        done += applied.taken
        skipped += applied.skipped
        walk = applied.walk
        while walk is not None:
            walk, refused = index.resume(walk)
            skipped += refused
    return skipped


def live(ddb: Any, table: str = "hdfs-events-index") -> dict[str, dict]:
    """What a user sees in the index table: path -> attributes of every live entry (the
    sequencer's items beside the entries left out)."""
    pages = ddb.get_paginator("scan").paginate(TableName=table)
    entries = [item_to_entry(from_wire(i)) for page in pages for i in page["Items"]
               if "!" not in i["parent"]["S"].partition("#")[0]]
    newest: dict[str, Entry] = {}
    for e in entries:  # a sharded directory's child may have an item in two partitions
        if e.path not in newest or newest[e.path].version < e.version:
            newest[e.path] = e
    return {e.path: dict(e.attrs) for e in newest.values() if e.alive}
