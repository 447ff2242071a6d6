"""What each HDFS event does to the index's entries, applied in (txid, index) order.

CREATE begins an entry, CLOSE, TRUNCATE and METADATA change attributes of it, UNLINK and a
RENAME away end it with a delete marker (`moved_to` for a RENAME into the indexed prefixes),
a RENAME into the prefixes carries the source's attributes to the destination (a source the
index does not hold arrives as an entry of unknown type). A SNAPSHOT record sets its path to
the listed state. A directory's UNLINK, RENAME or SNAPSHOT also returns the subtree walk that
takes its children along (lambdas/ingest/subtree.py). A GAP changes nothing.

Every rule leaves an entry alone whose version is not older than the event's: it holds the
event already (a chunk applied again after a crash).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from hdfs_events.event import EventType, HdfsEvent, INodeType, MetadataType
from hdfs_events.index_item import INDEX_SHARDS
from hdfs_events.snapshot_index import crowded
from lambdas.ingest.index_model import DIRECTORY, Entry, Version
from lambdas.ingest.subtree import RENAME, SNAPSHOT, UNLINK, SubtreeOp


class Entries(Protocol):
    def get(self, path: str) -> Entry: ...

    def put(self, entry: Entry, *, old_children: bool = False) -> None:
        """`old_children`: what the path held beneath it before may still be there (a
        listed directory's, until its walk); otherwise an entry that comes alive is a new
        incarnation, with nothing of an older one beneath it."""
        ...


def apply_event(entries: Entries, event: HdfsEvent,
                indexed: Callable[[str], bool]) -> SubtreeOp | None:
    """Applies one event to its entries; returns the subtree walk it starts, if any."""
    version = (event.txid, event.index)
    kind = event.type
    if kind == EventType.RENAME:
        assert event.dst_path is not None
        return _rename(entries, event.cluster, event.path, event.dst_path, version, indexed)
    if kind == EventType.UNLINK:
        return _end(entries, event.cluster, event.path, version)
    if kind == EventType.GAP:
        return None
    entry = entries.get(event.path)
    if entry.version >= version:
        # Applied already (a chunk applied again after a crash). A listed directory's walk
        # runs again all the same: what lay beneath it before it may not have been ended yet.
        return _snapshot_walk(event) if kind == EventType.SNAPSHOT else None
    if kind == EventType.CREATE:
        entries.put(entry.changed(create_values(event), version))
        _parents(entries, event.path, version, indexed)
    elif kind == EventType.SNAPSHOT:
        op = _snapshot_walk(event)
        listed = entry.changed(snapshot_values(event), version).marked(op.marker() if op else None)
        if event.children_num is not None and crowded(event.children_num) and not listed.shards:
            # Its children come in later records, spread over chunks by the walk: no one chunk
            # need give it the child writes that shard a directory (index_view._placed).
            listed = listed.placed(shards=INDEX_SHARDS, in_shard=listed.in_shard,
                                   twin=listed.twin)
        entries.put(listed, old_children=True)
        _parents(entries, event.path, version, indexed)
        return op
    elif (values := update_values(event)) and _known_or_new(entries, entry, indexed):
        base = entry.attrs if entry.alive else {}  # an entry older than the index: learnt
        entries.put(entry.changed({**base, **values}, version))
        _parents(entries, event.path, version, indexed)
    return None


def _known_or_new(entries: Entries, entry: Entry, indexed: Callable[[str], bool]) -> bool:
    """A change applies to a live entry, or teaches the index a path older than its events;
    not to a path it saw deleted (itself or a parent): the stream says it is gone."""
    if entry.stored:
        return entry.alive
    return not any(entries.get(p).deleted for p in parents_of(entry.path, indexed))


def parents_of(path: str, indexed: Callable[[str], bool]) -> list[str]:
    """The indexed ancestors of `path`, top down."""
    parts = path.strip("/").split("/")
    return [p for p in ("/" + "/".join(parts[:i]) for i in range(1, len(parts))) if indexed(p)]


def _parents(entries: Entries, path: str, version: Version,
             indexed: Callable[[str], bool]) -> None:
    """A walk finds children only through their parent's entry: a parent the index does
    not hold alive (it predates the events, or came back unseen) gets one, a directory of
    unknown origin (in order, a path's parents exist when it changes)."""
    for parent in parents_of(path, indexed):
        entry = entries.get(parent)
        if not entry.alive and entry.version < version:
            entries.put(entry.changed({"type": DIRECTORY}, version))


def _snapshot_walk(event: HdfsEvent) -> SubtreeOp | None:
    """A listed directory's old content goes; its children's own records, later in the same
    snapshot, bring back what still exists."""
    if event.inode_type != INodeType.DIRECTORY:
        return None
    return SubtreeOp(kind=SNAPSHOT, cluster=event.cluster, version=(event.txid, event.index),
                     src=event.path)


def _end(entries: Entries, cluster: str, path: str, version: Version) -> SubtreeOp | None:
    entry = entries.get(path)
    if entry.version > version:
        # Applied already, and the path changed since (created again): the walk runs again
        # all the same, since what lay beneath it before may not have been ended yet. It
        # takes nothing newer than the UNLINK.
        return SubtreeOp(kind=UNLINK, cluster=cluster, version=version, src=path)
    op = (SubtreeOp(kind=UNLINK, cluster=cluster, version=version, src=path)
          if entry.may_have_children else None)
    if entry.version < version and (entry.stored or op is not None):
        entries.put(entry.ended(version).marked(op.marker() if op else None))
    return op


def _rename(entries: Entries, cluster: str, src: str, dst: str, version: Version,
            indexed: Callable[[str], bool]) -> SubtreeOp | None:
    if not indexed(src):
        target = entries.get(dst)
        if target.version < version:  # moved in from outside: a path of unknown type
            entries.put(target.changed({}, version))
            _parents(entries, dst, version, indexed)
        return None
    if not indexed(dst):
        return _end(entries, cluster, src, version)
    source = entries.get(src)
    if source.version > version:
        return None
    # Alive, or the marker this RENAME left in a chunk applied before (it kept the attributes).
    carried: dict[str, Any] = dict(source.attrs) if (
        source.alive or (source.deleted and source.version == version)) else {}
    op = (SubtreeOp(kind=RENAME, cluster=cluster, version=version, src=src, dst=dst)
          if source.may_have_children else None)
    marker = op.marker() if op else None
    target = entries.get(dst)
    if target.version < version:
        entries.put(target.changed(carried, version).marked(marker))
        _parents(entries, dst, version, indexed)
    if source.version < version and (source.stored or op is not None):
        entries.put(source.ended(version, moved_to=dst).marked(marker))
    return op


def create_values(event: HdfsEvent) -> dict[str, Any]:
    is_file = event.inode_type == INodeType.FILE
    return {
        "type": str(event.inode_type) if event.inode_type else None,
        "size": 0 if is_file else None,
        "mtime": event.ctime, "atime": event.ctime,
        "owner": event.owner, "group": event.group, "perms": event.perms,
        "replication": event.replication if is_file else None,
        "symlink_target": event.symlink_target,
    }


def snapshot_values(event: HdfsEvent) -> dict[str, Any]:
    """Everything the index keeps, as the listing gave it (FileSystem.listStatus; the agent
    sends size and replication for files only)."""
    return {
        "type": str(event.inode_type) if event.inode_type else None,
        "size": event.size, "mtime": event.mtime, "atime": event.atime,
        "owner": event.owner, "group": event.group, "perms": event.perms,
        "replication": event.replication, "symlink_target": event.symlink_target,
    }


def update_values(event: HdfsEvent) -> dict[str, Any]:
    """Attributes set by CLOSE, TRUNCATE and METADATA; {} for events the index ignores."""
    if event.type == EventType.CLOSE:
        # After OP_CONCAT_DELETE Hadoop reports size -1: the length is unknown, not -1.
        size = event.size if event.size is not None and event.size >= 0 else None
        return {"size": size, "mtime": event.timestamp}
    if event.type == EventType.TRUNCATE:
        return {"size": event.size, "mtime": event.timestamp}
    if event.type != EventType.METADATA:
        return {}
    kind = event.metadata_type
    if kind == MetadataType.TIMES:
        # setTimes logs -1 for "leave unchanged".
        return {k: v for k, v in (("mtime", event.mtime), ("atime", event.atime))
                if v is not None and v >= 0}
    if kind == MetadataType.REPLICATION:
        return {"replication": event.replication}
    if kind == MetadataType.OWNER:  # chown may give only the owner or only the group
        return {k: v for k, v in (("owner", event.owner), ("group", event.group))
                if v is not None}
    if kind == MetadataType.PERMS:
        return {"perms": event.perms}
    return {}  # ACLS, XATTRS: not in the index
