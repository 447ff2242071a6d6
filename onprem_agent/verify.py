"""The consistency check (the S3mper idea): list HDFS through the client, compare it with the
DynamoDB namespace index, report the drift, and alert above a threshold.

Compared per path under the prefix: present on both sides, entry type, and for files the size
and modification time. Both sides are read as streams (verify_prefix), so a namespace of any
size is checked in bounded memory. Directory mtimes are not compared: HDFS moves a directory's mtime when a
child changes, and inotify reports no event for the directory itself. The report carries the
highest txid the compared index entries had reached, so a difference can be read against it:
an entry changed in HDFS after that txid is in flight, not lost.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from hdfs_events import index_item, names
from hdfs_events.event import INodeType
from onprem_agent.live.snapshot import NamespaceEntry, NamespaceLister, walk


@dataclass(frozen=True, slots=True)
class IndexedEntry:
    path: str
    type: str | None  # FILE, DIRECTORY, SYMLINK
    size: int | None = None
    mtime: int | None = None
    last_txid: int | None = None
    shards: int = 0  # a directory's children's shard partitions (hdfs_events/index_item.py)


class IndexReader(Protocol):
    def children(self, cluster: str, parent: str) -> Iterable[IndexedEntry]:
        """Live entries whose parent directory is `parent` (delete markers left out), in the
        order of their names' UTF-8 bytes (a DynamoDB Query's sort key order), read lazily."""
        ...

    def entry(self, cluster: str, path: str) -> IndexedEntry | None: ...


@dataclass(frozen=True, slots=True)
class Drift:
    kind: str  # missing | extra | type | size | mtime
    path: str
    hdfs: Any = None
    index: Any = None
    index_txid: int | None = None

    def line(self) -> str:
        txid = f" (index at txid {self.index_txid})" if self.index_txid is not None else ""
        if self.kind == "missing":
            return f"MISSING in index: {self.path}"
        if self.kind == "extra":
            return f"EXTRA in index (not in HDFS): {self.path}{txid}"
        return f"{self.kind.upper()} differs: {self.path}: hdfs={self.hdfs} index={self.index}{txid}"


@dataclass(frozen=True, slots=True)
class DriftReport:
    """One prefix's comparison: `count` drifts in all, the first `KEPT_DRIFTS` of them in
    `drifts` (every one goes to verify_prefix's `on_drift` as it is found)."""

    prefix: str
    hdfs_entries: int
    index_entries: int
    index_txid: int | None
    drifts: tuple[Drift, ...] = field(default=())
    count: int = 0

    def lines(self) -> list[str]:
        head = (f"verify {self.prefix}: {self.hdfs_entries} entries in HDFS, "
                f"{self.index_entries} in the index (index reached txid {self.index_txid}); "
                f"{self.count} differ")
        return [head, *(d.line() for d in self.drifts)]


KEPT_DRIFTS = 10_000  # drifts a report holds; a namespace may differ in millions of paths


class _Comparison:
    """The running counts and the drift found so far (bounded: see DriftReport)."""

    def __init__(self, prefix: str, on_drift: Callable[[Drift], None] | None,
                 keep: int) -> None:
        self.prefix, self.on_drift, self.keep = prefix, on_drift, keep
        self.hdfs_entries = self.index_entries = self.count = 0
        self.reached: int | None = None
        self.kept: list[Drift] = []

    def seen(self, i: IndexedEntry) -> None:
        self.index_entries += 1
        if i.last_txid is not None and (self.reached is None or i.last_txid > self.reached):
            self.reached = i.last_txid

    def drift(self, d: Drift) -> None:
        self.count += 1
        if len(self.kept) < self.keep:
            self.kept.append(d)
        if self.on_drift is not None:
            self.on_drift(d)

    def pair(self, h: NamespaceEntry | None, i: IndexedEntry | None) -> None:
        """One path on either side or both (the index entry already counted)."""
        if h is None:
            assert i is not None
            self.drift(Drift("extra", i.path, index_txid=i.last_txid))
        elif i is None:
            # The highest txid the index entries compared so far had reached.
            self.drift(Drift("missing", h.path, index_txid=self.reached))
        elif str(h.inode_type) != i.type:
            self.drift(Drift("type", h.path, str(h.inode_type), i.type, i.last_txid))
        elif h.inode_type is INodeType.FILE:
            if i.size is not None and h.size != i.size:
                self.drift(Drift("size", h.path, h.size, i.size, i.last_txid))
            if i.mtime is not None and h.mtime != i.mtime:
                self.drift(Drift("mtime", h.path, h.mtime, i.mtime, i.last_txid))

    def report(self) -> DriftReport:
        return DriftReport(self.prefix, self.hdfs_entries, self.index_entries, self.reached,
                           tuple(self.kept), self.count)


def _name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


class _Directory:
    """One directory of the walk, HDFS's children matched against the index's as they come.

    The two sides list children in different orders when names are not ASCII: HDFS compares
    names as signed bytes (snapshot.name_order), DynamoDB as unsigned. On ASCII names the two
    orders agree, so those are merge-joined page by page; a name with a byte of 0x80 or more is
    set aside on its side and matched when the directory ends (memory: such names of one
    directory)."""

    __slots__ = ("_index", "_next", "aside_hdfs", "aside_index", "path")

    def __init__(self, path: str, index: Iterable[IndexedEntry]) -> None:
        self.path = path
        self._index: Iterator[IndexedEntry] = iter(index)
        self._next: IndexedEntry | None = None
        self.aside_hdfs: dict[str, NamespaceEntry] = {}
        self.aside_index: dict[str, IndexedEntry] = {}

    def next_index(self, seen: Callable[[IndexedEntry], None]) -> IndexedEntry | None:
        """The next index child with an ASCII name (kept until taken)."""
        while self._next is None:
            entry = next(self._index, None)
            if entry is None:
                return None
            seen(entry)
            name = _name(entry.path)
            if name.isascii():
                self._next = entry
            else:
                self.aside_index[name] = entry
        return self._next

    def take(self) -> None:
        self._next = None


def verify_prefix(cluster: str, prefix: str, lister: NamespaceLister, reader: IndexReader, *,
                  workers: int = 8, on_drift: Callable[[Drift], None] | None = None,
                  keep: int = KEPT_DRIFTS) -> DriftReport:
    """Compares HDFS under `prefix` with the index as two streams: the HDFS walk (snapshot.py,
    page by page) and, per directory, the index's children (a Query, page by page), so memory
    is bounded by the depth and a page, not by the namespace. Drift goes to `on_drift` as it
    is found, in walk order."""
    run = _Comparison(prefix, on_drift, keep)
    stack: list[_Directory] = []

    def close(directory: _Directory) -> None:
        while (i := directory.next_index(run.seen)) is not None:
            directory.take()
            extra(i)
        for name in sorted(directory.aside_hdfs.keys() | directory.aside_index.keys()):
            h, i = directory.aside_hdfs.get(name), directory.aside_index.get(name)
            run.pair(h, i)
            if i is not None and i.type == "DIRECTORY" and (
                    h is None or h.inode_type is not INodeType.DIRECTORY):
                extra_below(i.path)

    def extra(i: IndexedEntry) -> None:
        run.pair(None, i)
        if i.type == "DIRECTORY":
            extra_below(i.path)

    def extra_below(path: str) -> None:
        """An index directory HDFS does not have as one: everything under it is extra."""
        todo = [iter(reader.children(cluster, path))]
        while todo:
            i = next(todo[-1], None)
            if i is None:
                todo.pop()
                continue
            run.seen(i)
            run.pair(None, i)
            if i.type == "DIRECTORY":
                todo.append(iter(reader.children(cluster, i.path)))

    def enter(path: str) -> None:
        stack.append(_Directory(path, reader.children(cluster, path)))

    root_index = reader.entry(cluster, prefix) if prefix != "/" else None
    if root_index is not None:
        run.seen(root_index)
    root_listed = prefix == "/"
    if prefix == "/":
        enter("/")
    for h in walk(lister, [prefix], workers=workers):
        run.hdfs_entries += 1
        if h.path == prefix:
            root_listed = True
            run.pair(h, root_index)
            if root_index is not None and root_index.type == "DIRECTORY" and \
                    h.inode_type is not INodeType.DIRECTORY:
                extra_below(prefix)
            if h.inode_type is INodeType.DIRECTORY:
                enter(prefix)
            continue
        parent = h.path.rsplit("/", 1)[0] or "/"
        while stack[-1].path != parent:
            close(stack.pop())
        directory, name = stack[-1], h.name
        if not name.isascii():
            directory.aside_hdfs[name] = h
        else:
            while (i := directory.next_index(run.seen)) is not None and _name(i.path) < name:
                directory.take()
                extra(i)
            if i is not None and _name(i.path) == name:
                directory.take()
                run.pair(h, i)
                if i.type == "DIRECTORY" and h.inode_type is not INodeType.DIRECTORY:
                    extra_below(i.path)
            else:
                run.pair(h, None)
        if h.inode_type is INodeType.DIRECTORY:
            enter(h.path)
    while stack:
        close(stack.pop())
    if not root_listed and root_index is not None:
        extra(root_index)
    return run.report()


# What verify compares, and no more: a page of whole items (a dozen attributes each) parses into
# dicts too large for Python's small-object allocator, and a 1 MB Query page of them left the
# process's malloc heap growing page after page (measured: issue #30's verify at 300k files).
_PROJECTED_NAMES = {"#pk": names.INDEX_PK, "#sk": names.INDEX_SK, "#type": "type",
                    "#size": "size", "#mtime": "mtime", "#txid": "last_txid",
                    "#deleted": "deleted", "#index": "last_index", "#shards": "shards"}
_PROJECTION = "#sk, #type, #size, #mtime, #txid, #deleted, #index, #shards"
# Entries per Query page: as many as the HDFS side's page (dfs.ls.limit, 1000 by default), so
# both sides of a large directory are held a page each; DynamoDB's own cap (1 MB read) is ~4,600
# index items. A Query is billed by the data read, not the calls, so smaller pages cost nothing.
QUERY_PAGE_ITEMS = 1000


class DynamoIndexReader:
    """The namespace index table: partition names.index_partition(cluster, parent), sort key
    the entry name; attributes type, size, mtime, last_txid; delete markers carry `deleted`
    (and a TTL in names.TTL_ATTRIBUTE) and are not live entries."""

    def __init__(self, table: str, client: Any = None) -> None:
        if client is None:
            import boto3

            client = boto3.client("dynamodb")
        self.table, self._client = table, client
        self._sharded: dict[tuple[str, str], int] = {}

    def children(self, cluster: str, parent: str) -> Iterator[IndexedEntry]:
        """A sharded directory's partitions (index_item.child_partitions) are read side by
        side, a page of each held at a time, merged by name. The walk lists a directory
        after it met its entry (in a listing or by `entry`), which said if it is."""
        shards = self._sharded.get((cluster, parent), 0)
        streams = [self._partition(pk)
                   for pk in index_item.child_partitions(cluster, parent, shards)]
        for item in index_item.newest_by_name(streams, index_item.wire_name,
                                                index_item.wire_version):
            entry = self._seen(cluster, _indexed(parent, item))
            if entry is not None:
                yield entry

    def _seen(self, cluster: str, entry: IndexedEntry | None) -> IndexedEntry | None:
        if entry is not None and entry.shards:
            self._sharded[(cluster, entry.path)] = entry.shards  # hot directories only: few
        return entry

    def _partition(self, partition: str) -> Iterator[dict[str, Any]]:
        pages = self._client.get_paginator("query").paginate(
            TableName=self.table, KeyConditionExpression="#pk = :pk",
            ProjectionExpression=_PROJECTION, ExpressionAttributeNames=_PROJECTED_NAMES,
            ExpressionAttributeValues={":pk": {"S": partition}},
            ConsistentRead=True, PaginationConfig={"PageSize": QUERY_PAGE_ITEMS})
        for page in pages:  # read as the walk goes
            yield from page["Items"]

    def _item(self, cluster: str, path: str) -> dict[str, Any] | None:
        """The later of the two items a path may have (GetItem each: the agent's grant)."""
        got = [item for key in index_item.wire_keys(cluster, path)
               if (item := self._client.get_item(TableName=self.table, ConsistentRead=True,
                                                 Key=key).get("Item")) is not None]
        return max(got, key=index_item.wire_version, default=None)

    def entry(self, cluster: str, path: str) -> IndexedEntry | None:
        item = self._item(cluster, path)
        return self._seen(cluster, _indexed(names.split_path(path)[0], item)) if item else None


def _indexed(parent: str, item: dict[str, Any]) -> IndexedEntry | None:
    if item.get("deleted", {}).get("BOOL"):
        return None
    name = item[names.INDEX_SK]["S"]

    def number(key: str) -> int | None:
        value = item.get(key, {}).get("N")
        return None if value is None else int(value)

    path = f"/{name}" if parent == "/" else f"{parent}/{name}"
    return IndexedEntry(path=path, type=item.get("type", {}).get("S"), size=number("size"),
                        mtime=number("mtime"), last_txid=number("last_txid"),
                        shards=number(index_item.SHARDS) or 0)
