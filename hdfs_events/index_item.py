"""The namespace index's DynamoDB item: its key, its attributes, and an entry's encoding.

Written by the consumer Lambda (lambdas/ingest/index_table.py), read by the `index` CLI
(hdfs_events_cli/index_reader.py); defined once here so the writer and the reader cannot drift.

An item's partition key is "<cluster>#<parent dir>" and its sort key the entry's name, so a
directory listing is one Query. A hot directory's children are sharded: one partition key
takes at most 1,000 WCU/s (DynamoDB's per-partition limit), so a directory the consumer saw
receive many child writes at once records `shards` (INDEX_SHARDS) on its own item, and its
children written after go to "<cluster>#<parent dir>//<k>", k = shard_of(name). A child
written before stays where it was until it is written again, so a path may have an item in
both places: the one of the later (last_txid, last_index) is the entry (`newest_by_name`), and
the writer deletes the other copy with its next write of the path (a delete marker expires).
A point read asks both keys (`wire_keys`, one BatchGetItem); a listing of a sharded directory
queries its own partition and every shard and merges them by name (`child_partitions`).

The item holds the entry's attributes as of the last event that
changed it, that event's (txid, index) as `last_txid`/`last_index`, and `deleted` for a delete
marker (with `moved_to` when a RENAME took it, and a TTL: DynamoDB expires it later). The root
of a subtree walk still under way carries the walk as `subtree_op`.
"""

from __future__ import annotations

import heapq
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, TypeVar

from hdfs_events import names

# The event's attributes an entry keeps (HdfsEvent field names, `type` its inode type).
ENTRY_ATTRIBUTES = ("type", "size", "mtime", "atime", "owner", "group", "perms", "replication",
                    "symlink_target")
CLUSTER = "cluster"
PATH = "path"
LAST_TXID = "last_txid"
LAST_INDEX = "last_index"  # the event's position within its txid
DELETED = "deleted"
MOVED_TO = "moved_to"
SUBTREE_OP = "subtree_op"
SHARDS = "shards"  # on a directory's item: its children's shard partitions (0: none)
# A sharded directory takes 16 x 1,000 WCU/s: 10,000 creates/s with room. One count for every
# directory, so a point read knows the one shard key a name can have without reading its parent.
INDEX_SHARDS = 16
DELETE_MARKER_TTL_SECONDS = 30 * 86_400  # beyond SQS's 14-day retention plus a DLQ redrive

def shard_of(name: str, shards: int = INDEX_SHARDS) -> int:
    """Stable across processes and Python versions (str's hash() is salted per process)."""
    return zlib.crc32(name.encode()) % shards


def item_key(cluster: str, path: str, *, in_shard: bool = False) -> dict[str, str]:
    parent, name = names.split_path(path)
    partition = (names.index_shard_partition(cluster, parent, shard_of(name)) if in_shard
                 else names.index_partition(cluster, parent))
    return {names.INDEX_PK: partition, names.INDEX_SK: name}


def wire_key(cluster: str, path: str, *, in_shard: bool = False) -> dict[str, dict[str, str]]:
    """item_key in DynamoDB's wire format ({"S": ...})."""
    return {k: {"S": v} for k, v in item_key(cluster, path, in_shard=in_shard).items()}


def wire_keys(cluster: str, path: str) -> list[dict[str, dict[str, str]]]:
    """Both keys an entry may be stored under (its parent's partition, its shard of it)."""
    return [wire_key(cluster, path), wire_key(cluster, path, in_shard=True)]


def child_partitions(cluster: str, directory: str, shards: int) -> list[str]:
    """Every partition a directory's children may be stored in."""
    return [names.index_partition(cluster, directory),
            *(names.index_shard_partition(cluster, directory, k) for k in range(shards))]


def partition_page(limit: int, shards: int) -> int:
    """Names to read from each partition of a directory for a merged page of `limit`: all of
    them from an unsharded one; ~2 x limit / partitions from a sharded one's (names spread
    evenly by hash), the merge reading on only when it runs short."""
    return limit if shards == 0 else max(1, -(-2 * limit // (shards + 1)))


def wire_name(raw: Mapping[str, Any]) -> str:
    """An item's name (its sort key), from DynamoDB's wire format."""
    return str(raw[names.INDEX_SK]["S"])


def wire_version(raw: Mapping[str, Any]) -> tuple[int, int]:
    """An item's (last_txid, last_index), from DynamoDB's wire format."""
    return (int(raw.get(LAST_TXID, {}).get("N", 0)), int(raw.get(LAST_INDEX, {}).get("N", 0)))


T = TypeVar("T")


def newest_by_name(streams: Iterable[Iterable[T]], name: Callable[[T], str],
                   version: Callable[[T], tuple[int, int]]) -> Iterator[T]:
    """Partitions' entries, each stream sorted by name (DynamoDB sorts by UTF-8 bytes, which is
    code point order), merged into one by name, the newest of each name kept."""
    held: T | None = None
    for item in heapq.merge(*streams, key=name):
        if held is not None and name(item) == name(held):
            if version(item) > version(held):
                held = item
            continue
        if held is not None:
            yield held
        held = item
    if held is not None:
        yield held


@dataclass(frozen=True, slots=True)
class IndexItem:
    cluster: str
    path: str
    attrs: Mapping[str, Any] = field(default_factory=dict)  # ENTRY_ATTRIBUTES only
    last_txid: int = 0
    last_index: int = 0
    deleted: bool = False
    moved_to: str | None = None
    subtree_op: Mapping[str, Any] | None = None
    shards: int = 0  # a directory's: its children's shard partitions
    in_shard: bool = False  # stored in its parent's shard partition, not the parent's own

    @property
    def name(self) -> str:
        return names.split_path(self.path)[1]

    def to_item(self, *, now_s: int) -> dict[str, Any]:
        """The item (plain values; `dynamodb_json.to_wire` for the wire format); a delete marker expires
        DELETE_MARKER_TTL_SECONDS after `now_s`."""
        item: dict[str, Any] = {**item_key(self.cluster, self.path, in_shard=self.in_shard),
                                CLUSTER: self.cluster,
                                PATH: self.path, LAST_TXID: self.last_txid,
                                LAST_INDEX: self.last_index, DELETED: self.deleted,
                                **{k: v for k, v in self.attrs.items() if k in ENTRY_ATTRIBUTES}}
        if self.deleted:
            item[names.TTL_ATTRIBUTE] = now_s + DELETE_MARKER_TTL_SECONDS
        if self.moved_to is not None:
            item[MOVED_TO] = self.moved_to
        if self.subtree_op is not None:
            item[SUBTREE_OP] = dict(self.subtree_op)
        if self.shards:
            item[SHARDS] = self.shards
        return item

    @classmethod
    def from_item(cls, item: Mapping[str, Any]) -> IndexItem:
        """From an item's plain values (`dynamodb_json.from_wire` of what DynamoDB returned)."""
        return cls(
            cluster=item[CLUSTER], path=item[PATH],
            attrs={k: plain(item[k]) for k in ENTRY_ATTRIBUTES if k in item},
            last_txid=int(item[LAST_TXID]), last_index=int(item[LAST_INDEX]),
            deleted=bool(item.get(DELETED)), moved_to=item.get(MOVED_TO),
            subtree_op=plain(item[SUBTREE_OP]) if SUBTREE_OP in item else None,
            shards=int(item.get(SHARDS, 0)),
            in_shard=names.INDEX_PK in item and item[names.INDEX_PK] != names.index_partition(
                item[CLUSTER], names.split_path(item[PATH])[0]),
        )


def plain(value: Any) -> Any:
    """DynamoDB numbers come back as Decimal; the index holds only whole numbers."""
    if isinstance(value, Decimal):
        return int(value)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value
