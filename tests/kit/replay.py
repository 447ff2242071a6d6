"""The reference: the HDFS namespace after a stream of events, applied one by one in order.

Written from Hadoop's semantics alone (what each FSEditLog operation does to an inode, as
org.apache.hadoop.hdfs.inotify.Event reports it), on plain dicts, and sharing no code
with the consumer's index (it imports nothing from lambdas/): the property tests, the e2e test
and the demo hold the index to it, so a wrong rule in the index for an event's fields shows.

The namespace is a tree of inodes, as the NameNode's (FSDirectory) is: a RENAME moves a
subtree and an UNLINK drops one in a step, so a replay of a million events takes seconds.

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

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from hdfs_events.event import EventType, HdfsEvent

KEPT = ("type", "size", "mtime", "atime", "owner", "group", "perms", "replication",
        "symlink_target")


@dataclass(slots=True)
class _Inode:
    attrs: dict[str, Any] | None = None  # None: a directory only known by what is under it
    children: dict[str, _Inode] = field(default_factory=dict)


def in_order_state(events: Iterable[HdfsEvent], prefix: str,
                   seen: set[str] | None = None) -> dict[str, dict[str, Any]]:
    """The namespace under `prefix` after `events`: path -> the KEPT attributes. `seen`
    collects every path that existed at some point (to tell a path deleted since from one the
    events never created). A path whose parent the events never created hangs under a parent
    known only by it, as in HDFS where that parent existed before the events began."""
    root = _Inode()
    for e in events:
        kind = e.type
        if kind == EventType.CREATE:
            is_file = e.inode_type == "FILE"
            node = _place(root, e.path)
            node.attrs = {
                "type": str(e.inode_type) if e.inode_type is not None else None,
                "size": 0 if is_file else None,
                "mtime": e.ctime, "atime": e.ctime,
                "owner": e.owner, "group": e.group, "perms": e.perms,
                "replication": e.replication if is_file else None,
                "symlink_target": e.symlink_target,
            }
            _note(seen, e.path, node)
        elif kind == EventType.UNLINK:
            _detach(root, e.path)
        elif kind == EventType.RENAME:
            assert e.dst_path is not None
            moving = _detach(root, e.path)
            _detach(root, e.dst_path)
            if moving is not None:
                parent, name = _split(e.dst_path)
                _place(root, parent).children[name] = moving
                _note(seen, e.dst_path, moving)
        elif kind == EventType.SNAPSHOT:
            _detach(root, e.path)
            node = _place(root, e.path)
            node.attrs = {
                "type": str(e.inode_type) if e.inode_type is not None else None,
                "size": e.size, "mtime": e.mtime, "atime": e.atime,
                "owner": e.owner, "group": e.group, "perms": e.perms,
                "replication": e.replication, "symlink_target": e.symlink_target,
            }
            _note(seen, e.path, node)
        elif (node := _find(root, e.path)) is not None and node.attrs is not None:
            _change(node.attrs, e)
    start = _find(root, prefix)
    return {} if start is None else dict(_flatten(prefix, start))


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


def _split(path: str) -> tuple[str, str]:
    parent, _, name = path.rstrip("/").rpartition("/")
    return parent or "/", name


def _names(path: str) -> list[str]:
    return [n for n in path.split("/") if n]


def _find(root: _Inode, path: str) -> _Inode | None:
    node: _Inode | None = root
    for name in _names(path):
        node = node.children.get(name) if node is not None else None
    return node


def _place(root: _Inode, path: str) -> _Inode:
    """The inode at `path`, made (with unknown parents) if missing."""
    node = root
    for name in _names(path):
        node = node.children.setdefault(name, _Inode())
    return node


def _detach(root: _Inode, path: str) -> _Inode | None:
    """Takes the inode at `path` and everything under it out of the namespace."""
    parent_path, name = _split(path)
    parent = _find(root, parent_path)
    return parent.children.pop(name, None) if parent is not None else None


def _flatten(path: str, node: _Inode) -> Iterator[tuple[str, dict[str, Any]]]:
    stack = [(path, node)]
    while stack:
        at, inode = stack.pop()
        if inode.attrs is not None:
            yield at, inode.attrs
        stack += [(f"{at.rstrip('/')}/{name}", child) for name, child in inode.children.items()]


def _note(seen: set[str] | None, path: str, node: _Inode) -> None:
    if seen is not None:
        seen.update(p for p, _ in _flatten(path, node))
