"""Real Hadoop inotify objects built in the JVM with Hadoop's own builders, for tests and bench.

`to_java(event)` builds the Java event Hadoop's InotifyFSEditLogOpTranslator would have built for
the same change as a contract event, setting only what Hadoop sets for that type (so a DIRECTORY
CREATE keeps Java's defaults for replication and block size, as on a live NameNode).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jpype

from hdfs_events.event import EventType, HdfsEvent, INodeType, MetadataType


def _j(name: str) -> Any:
    return jpype.JClass(name)


def event_class(kind: str) -> Any:
    return _j(f"org.apache.hadoop.hdfs.inotify.Event${kind}")


def fs_permission(octal: str) -> Any:
    return _j("org.apache.hadoop.fs.permission.FsPermission")(jpype.JShort(int(octal, 8)))


def acl_entry(text: str) -> Any:
    """Hadoop parses its own "[default:]type:name:perm" form."""
    return _j("org.apache.hadoop.fs.permission.AclEntry").parseAclEntry(text, True)


def xattr(namespace: str, name: str, value: bytes | None) -> Any:
    xattr_class = _j("org.apache.hadoop.fs.XAttr")
    builder = xattr_class.Builder().setNameSpace(getattr(xattr_class.NameSpace, namespace))
    builder = builder.setName(name)
    if value is not None:
        builder = builder.setValue(jpype.JArray(jpype.JByte)(value))
    return builder.build()


def java_list(items: Sequence[Any]) -> Any:
    out = _j("java.util.ArrayList")()
    for item in items:
        out.add(item)
    return out


def event_batch(txid: int, events: Sequence[Any]) -> Any:
    event = _j("org.apache.hadoop.hdfs.inotify.Event")
    return _j("org.apache.hadoop.hdfs.inotify.EventBatch")(txid, jpype.JArray(event)(events))


def _xattr_value(value: str | None) -> bytes | None:
    return None if value is None else bytes.fromhex(value.removeprefix("0x"))


def to_java(e: HdfsEvent) -> Any:
    if e.type is EventType.CREATE:
        create = event_class("CreateEvent")
        b = (create.Builder().iNodeType(getattr(create.INodeType, e.inode_type.value))
             .path(e.path).ctime(e.ctime).ownerName(e.owner).groupName(e.group)
             .perms(fs_permission(e.perms)))
        if e.inode_type is INodeType.FILE:
            b = b.replication(e.replication).overwrite(e.overwrite).defaultBlockSize(e.block_size)
            if e.erasure_coded is not None:
                b = b.erasureCoded(e.erasure_coded)
        if e.symlink_target is not None:
            b = b.symlinkTarget(e.symlink_target)
        return b.build()
    if e.type is EventType.CLOSE:
        return event_class("CloseEvent")(e.path, e.size, e.timestamp)
    if e.type is EventType.APPEND:
        return event_class("AppendEvent").Builder().path(e.path).newBlock(e.new_block).build()
    if e.type is EventType.RENAME:
        return (event_class("RenameEvent").Builder().srcPath(e.path).dstPath(e.dst_path)
                .timestamp(e.timestamp).build())
    if e.type is EventType.UNLINK:
        return event_class("UnlinkEvent").Builder().path(e.path).timestamp(e.timestamp).build()
    if e.type is EventType.TRUNCATE:
        return event_class("TruncateEvent")(e.path, e.size, e.timestamp)
    meta = event_class("MetadataUpdateEvent")
    b = meta.Builder().path(e.path).metadataType(
        getattr(meta.MetadataType, e.metadata_type.value))
    kind = e.metadata_type
    if kind is MetadataType.TIMES:
        b = b.mtime(e.mtime).atime(e.atime)
    elif kind is MetadataType.REPLICATION:
        b = b.replication(e.replication)
    elif kind is MetadataType.OWNER:
        b = b.ownerName(e.owner).groupName(e.group)
    elif kind is MetadataType.PERMS:
        b = b.perms(fs_permission(e.perms))
    elif kind is MetadataType.ACLS:
        b = b.acls(java_list([acl_entry(a) for a in e.acls or ()]))
    else:
        b = b.xAttrs(java_list([xattr(x.namespace, x.name, _xattr_value(x.value))
                                for x in e.xattrs or ()])).xAttrsRemoved(e.xattrs_removed)
    return b.build()
