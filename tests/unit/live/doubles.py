"""A NameNode double behind the real Hadoop types: it hands out real Java EventBatch objects and
raises Hadoop's real MissingEventsException, as DFSInotifyEventInputStream does.

The stream double follows DFSInotifyEventInputStream's contract: poll() and poll(time, unit)
return the next EventBatch after the last one read or null; when the NameNode no longer holds
the next txid (purged edits), poll raises MissingEventsException(expected, actual);
getTxidsBehindEstimate() is the NameNode's last txid minus the last txid read.
"""

from __future__ import annotations

import threading
from bisect import bisect_right
from collections.abc import Callable, Sequence
from typing import Any

import jpype

from hdfs_events.event import INodeType
from hdfs_events.snapshot_index import name_order
from onprem_agent.live.snapshot import ListingPage, NamespaceEntry
from onprem_agent.live.stream import StreamSource
from onprem_agent.verify import IndexedEntry
from tests.kit import java_events as je


def unlink(path: str, ts: int = 1) -> Any:
    return je.event_class("UnlinkEvent").Builder().path(path).timestamp(ts).build()


def mkdir(path: str, ts: int = 1) -> Any:
    create = je.event_class("CreateEvent")
    return (create.Builder().iNodeType(create.INodeType.DIRECTORY).path(path).ctime(ts)
            .ownerName("hdfs").groupName("supergroup").perms(je.fs_permission("0755")).build())


class NameNodeDouble:
    def __init__(self) -> None:
        self.batches: list[Any] = []  # Java EventBatch objects, txid ascending
        self.first_available = 1  # txids below were purged
        self.last_txid = 0
        self.polls: list[tuple[Any, ...]] = []
        self.opened: list[int | None] = []
        self.lock = threading.Lock()

    def log(self, *events: Any) -> int:
        """Commits one transaction with these events; returns its txid."""
        with self.lock:
            self.last_txid += 1
            if events:
                self.batches.append(je.event_batch(self.last_txid, list(events)))
            return self.last_txid

    def skip(self, n: int) -> None:
        """Transactions that yield no event (block allocations)."""
        with self.lock:
            self.last_txid += n

    def purge_before(self, txid: int) -> None:
        with self.lock:
            self.first_available = txid
            self.batches = [b for b in self.batches if b.getTxid() >= txid]

    def source(self) -> StreamSource:
        return StreamSource(open_stream=self.open_stream, current_txid=lambda: self.last_txid)

    def open_stream(self, after: int | None) -> StreamDouble:
        self.opened.append(after)
        return StreamDouble(self, self.last_txid if after is None else after)


class StreamDouble:
    def __init__(self, namenode: NameNodeDouble, last_read: int) -> None:
        self._nn, self._last_read = namenode, last_read
        self._missing = jpype.JClass("org.apache.hadoop.hdfs.inotify.MissingEventsException")

    def poll(self, *timeout: Any) -> Any:
        nn = self._nn
        nn.polls.append(timeout)
        with nn.lock:
            if self._last_read + 1 < nn.first_available:
                raise self._missing(self._last_read + 1, nn.first_available)
            for batch in nn.batches:
                if batch.getTxid() > self._last_read:
                    self._last_read = int(batch.getTxid())
                    return batch
            # Like Hadoop's stream: txids without events still move lastReadTxid.
            self._last_read = max(self._last_read, nn.last_txid)
            return None

    def getTxidsBehindEstimate(self) -> int:
        return max(0, self._nn.last_txid - self._last_read)


class ListingDouble:
    """A namespace as a dict path -> NamespaceEntry, listed like DFSClient.listPaths: a page
    of at most `page_size` children after a name, in the NameNode's order of names."""

    def __init__(self, entries: Sequence[NamespaceEntry],
                 on_list: Callable[[str], None] | None = None, page_size: int = 1000) -> None:
        self.entries = {e.path: e for e in entries}
        self.entries.setdefault("/", NamespaceEntry("/", INodeType.DIRECTORY))
        self.on_list, self.page_size = on_list, page_size
        self.listed: list[str] = []  # directories whose first page was read
        self.pages: list[tuple[str, str | None]] = []  # every page read: (path, after)
        # as of the first page's read: the children and their order keys
        self._children: dict[str, tuple[list[NamespaceEntry], list[bytes]]] = {}

    def status(self, path: str) -> NamespaceEntry | None:
        return self.entries.get(path)

    def list_page(self, path: str, after: str | None) -> ListingPage:
        self.pages.append((path, after))
        if after is None:
            self.listed.append(path)
            if self.on_list is not None:
                self.on_list(path)
        if after is None or path not in self._children:
            prefix = path.rstrip("/") + "/"
            children = sorted(
                (e for p, e in list(self.entries.items())
                 if p.startswith(prefix) and "/" not in p[len(prefix):] and p != path),
                key=lambda e: name_order(e.name))
            self._children[path] = (children, [name_order(e.name) for e in children])
        children, keys = self._children[path]
        start = 0 if after is None else bisect_right(keys, name_order(after))
        page = children[start:start + self.page_size]
        return ListingPage(page, more=start + self.page_size < len(children))


def file_entry(path: str, size: int = 10, mtime: int = 5) -> NamespaceEntry:
    return NamespaceEntry(path, INodeType.FILE, size=size, mtime=mtime, atime=mtime,
                          owner="etl", group="hadoop", perms="0644", replication=3,
                          block_size=134217728, erasure_coded=False)


def dir_entry(path: str, mtime: int = 5) -> NamespaceEntry:
    return NamespaceEntry(path, INodeType.DIRECTORY, mtime=mtime, owner="etl",
                          group="hadoop", perms="0755")


class DictIndex:
    """The namespace index as verify reads it, from a list of entries (a double of
    onprem_agent.verify.DynamoIndexReader)."""

    def __init__(self, entries: list[IndexedEntry]) -> None:
        self.entries = {e.path: e for e in entries}

    def entry(self, cluster: str, path: str) -> IndexedEntry | None:
        return self.entries.get(path)

    def children(self, cluster: str, parent: str) -> list[IndexedEntry]:
        """In DynamoDB's order of the sort key (the name's UTF-8 bytes, unsigned)."""
        prefix = parent.rstrip("/") + "/"
        return sorted((e for p, e in self.entries.items()
                       if p.startswith(prefix) and "/" not in p[len(prefix):]),
                      key=lambda e: e.path.rsplit("/", 1)[-1].encode())


def indexed(entry: NamespaceEntry, **changes: Any) -> IndexedEntry:
    """The index entry that agrees with `entry`, changed by `changes`."""
    values = {"path": entry.path, "type": str(entry.inode_type),
              "size": entry.size if str(entry.inode_type) == "FILE" else None,
              "mtime": entry.mtime, "last_txid": 100}
    return IndexedEntry(**(values | changes))
