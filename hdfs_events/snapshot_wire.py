"""A snapshot record's index item as a list of attributes, each with its DynamoDB wire type and
where its value comes from, so a columnar writer (the image job's Spark, glue_jobs/
index_item_json.py) builds the item's wire JSON without building each item in Python.

It describes exactly `to_wire(snapshot_item(cluster, state, txid, index, ...).to_item(now_s=0))`
(hdfs_events/snapshot_index.py, hdfs_events/index_item.py): the same names, the same wire types,
NULL where the consumer keeps no value (tests/integration/glue/test_index_item_json.py holds the
two equal on every kind of entry). A value comes either from a namespace inventory column
(hdfs_events/inventory_schema.py; `default` stands for a null there) or from the item itself
(`Own`): its key, the cluster, the snapshot's (txid, index), not deleted, a hot directory's
shards.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from hdfs_events import names
from hdfs_events.index_item import (
    CLUSTER,
    DELETED,
    LAST_INDEX,
    LAST_TXID,
    PATH,
    SHARDS,
)
from hdfs_events.snapshot_index import FILE, SYMLINK


class Own(Enum):
    """Values of the item itself, not of the path's inventory row."""

    PARTITION = "partition"  # its parent's partition, or a hot parent's shard of it
    NAME = "name"  # the path's last component
    CLUSTER = "cluster"
    TXID = "txid"  # the snapshot's
    INDEX = "index"  # the path's position in the walk
    NOT_DELETED = "not deleted"
    SHARDS = "shards"  # INDEX_SHARDS on a hot directory; absent on every other item


@dataclass(frozen=True, slots=True)
class WireAttribute:
    name: str
    wire_type: str  # "S", "N" or "BOOL"; {"NULL": true} when the entry keeps no value
    source: str | Own  # an inventory column, or the item's own value
    kept_for: str | None = None  # the one inode type that keeps the value; NULL on the others
    default: str | int | None = None  # for a null inventory value; None: NULL


SNAPSHOT_WIRE: tuple[WireAttribute, ...] = (
    WireAttribute(names.INDEX_PK, "S", Own.PARTITION),
    WireAttribute(names.INDEX_SK, "S", Own.NAME),
    WireAttribute(CLUSTER, "S", Own.CLUSTER),
    WireAttribute(PATH, "S", "path"),
    WireAttribute(LAST_TXID, "N", Own.TXID),
    WireAttribute(LAST_INDEX, "N", Own.INDEX),
    WireAttribute(DELETED, "BOOL", Own.NOT_DELETED),
    # snapshot_attrs: size and replication of files only, symlink_target of symlinks only.
    WireAttribute("type", "S", "type"),
    WireAttribute("size", "N", "size", kept_for=FILE, default=0),
    WireAttribute("mtime", "N", "mtime", default=0),
    WireAttribute("atime", "N", "atime", default=0),
    WireAttribute("owner", "S", "owner", default=""),
    WireAttribute("group", "S", "group", default=""),
    WireAttribute("perms", "S", "perms", default="0000"),
    WireAttribute("replication", "N", "replication", kept_for=FILE, default=0),
    WireAttribute("symlink_target", "S", "symlink_target", kept_for=SYMLINK),
    WireAttribute(SHARDS, "N", Own.SHARDS),
)


def partition_spelling(cluster: str) -> tuple[str, str]:
    """(prefix, shard infix): a partition is prefix + parent, a hot parent's shard k of it
    prefix + parent + infix + k, as names.index_partition and names.index_shard_partition spell
    them (read from those, so the spelling stays theirs)."""
    prefix = names.index_partition(cluster, "")
    shard = names.index_shard_partition(cluster, "", 0)
    return prefix, shard[len(prefix):-1]
