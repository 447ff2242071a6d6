"""The namespace index's DynamoDB item: its key, its attributes, and an entry's encoding.

Written by the consumer Lambda (lambdas/ingest/index_table.py), read by the `index` CLI
(hdfs_events/index_reader.py); defined once here so the writer and the reader cannot drift.

An item's partition key is "<cluster>#<parent dir>" and its sort key the entry's name, so a
directory listing is one Query. The item holds the entry's attributes as of the last event that
changed it, that event's (txid, index) as `last_txid`/`last_index`, and `deleted` for a delete
marker (with `moved_to` when a RENAME took it, and a TTL: DynamoDB expires it later). The root
of a subtree walk still under way carries the walk as `subtree_op`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

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
DELETE_MARKER_TTL_SECONDS = 30 * 86_400  # beyond SQS's 14-day retention plus a DLQ redrive

_serializer, _deserializer = TypeSerializer(), TypeDeserializer()


def item_key(cluster: str, path: str) -> dict[str, str]:
    parent, name = names.split_path(path)
    return {names.INDEX_PK: names.index_partition(cluster, parent), names.INDEX_SK: name}


def wire_key(cluster: str, path: str) -> dict[str, dict[str, str]]:
    """item_key in DynamoDB's wire format ({"S": ...})."""
    return {k: {"S": v} for k, v in item_key(cluster, path).items()}


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

    @property
    def name(self) -> str:
        return names.split_path(self.path)[1]

    def to_item(self, *, now_s: int) -> dict[str, Any]:
        """The item (plain values; `to_wire` for the wire format); a delete marker expires
        DELETE_MARKER_TTL_SECONDS after `now_s`."""
        item: dict[str, Any] = {**item_key(self.cluster, self.path), CLUSTER: self.cluster,
                                PATH: self.path, LAST_TXID: self.last_txid,
                                LAST_INDEX: self.last_index, DELETED: self.deleted,
                                **{k: v for k, v in self.attrs.items() if k in ENTRY_ATTRIBUTES}}
        if self.deleted:
            item[names.TTL_ATTRIBUTE] = now_s + DELETE_MARKER_TTL_SECONDS
        if self.moved_to is not None:
            item[MOVED_TO] = self.moved_to
        if self.subtree_op is not None:
            item[SUBTREE_OP] = dict(self.subtree_op)
        return item

    @classmethod
    def from_item(cls, item: Mapping[str, Any]) -> IndexItem:
        """From an item's plain values (`from_wire` of what DynamoDB returned)."""
        return cls(
            cluster=item[CLUSTER], path=item[PATH],
            attrs={k: plain(item[k]) for k in ENTRY_ATTRIBUTES if k in item},
            last_txid=int(item[LAST_TXID]), last_index=int(item[LAST_INDEX]),
            deleted=bool(item.get(DELETED)), moved_to=item.get(MOVED_TO),
            subtree_op=plain(item[SUBTREE_OP]) if SUBTREE_OP in item else None,
        )


def to_wire(item: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _serializer.serialize(v) for k, v in item.items()}


def from_wire(raw: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _deserializer.deserialize(v) for k, v in raw.items()}


def plain(value: Any) -> Any:
    """DynamoDB numbers come back as Decimal; the index holds only whole numbers."""
    if isinstance(value, Decimal):
        return int(value)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value
