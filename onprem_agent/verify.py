"""The consistency check (the S3mper idea): list HDFS through the client, compare it with the
DynamoDB namespace index, report the drift, and alert above a threshold.

Compared per path under the prefix: present on both sides, entry type, and for files the size
and modification time. Directory mtimes are not compared: HDFS moves a directory's mtime when a
child changes, and inotify reports no event for the directory itself. The report carries the
highest txid the compared index entries had reached, so a difference can be read against it:
an entry changed in HDFS after that txid is in flight, not lost.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from hdfs_events import names
from hdfs_events.event import INodeType
from onprem_agent.live.snapshot import NamespaceEntry, NamespaceLister, walk


@dataclass(frozen=True, slots=True)
class IndexedEntry:
    path: str
    type: str | None  # FILE, DIRECTORY, SYMLINK
    size: int | None = None
    mtime: int | None = None
    last_txid: int | None = None


class IndexReader(Protocol):
    def children(self, cluster: str, parent: str) -> Sequence[IndexedEntry]:
        """Live entries whose parent directory is `parent` (delete markers left out)."""
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
    prefix: str
    hdfs_entries: int
    index_entries: int
    index_txid: int | None
    drifts: tuple[Drift, ...] = field(default=())

    @property
    def count(self) -> int:
        return len(self.drifts)

    def lines(self) -> list[str]:
        head = (f"verify {self.prefix}: {self.hdfs_entries} entries in HDFS, "
                f"{self.index_entries} in the index (index reached txid {self.index_txid}); "
                f"{self.count} differ")
        return [head, *(d.line() for d in self.drifts)]


def index_walk(reader: IndexReader, cluster: str, prefix: str) -> list[IndexedEntry]:
    out: list[IndexedEntry] = []
    root = reader.entry(cluster, prefix) if prefix != "/" else None
    if root is not None:
        out.append(root)
    todo = [prefix] if prefix == "/" or (root is not None and root.type == "DIRECTORY") else []
    while todo:
        parent = todo.pop()
        for child in reader.children(cluster, parent):
            out.append(child)
            if child.type == "DIRECTORY":
                todo.append(child.path)
    return out


def compare(prefix: str, hdfs: Iterable[NamespaceEntry], index: Iterable[IndexedEntry]
            ) -> DriftReport:
    listed = {e.path: e for e in hdfs}
    indexed = {e.path: e for e in index}
    txids = [e.last_txid for e in indexed.values() if e.last_txid is not None]
    reached = max(txids) if txids else None
    drifts: list[Drift] = []
    for path in sorted(listed.keys() | indexed.keys()):
        h, i = listed.get(path), indexed.get(path)
        if i is None:
            drifts.append(Drift("missing", path, index_txid=reached))
            continue
        if h is None:
            drifts.append(Drift("extra", path, index_txid=i.last_txid))
            continue
        if str(h.inode_type) != i.type:
            drifts.append(Drift("type", path, str(h.inode_type), i.type, i.last_txid))
            continue
        if h.inode_type is INodeType.FILE:
            if i.size is not None and h.size != i.size:
                drifts.append(Drift("size", path, h.size, i.size, i.last_txid))
            if i.mtime is not None and h.mtime != i.mtime:
                drifts.append(Drift("mtime", path, h.mtime, i.mtime, i.last_txid))
    return DriftReport(prefix, len(listed), len(indexed), reached, tuple(drifts))


def verify_prefix(cluster: str, prefix: str, lister: NamespaceLister, reader: IndexReader, *,
                  workers: int = 8) -> DriftReport:
    hdfs = walk(lister, [prefix], workers=workers)
    return compare(prefix, hdfs, index_walk(reader, cluster, prefix))


class DynamoIndexReader:
    """The namespace index table: partition names.index_partition(cluster, parent), sort key
    the entry name; attributes type, size, mtime, last_txid; delete markers carry `deleted`
    (and a TTL in names.TTL_ATTRIBUTE) and are not live entries."""

    def __init__(self, table: str, client: Any = None) -> None:
        if client is None:
            import boto3

            client = boto3.client("dynamodb")
        self.table, self._client = table, client

    def children(self, cluster: str, parent: str) -> list[IndexedEntry]:
        out: list[IndexedEntry] = []
        paginator = self._client.get_paginator("query")
        pages = paginator.paginate(
            TableName=self.table, KeyConditionExpression="#pk = :pk",
            ExpressionAttributeNames={"#pk": names.INDEX_PK},
            ExpressionAttributeValues={":pk": {"S": names.index_partition(cluster, parent)}},
            ConsistentRead=True)
        for page in pages:
            for item in page["Items"]:
                entry = _indexed(parent, item)
                if entry is not None:
                    out.append(entry)
        return out

    def entry(self, cluster: str, path: str) -> IndexedEntry | None:
        parent, name = names.split_path(path)
        item = self._client.get_item(
            TableName=self.table, ConsistentRead=True,
            Key={names.INDEX_PK: {"S": names.index_partition(cluster, parent)},
                 names.INDEX_SK: {"S": name}}).get("Item")
        return _indexed(parent, item) if item else None


def _indexed(parent: str, item: dict[str, Any]) -> IndexedEntry | None:
    if item.get("deleted", {}).get("BOOL"):
        return None
    name = item[names.INDEX_SK]["S"]

    def number(key: str) -> int | None:
        value = item.get(key, {}).get("N")
        return None if value is None else int(value)

    path = f"/{name}" if parent == "/" else f"{parent}/{name}"
    return IndexedEntry(path=path, type=item.get("type", {}).get("S"), size=number("size"),
                        mtime=number("mtime"), last_txid=number("last_txid"))
