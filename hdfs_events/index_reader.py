"""Reads the DynamoDB namespace index (written by the consumer Lambda): `ls` and `stat`.

An item's partition key is "<cluster>#<parent dir>" and its sort key the entry's name, so a
directory listing is one Query. Deleted entries stay as delete markers (`deleted`, with a TTL)
until DynamoDB expires them; readers skip them unless asked. A directory whose RENAME or UNLINK
is still being applied (large subtrees take several invocations) carries a `subtree_op`
marker; the reader reports it on every path under it, so a caller knows the view is moving.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import boto3
from boto3.dynamodb.types import TypeDeserializer

from hdfs_events import names

_de = TypeDeserializer()


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


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def entry_from_item(raw: dict[str, Any]) -> IndexEntry:
    item = {k: _plain(_de.deserialize(v)) for k, v in raw.items()}
    return IndexEntry(
        path=item["path"], name=item[names.INDEX_SK], type=item.get("type"),
        size=item.get("size"), mtime=item.get("mtime"), atime=item.get("atime"),
        owner=item.get("owner"), group=item.get("group"), perms=item.get("perms"),
        replication=item.get("replication"), symlink_target=item.get("symlink_target"),
        deleted=bool(item.get("deleted")), moved_to=item.get("moved_to"),
        last_txid=item.get("last_txid", -1), last_index=item.get("last_index", -1),
    )


def _ancestors(path: str) -> list[str]:
    parts = [p for p in path.split("/") if p]
    return ["/"] + ["/" + "/".join(parts[:i]) for i in range(1, len(parts) + 1)]


class IndexReader:
    def __init__(self, table: str, cluster: str, dynamodb: Any | None = None) -> None:
        self.table, self.cluster = table, cluster
        self.ddb = dynamodb or boto3.client("dynamodb")

    def _key(self, path: str) -> dict[str, Any]:
        parent, name = names.split_path(path)
        return {names.INDEX_PK: {"S": names.index_partition(self.cluster, parent)},
                names.INDEX_SK: {"S": name}}

    def _in_progress(self, path: str) -> tuple[dict[str, Any], ...]:
        ops = []
        for p in _ancestors(path):
            raw = self.ddb.get_item(TableName=self.table, Key=self._key(p),
                                    ProjectionExpression="subtree_op").get("Item")
            if raw and "subtree_op" in raw:
                ops.append(_plain(_de.deserialize(raw["subtree_op"])))
        return tuple(ops)

    def stat(self, path: str) -> IndexEntry | None:
        """The entry at `path` (a delete marker too), or None if the index never saw it."""
        raw = self.ddb.get_item(TableName=self.table, Key=self._key(_normal(path)),
                                ConsistentRead=True).get("Item")
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
