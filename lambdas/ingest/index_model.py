"""An index entry: one path's attributes as of the last event that changed it.

The sequencer applies a cluster's events in (txid, index) order, so an entry needs no history:
its attributes, the version (txid, index) it was last changed at, a delete marker (kept with
the attributes it had, and where a RENAME moved it) and, on the roots of a subtree walk under
way, the walk's marker. A change whose version is not newer than the entry's is already in it:
a chunk applied again after a crash is a no-op item by item.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

Version = tuple[int, int]  # (txid, index)
NEVER: Version = (0, 0)  # before any real event: txids start at 1
DIRECTORY = "DIRECTORY"


@dataclass(frozen=True, slots=True)
class Entry:
    cluster: str
    path: str
    attrs: Mapping[str, Any] = field(default_factory=dict)
    version: Version = NEVER
    deleted: bool = False
    moved_to: str | None = None  # where a RENAME took it (delete markers only)
    walk: Mapping[str, Any] | None = None  # a subtree walk under way from or to this path
    # A directory's children's shard partitions (hdfs_events/index_item.py), kept through its
    # changes: its children stay where they were written until written again.
    shards: int = 0
    in_shard: bool = False  # where the table holds it (set on writing, from its parent's shards)
    # The table holds an older copy of this path in the other place (its parent's own partition
    # or its shard). Read: seen there too. Written: that copy is deleted with the write, since a
    # delete marker hides an older live copy only until DynamoDB's TTL removes the marker.
    twin: bool = False

    @property
    def stored(self) -> bool:
        return self.version != NEVER

    @property
    def alive(self) -> bool:
        return self.stored and not self.deleted

    @property
    def type(self) -> str | None:
        return self.attrs.get("type")

    @property
    def may_have_children(self) -> bool:
        """A directory, or a path of unknown type (older than the index, or learnt)."""
        return self.attrs.get("type") in (DIRECTORY, None)

    # Built directly, not with dataclasses.replace: a backlog makes millions of them.
    def changed(self, attrs: Mapping[str, Any], version: Version) -> Entry:
        """Alive with `attrs` from `version` on (a new inode's, or updated ones)."""
        return Entry(self.cluster, self.path, dict(attrs), version, False, None, self.walk,
                     self.shards, self.in_shard, self.twin)

    def ended(self, version: Version, moved_to: str | None = None) -> Entry:
        """A delete marker, keeping the attributes: a chunk applied again after a crash
        carries them on from here (the marker is the source's final state in its chunk)."""
        return Entry(self.cluster, self.path, self.attrs, version, True, moved_to, self.walk,
                     self.shards, self.in_shard, self.twin)

    def marked(self, walk: Mapping[str, Any] | None) -> Entry:
        return Entry(self.cluster, self.path, self.attrs, self.version, self.deleted,
                     self.moved_to, walk, self.shards, self.in_shard, self.twin)

    def placed(self, *, shards: int, in_shard: bool, twin: bool = False) -> Entry:
        return Entry(self.cluster, self.path, self.attrs, self.version, self.deleted,
                     self.moved_to, self.walk, shards, in_shard, twin)
