"""The reference: the HDFS namespace after a stream of events, applied one by one in order.

Written from Hadoop's semantics alone (what each FSEditLog operation does to an inode, as
org.apache.hadoop.hdfs.inotify.Event reports it), on a plain dict of paths, and sharing no code
with the consumer's index (it imports nothing from lambdas/): the property tests, the e2e test
and the demo hold the index to it, so a wrong rule in the index for an event's fields shows.

What each event does to the inode at `path`:
- CREATE: a new inode (overwrite replaces a file). Files start empty (length 0) with the
  replication asked for; mtime and atime are the creation time (FSDirWriteFileOp).
- CLOSE: the file's final length, mtime = the close timestamp. After a concat Hadoop logs
  length -1: the length is unknown then.
- APPEND: reopens the file; nothing the index keeps changes until its CLOSE.
- TRUNCATE: the new length, mtime = the truncate timestamp.
- METADATA: setTimes (-1 = unchanged), setReplication, setOwner (owner or group may be
  absent), setPermission; ACLs and xattrs are not kept.
- RENAME: the inode and everything under it move to `dst_path`; what was there is replaced.
- UNLINK: the inode and everything under it go.
- SNAPSHOT (the agent's, after purged edits): the path as listed, replacing whatever was known
  there, and a listed directory's old content goes (what still exists is listed after it).
- GAP: no namespace change.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hdfs_events.event import EventType, HdfsEvent

KEPT = ("type", "size", "mtime", "atime", "owner", "group", "perms", "replication",
        "symlink_target")


def in_order_state(events: Iterable[HdfsEvent], prefix: str,
                   seen: set[str] | None = None) -> dict[str, dict[str, Any]]:
    """The namespace under `prefix` after `events`: path -> the KEPT attributes. `seen`
    collects every path that existed at some point (to tell a path deleted since from one the
    events never created)."""
    ns: dict[str, dict[str, Any]] = {}
    existed: set[str] = set()
    for e in events:
        kind = e.type
        if kind == EventType.CREATE:
            is_file = e.inode_type == "FILE"
            ns[e.path] = {
                "type": str(e.inode_type) if e.inode_type is not None else None,
                "size": 0 if is_file else None,
                "mtime": e.ctime, "atime": e.ctime,
                "owner": e.owner, "group": e.group, "perms": e.perms,
                "replication": e.replication if is_file else None,
                "symlink_target": e.symlink_target,
            }
            existed.add(e.path)
        elif kind == EventType.UNLINK:
            _remove_tree(ns, e.path)
        elif kind == EventType.RENAME:
            assert e.dst_path is not None
            _remove_tree(ns, e.dst_path)
            for old in [p for p in ns if _within(p, e.path)]:
                new = e.dst_path + old[len(e.path):]
                ns[new] = ns.pop(old)
                existed.add(new)
        elif kind == EventType.SNAPSHOT:
            _remove_tree(ns, e.path)
            ns[e.path] = {
                "type": str(e.inode_type) if e.inode_type is not None else None,
                "size": e.size, "mtime": e.mtime, "atime": e.atime,
                "owner": e.owner, "group": e.group, "perms": e.perms,
                "replication": e.replication, "symlink_target": e.symlink_target,
            }
            existed.add(e.path)
        elif e.path in ns:
            _change(ns[e.path], e)
    if seen is not None:
        seen.update(existed)
    return {p: attrs for p, attrs in ns.items() if _within(p, prefix)}


def _change(inode: dict[str, Any], e: HdfsEvent) -> None:
    if e.type == EventType.CLOSE:
        inode["size"] = None if e.size is None or e.size < 0 else e.size
        inode["mtime"] = e.timestamp
    elif e.type == EventType.TRUNCATE:
        inode["size"] = e.size
        inode["mtime"] = e.timestamp
    elif e.type == EventType.METADATA:
        what = e.metadata_type
        if what == "TIMES":
            if e.mtime is not None and e.mtime != -1:
                inode["mtime"] = e.mtime
            if e.atime is not None and e.atime != -1:
                inode["atime"] = e.atime
        elif what == "REPLICATION":
            inode["replication"] = e.replication
        elif what == "OWNER":
            if e.owner is not None:
                inode["owner"] = e.owner
            if e.group is not None:
                inode["group"] = e.group
        elif what == "PERMS":
            inode["perms"] = e.perms


def _within(path: str, root: str) -> bool:
    return root == "/" or path == root or path.startswith(root + "/")


def _remove_tree(ns: dict[str, dict[str, Any]], root: str) -> None:
    for p in [p for p in ns if _within(p, root)]:
        del ns[p]
