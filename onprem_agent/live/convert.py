"""Hadoop inotify EventBatch objects -> the contract's HdfsEvent, a whole drain in one JVM call.

The bridge was chosen by measurement (bench/bridge.py): reading each Java field through JPype
costs ~1.7 us a call, ~15 calls for a CreateEvent, which tops out near the 50k events/s a busy
NameNode needs. Instead the JVM turns the whole list of EventBatch objects into bytes with
Hadoop's own PBHelperClient.convertEditsResponse, the code the NameNode itself runs to put
these events on the wire, and Python decodes the bytes with Google's protobuf runtime. The
schema is not copied here: the descriptors come from the jar's own InotifyProtos at start-up, so
the decoder always matches the Hadoop version on the classpath.

Values follow Hadoop's client-side proto conversion (PBHelperClient.convert), so an event reads
the same whether it came through the NameNode's RPC or from this round trip, and follow the
edit-log translator (onprem_agent.translate) for the same change:
- fields an event type does not have stay None, not Java's defaults (0, false, "");
- CREATE of a DIRECTORY or SYMLINK has no replication, block size, overwrite or erasure coding;
  `erasure_coded` is None when the NameNode did not say (Hadoop 2.x sends no such field);
- METADATA sets only the fields of its metadata type; ACLS and XATTRS events always carry a
  list (Hadoop's client turns an empty list into null: `removeAcl` logs no entries);
- XAttr values are hex as the edit log prints them ("0x3132"); no value -> None.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hdfs_events.event import (
    EventType,
    HdfsEvent,
    INodeType,
    MetadataType,
    XAttr,
    perms_to_octal,
)
from onprem_agent.source import TxBatch

# InotifyProtos enums (inotify.proto, acl.proto, xattr.proto): numbers -> contract values.
_EVENT_TYPES = {0: EventType.CREATE, 1: EventType.CLOSE, 2: EventType.APPEND,
                3: EventType.RENAME, 4: EventType.METADATA, 5: EventType.UNLINK,
                6: EventType.TRUNCATE}
_INODE_TYPES = {0: INodeType.FILE, 1: INodeType.DIRECTORY, 2: INodeType.SYMLINK}
_METADATA_TYPES = {0: MetadataType.TIMES, 1: MetadataType.REPLICATION, 2: MetadataType.OWNER,
                   3: MetadataType.PERMS, 4: MetadataType.ACLS, 5: MetadataType.XATTRS}
_ACL_TYPES = ("user", "group", "mask", "other")
_FS_ACTIONS = ("---", "--x", "-w-", "-wx", "r--", "r-x", "rw-", "rwx")  # FsAction.SYMBOL
_XATTR_NAMESPACES = ("USER", "TRUSTED", "SECURITY", "SYSTEM", "RAW")


class ConversionError(ValueError):
    """Bytes from the JVM that do not decode as Hadoop's EventsListProto."""


@dataclass(frozen=True, slots=True)
class InotifyMessages:
    """The protobuf message classes of Hadoop's inotify.proto, built from the jar's own
    descriptors."""

    events_list: Any
    by_type: dict[int, Any]  # EventType number -> its *EventProto class


def load_inotify_messages() -> InotifyMessages:
    """Reads the descriptors of inotify.proto (and its imports) from the running JVM."""
    import jpype
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    pool = descriptor_pool.DescriptorPool()
    protos = jpype.JClass("org.apache.hadoop.hdfs.protocol.proto.InotifyProtos")

    def add(file_descriptor: Any) -> None:
        for dependency in file_descriptor.getDependencies():
            add(dependency)
        try:
            pool.FindFileByName(str(file_descriptor.getName()))
        except KeyError:
            raw = bytes(file_descriptor.toProto().toByteArray())
            pool.Add(descriptor_pb2.FileDescriptorProto.FromString(raw))

    add(protos.getDescriptor())

    def message(name: str) -> Any:
        return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"hadoop.hdfs.{name}"))

    names = ("CreateEventProto", "CloseEventProto", "AppendEventProto", "RenameEventProto",
             "MetadataUpdateEventProto", "UnlinkEventProto", "TruncateEventProto")
    return InotifyMessages(events_list=message("EventsListProto"),
                           by_type={i: message(n) for i, n in enumerate(names)})


def _create(cluster: str, txid: int, index: int, m: Any) -> HdfsEvent:
    inode_type = _INODE_TYPES[m.type]
    is_file = inode_type is INodeType.FILE
    return HdfsEvent(
        cluster, txid, index, EventType.CREATE, m.path, timestamp=m.ctime,
        inode_type=inode_type, ctime=m.ctime, replication=m.replication if is_file else None,
        # Interned as the edit-log translation does (translate.py): few users, many events.
        owner=sys.intern(m.ownerName), group=sys.intern(m.groupName),
        perms=perms_to_octal(m.perms.perm),
        symlink_target=m.symlinkTarget or None, overwrite=m.overwrite if is_file else None,
        block_size=m.defaultBlockSize if is_file else None,
        erasure_coded=m.erasureCoded if is_file and m.HasField("erasureCoded") else None,
    )


def _close(cluster: str, txid: int, index: int, m: Any) -> HdfsEvent:
    return HdfsEvent(cluster, txid, index, EventType.CLOSE, m.path, size=m.fileSize,
                     timestamp=m.timestamp)


def _append(cluster: str, txid: int, index: int, m: Any) -> HdfsEvent:
    return HdfsEvent(cluster, txid, index, EventType.APPEND, m.path, new_block=m.newBlock)


def _rename(cluster: str, txid: int, index: int, m: Any) -> HdfsEvent:
    return HdfsEvent(cluster, txid, index, EventType.RENAME, m.srcPath, dst_path=m.destPath,
                     timestamp=m.timestamp)


def _unlink(cluster: str, txid: int, index: int, m: Any) -> HdfsEvent:
    return HdfsEvent(cluster, txid, index, EventType.UNLINK, m.path, timestamp=m.timestamp)


def _truncate(cluster: str, txid: int, index: int, m: Any) -> HdfsEvent:
    return HdfsEvent(cluster, txid, index, EventType.TRUNCATE, m.path, size=m.fileSize,
                     timestamp=m.timestamp)


def acl_entry_string(entry: Any) -> str:
    """Hadoop's AclEntry.toString: [default:]type:name:perm, e.g. "user:alice:rw-"."""
    scope = "default:" if entry.scope == 1 else ""
    return f"{scope}{_ACL_TYPES[entry.type]}:{entry.name}:{_FS_ACTIONS[entry.permissions]}"


def _xattr(x: Any) -> XAttr:
    value = "0x" + x.value.hex() if x.HasField("value") else None
    return XAttr(namespace=_XATTR_NAMESPACES[x.namespace], name=x.name, value=value)


def _metadata(cluster: str, txid: int, index: int, m: Any) -> HdfsEvent:
    kind = _METADATA_TYPES[m.type]
    values: dict[str, Any] = {}
    if kind is MetadataType.TIMES:
        values = {"mtime": m.mtime, "atime": m.atime}
    elif kind is MetadataType.REPLICATION:
        values = {"replication": m.replication}
    elif kind is MetadataType.OWNER:
        # chown may set only one of the two; Hadoop sends "" for the one not given.
        values = {"owner": m.ownerName or None, "group": m.groupName or None}
    elif kind is MetadataType.PERMS:
        values = {"perms": perms_to_octal(m.perms.perm) if m.HasField("perms") else None}
    elif kind is MetadataType.ACLS:
        values = {"acls": tuple(acl_entry_string(e) for e in m.acls)}
    else:
        values = {"xattrs": tuple(_xattr(x) for x in m.xAttrs),
                  "xattrs_removed": m.xAttrsRemoved}
    return HdfsEvent(cluster, txid, index, EventType.METADATA, m.path, metadata_type=kind,
                     **values)


_BUILDERS: dict[int, Callable[[str, int, int, Any], HdfsEvent]] = {
    0: _create, 1: _close, 2: _append, 3: _rename, 4: _metadata, 5: _unlink, 6: _truncate,
}


class EventsListDecoder:
    """Hadoop's EventsListProto bytes -> one TxBatch per EventBatch, events indexed 0..n-1."""

    def __init__(self, cluster: str, messages: InotifyMessages) -> None:
        self._cluster = cluster
        self._messages = messages
        self._parsers = {t: cls.FromString for t, cls in messages.by_type.items()}

    def decode(self, data: bytes) -> list[TxBatch]:
        try:
            events_list = self._messages.events_list.FromString(data)
        except Exception as exc:  # protobuf raises its own DecodeError type per backend
            raise ConversionError(f"not an EventsListProto ({len(data)} bytes): {exc}") from exc
        cluster, parsers, out = self._cluster, self._parsers, []
        for batch in events_list.batch:
            txid = batch.txid
            events = []
            for index, event in enumerate(batch.events):
                parse = parsers.get(event.type)
                if parse is None:
                    raise ConversionError(f"txid {txid}: unknown inotify event type "
                                          f"{event.type}; is the Hadoop client newer than "
                                          "this agent?")
                events.append(_BUILDERS[event.type](cluster, txid, index,
                                                    parse(event.contents)))
            out.append(TxBatch(txid=txid, events=tuple(events)))
        return out


class JavaBatchConverter:
    """Java EventBatch objects -> TxBatch: one JVM call for the whole list (see module doc)."""

    def __init__(self, cluster: str, messages: InotifyMessages | None = None) -> None:
        import jpype

        self._decoder = EventsListDecoder(cluster, messages or load_inotify_messages())
        self._array_list = jpype.JClass("java.util.ArrayList")
        self._events_list = jpype.JClass("org.apache.hadoop.hdfs.inotify.EventBatchList")
        self._pb = jpype.JClass("org.apache.hadoop.hdfs.protocolPB.PBHelperClient")

    @property
    def decoder(self) -> EventsListDecoder:
        return self._decoder

    def convert(self, batches: Sequence[Any]) -> list[TxBatch]:
        if not batches:
            return []
        java_list = self._array_list(len(batches))
        for batch in batches:
            java_list.add(batch)
        first, last = batches[0].getTxid(), batches[-1].getTxid()
        wire = self._pb.convertEditsResponse(self._events_list(java_list, first, last, last))
        return self._decoder.decode(bytes(wire.getEventsList().toByteArray()))
