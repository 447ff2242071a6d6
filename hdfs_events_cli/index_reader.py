"""Reads the DynamoDB namespace index (written by the consumer Lambda): `ls` and `stat`.

The item format is hdfs_events/index_item.py. A directory listing is one Query, or one per
partition of a sharded (hot) directory, merged by name and paged. Deleted entries
stay as delete markers until DynamoDB expires them; readers skip them unless asked. A directory
whose RENAME or UNLINK is still being applied (large subtrees take several invocations) carries
a `subtree_op` marker; the reader reports it on every path under it, so a caller knows the view
is moving.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import boto3

from hdfs_events import dynamodb_json, index_item, names
from hdfs_events.index_item import IndexItem, wire_name, wire_version


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
    item = IndexItem.from_item(dynamodb_json.from_wire(raw))
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


LS_PAGE = 1000  # entries per `ls` page (a Query page's 1 MB holds ~4,600 index items)


class IndexReader:
    def __init__(self, table: str, cluster: str, dynamodb: Any | None = None) -> None:
        self.table, self.cluster = table, cluster
        self.ddb = dynamodb or boto3.client("dynamodb")

    def _newest(self, paths: list[str]) -> dict[str, dict[str, Any]]:
        """The item of each path (wire format) that exists: both keys an entry may have are
        asked in one BatchGetItem page (index_item.wire_keys), the later write kept."""
        keys = [k for p in paths for k in index_item.wire_keys(self.cluster, p)]
        found: dict[str, dict[str, Any]] = {}
        for start in range(0, len(keys), 100):  # BatchGetItem takes at most 100 keys
            request = {self.table: {"Keys": keys[start:start + 100], "ConsistentRead": True}}
            while request:
                response = self.ddb.batch_get_item(RequestItems=request)
                for raw in response.get("Responses", {}).get(self.table, []):
                    path = raw[index_item.PATH]["S"]
                    if path not in found or wire_version(found[path]) < wire_version(raw):
                        found[path] = raw
                request = response.get("UnprocessedKeys") or {}
        return found

    def _in_progress(self, path: str) -> tuple[dict[str, Any], ...]:
        found = self._newest(_ancestors(path))
        return tuple(index_item.plain(dynamodb_json.from_wire(raw)[index_item.SUBTREE_OP])
                     for p in _ancestors(path)
                     if (raw := found.get(p)) is not None and index_item.SUBTREE_OP in raw)

    def stat(self, path: str) -> IndexEntry | None:
        """The entry at `path` (a delete marker too), or None if the index never saw it."""
        raw = self._newest([_normal(path)]).get(_normal(path))
        if raw is None:
            return None
        entry = entry_from_item(raw)
        ops = self._in_progress(entry.path)
        return entry if not ops else _with_progress(entry, ops)

    def ls(self, path: str, *, include_deleted: bool = False) -> list[IndexEntry]:
        entries, after = [], None
        while True:
            page, after = self.ls_page(path, after=after, include_deleted=include_deleted)
            entries += page
            if after is None:
                return entries

    def ls_page(self, path: str, *, after: str | None = None, limit: int = LS_PAGE,
                include_deleted: bool = False) -> tuple[list[IndexEntry], str | None]:
        """Up to `limit` children after the name `after`, by name, and the page token for the
        next page (None: none). Every partition of the directory (index_item.child_partitions)
        is sorted by name, so the last name returned is each one's position: the token is it.
        Each partition is read index_item.partition_page names at a time; the page ends where
        the first of them that holds more ends."""
        path = _normal(path)
        ops = self._in_progress(path)
        own = self._newest([path]).get(path) if path != "/" else None
        shards = int(own[index_item.SHARDS]["N"]) if own and index_item.SHARDS in own else 0
        each = index_item.partition_page(limit, shards)
        reads = [self._partition(pk, after, each)
                 for pk in index_item.child_partitions(self.cluster, path, shards)]
        cut = min((wire_name(r[-1]) for r in reads if len(r) >= each), default=None)
        merged = list(itertools.islice(index_item.newest_by_name(
            ([raw for raw in r if cut is None or wire_name(raw) <= cut] for r in reads),
            wire_name, wire_version), limit))
        more = cut is not None or len(merged) == limit
        token = wire_name(merged[-1]) if more and merged else None
        entries = [entry_from_item(raw) for raw in merged]
        return ([_with_progress(e, ops) if ops else e
                 for e in entries if include_deleted or not e.deleted], token)

    def _partition(self, partition: str, after: str | None, limit: int) -> list[dict[str, Any]]:
        condition, values = "#pk = :pk", {":pk": {"S": partition}}
        attr_names = {"#pk": names.INDEX_PK}
        if after is not None:
            condition += " AND #sk > :after"
            values[":after"] = {"S": after}
            attr_names["#sk"] = names.INDEX_SK
        pages = self.ddb.get_paginator("query").paginate(
            TableName=self.table, KeyConditionExpression=condition,
            ExpressionAttributeNames=attr_names, ExpressionAttributeValues=values,
            PaginationConfig={"MaxItems": limit, "PageSize": limit})
        return [raw for page in pages for raw in page.get("Items", [])]


def _normal(path: str) -> str:
    if not path.startswith("/"):
        raise ValueError(f"{path!r} is not an absolute HDFS path")
    return path.rstrip("/") or "/"


def _with_progress(entry: IndexEntry, ops: tuple[dict[str, Any], ...]) -> IndexEntry:
    from dataclasses import replace
    return replace(entry, in_progress=ops)
