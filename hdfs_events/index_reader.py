"""Reads the DynamoDB namespace index (written by the consumer Lambda): `ls` and `stat`.

The item format is hdfs_events/index_item.py. A directory listing is one Query. Deleted entries
stay as delete markers until DynamoDB expires them; readers skip them unless asked. A directory
whose RENAME or UNLINK is still being applied (large subtrees take several invocations) carries
a `subtree_op` marker; the reader reports it on every path under it, so a caller knows the view
is moving.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3

from hdfs_events import index_item, names
from hdfs_events.index_item import IndexItem


@dataclass(frozen=True, slots=True)
class IndexEntry:
    path: str
    name: str
    type: str | None
    size: int | None
    mtime: int | None
    atime: int | None
    owner: str | None
    group: str | None
    perms: str | None
    replication: int | None
    symlink_target: str | None
    deleted: bool
    moved_to: str | None
    last_txid: int
    last_index: int
    in_progress: tuple[dict[str, Any], ...] = ()  # subtree operations still being applied


def entry_from_item(raw: dict[str, Any]) -> IndexEntry:
    item = IndexItem.from_item(index_item.from_wire(raw))
    a = item.attrs
    return IndexEntry(
        path=item.path, name=item.name, type=a.get("type"), size=a.get("size"),
        mtime=a.get("mtime"), atime=a.get("atime"), owner=a.get("owner"), group=a.get("group"),
        perms=a.get("perms"), replication=a.get("replication"),
        symlink_target=a.get("symlink_target"), deleted=item.deleted, moved_to=item.moved_to,
        last_txid=item.last_txid, last_index=item.last_index,
    )


def _ancestors(path: str) -> list[str]:
    parts = [p for p in path.split("/") if p]
    return ["/"] + ["/" + "/".join(parts[:i]) for i in range(1, len(parts) + 1)]


class IndexReader:
    def __init__(self, table: str, cluster: str, dynamodb: Any | None = None) -> None:
        self.table, self.cluster = table, cluster
        self.ddb = dynamodb or boto3.client("dynamodb")

    def _in_progress(self, path: str) -> tuple[dict[str, Any], ...]:
        ops = []
        for p in _ancestors(path):
            raw = self.ddb.get_item(TableName=self.table, Key=index_item.wire_key(self.cluster, p),
                                    ProjectionExpression=index_item.SUBTREE_OP).get("Item")
            if raw and index_item.SUBTREE_OP in raw:
                ops.append(index_item.plain(index_item.from_wire(raw)[index_item.SUBTREE_OP]))
        return tuple(ops)

    def stat(self, path: str) -> IndexEntry | None:
        """The entry at `path` (a delete marker too), or None if the index never saw it."""
        key = index_item.wire_key(self.cluster, _normal(path))
        raw = self.ddb.get_item(TableName=self.table, Key=key, ConsistentRead=True).get("Item")
        if raw is None:
            return None
        entry = entry_from_item(raw)
        ops = self._in_progress(entry.path)
        return entry if not ops else _with_progress(entry, ops)

    def ls(self, path: str, *, include_deleted: bool = False) -> list[IndexEntry]:
        path = _normal(path)
        ops = self._in_progress(path)
        return [_with_progress(e, ops) if ops else e
                for e in self._children(path) if include_deleted or not e.deleted]

    def _children(self, path: str) -> Iterator[IndexEntry]:
        pages = self.ddb.get_paginator("query").paginate(
            TableName=self.table, KeyConditionExpression="#pk = :pk",
            ExpressionAttributeNames={"#pk": names.INDEX_PK},
            ExpressionAttributeValues={":pk": {"S": names.index_partition(self.cluster, path)}})
        for page in pages:
            for raw in page.get("Items", []):
                yield entry_from_item(raw)


def _normal(path: str) -> str:
    if not path.startswith("/"):
        raise ValueError(f"{path!r} is not an absolute HDFS path")
    return path.rstrip("/") or "/"


def _with_progress(entry: IndexEntry, ops: tuple[dict[str, Any], ...]) -> IndexEntry:
    from dataclasses import replace
    return replace(entry, in_progress=ops)
