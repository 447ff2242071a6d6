"""What each HDFS event sets in an index entry's registers (index_model merges them)."""

from __future__ import annotations

from typing import Any

from hdfs_events.event import EventType, HdfsEvent, INodeType, MetadataType


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
    """Registers set by CLOSE, TRUNCATE and METADATA; {} for events the index ignores."""
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
