"""Edit-log op -> inotify events, exactly as Hadoop's InotifyFSEditLogOpTranslator does it.

The NameNode serves inotify by running each logged op through that class
(org.apache.hadoop.hdfs.server.namenode.InotifyFSEditLogOpTranslator); translating a backfill
the same way makes replayed history indistinguishable from live events. Field by field:

- OP_ADD without blocks -> CREATE FILE, ctime from ATIME (Hadoop's choice, not MTIME);
  OP_ADD with blocks -> APPEND (pre-OP_APPEND layouts logged appends this way).
- OP_CLOSE -> CLOSE, size = sum of the blocks' NUM_BYTES, timestamp = MTIME.
- OP_APPEND -> APPEND with NEWBLOCK.
- OP_CONCAT_DELETE -> APPEND target, UNLINK each source, CLOSE target with size -1; one txid.
- OP_RENAME_OLD, OP_RENAME -> RENAME; OP_DELETE -> UNLINK.
- OP_MKDIR -> CREATE DIRECTORY (ctime = TIMESTAMP); OP_SYMLINK -> CREATE SYMLINK (ctime = ATIME).
- OP_SET_REPLICATION, OP_SET_PERMISSIONS, OP_SET_OWNER, OP_TIMES, OP_SET_XATTR, OP_REMOVE_XATTR,
  OP_SET_ACL -> METADATA of the matching type.
- OP_TRUNCATE -> TRUNCATE with the new length.
- Every other op -> no event.
"""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from hdfs_events.event import (
    XATTR_NAMESPACES,
    EventType,
    HdfsEvent,
    INodeType,
    MetadataType,
    XAttr,
    perms_to_octal,
)
from onprem_agent.editlog import EditLogError, EditOp, unmangle
from onprem_agent.source import TxBatch

# Ops that Hadoop's translator maps to no event (FSEditLogOpCodes, Hadoop 2.x to 3.4). Any other
# opcode is one this translator does not know: it yields no event and is reported, because a
# newer NameNode may log namespace changes under an op we have not learnt yet.
SILENT_OPCODES = frozenset({
    "OP_START_LOG_SEGMENT", "OP_END_LOG_SEGMENT", "OP_UPDATE_MASTER_KEY",
    "OP_GET_DELEGATION_TOKEN", "OP_RENEW_DELEGATION_TOKEN", "OP_CANCEL_DELEGATION_TOKEN",
    "OP_SET_GENSTAMP_V1", "OP_SET_GENSTAMP_V2", "OP_ALLOCATE_BLOCK_ID", "OP_ADD_BLOCK",
    "OP_UPDATE_BLOCKS", "OP_REASSIGN_LEASE", "OP_SET_NS_QUOTA", "OP_CLEAR_NS_QUOTA",
    "OP_SET_QUOTA", "OP_SET_QUOTA_BY_STORAGETYPE", "OP_SET_STORAGE_POLICY",
    "OP_CREATE_SNAPSHOT", "OP_DELETE_SNAPSHOT", "OP_RENAME_SNAPSHOT", "OP_ALLOW_SNAPSHOT",
    "OP_DISALLOW_SNAPSHOT", "OP_ADD_CACHE_DIRECTIVE", "OP_MODIFY_CACHE_DIRECTIVE",
    "OP_REMOVE_CACHE_DIRECTIVE", "OP_ADD_CACHE_POOL", "OP_MODIFY_CACHE_POOL",
    "OP_REMOVE_CACHE_POOL", "OP_ROLLING_UPGRADE_START", "OP_ROLLING_UPGRADE_FINALIZE",
    "OP_ADD_ERASURE_CODING_POLICY", "OP_ENABLE_ERASURE_CODING_POLICY",
    "OP_DISABLE_ERASURE_CODING_POLICY", "OP_REMOVE_ERASURE_CODING_POLICY",
    "OP_DATANODE_ADD", "OP_DATANODE_REMOVE", "OP_INVALID",
})


@dataclass(slots=True)
class TranslationStats:
    ops: int = 0
    events: int = 0
    unknown_opcodes: Counter[str] = field(default_factory=Counter)


class _Fields:
    """Reads the DATA of one op; a missing field raises EditLogError naming txid and field."""

    __slots__ = ("data", "opcode", "source", "txid")

    def __init__(self, op: EditOp, source: str) -> None:
        self.data, self.txid, self.opcode, self.source = op.data, op.txid, op.opcode, source

    def missing(self, name: str) -> EditLogError:
        return EditLogError(self.source, f"{self.opcode} has no {name}", txid=self.txid,
                            field=name)

    def text(self, name: str, within: ET.Element | None = None) -> str:
        value = (self.data if within is None else within).findtext(name)
        if value is None:
            raise self.missing(name)
        return self.unmangled(name, value)

    def optional_text(self, name: str, within: ET.Element | None = None) -> str | None:
        value = (self.data if within is None else within).findtext(name)
        return None if value is None else self.unmangled(name, value)

    def unmangled(self, name: str, value: str) -> str:
        try:
            return unmangle(value)
        except ValueError as exc:
            raise EditLogError(self.source, f"{self.opcode}: {exc}", txid=self.txid,
                               field=name) from None

    def choice(self, name: str, allowed: frozenset[str], within: ET.Element) -> str:
        value = within.findtext(name)
        if value is None:
            raise self.missing(name)
        if value not in allowed:
            raise EditLogError(self.source, f"{self.opcode}: {name} {value!r} is not one of "
                               f"{sorted(allowed)}", txid=self.txid, field=name)
        return value

    def number(self, name: str, within: ET.Element | None = None) -> int:
        node = self.data if within is None else within
        value = node.findtext(name)
        if value is None:
            raise self.missing(name)
        try:
            return int(value)
        except ValueError:
            raise EditLogError(self.source, f"{self.opcode}: {name} {value!r} is not a number",
                               txid=self.txid, field=name) from None

    def boolean(self, name: str, default: bool | None = None) -> bool:
        value = self.data.findtext(name)
        if value is None:
            if default is None:
                raise self.missing(name)
            return default
        # Java's Boolean.parseBoolean, as Hadoop's XML loader reads it: "true" in any case.
        return value.lower() == "true"

    def permission_status(self) -> tuple[str, str, str]:
        status = self.data.find("PERMISSION_STATUS")
        if status is None:
            raise self.missing("PERMISSION_STATUS")
        owner = status.findtext("USERNAME")
        group = status.findtext("GROUPNAME")
        if owner is None:
            raise self.missing("PERMISSION_STATUS/USERNAME")
        if group is None:
            raise self.missing("PERMISSION_STATUS/GROUPNAME")
        # Interned: a cluster has few users and groups, and the events in flight share one
        # string of each instead of holding a copy apiece.
        return (sys.intern(self.unmangled("PERMISSION_STATUS/USERNAME", owner)),
                sys.intern(self.unmangled("PERMISSION_STATUS/GROUPNAME", group)),
                perms_to_octal(self.number("MODE", status)))

    def block_bytes(self) -> int:
        return sum(self.number("NUM_BYTES", b) for b in self.data.iterfind("BLOCK"))

    def has(self, name: str) -> bool:
        return self.data.find(name) is not None


class _NotFlat(Exception):
    """The flat reader cannot vouch for this DATA: the tree reader (_Fields) decides."""


# A leaf element as oev writes one: `<NAME>text</NAME>`, no attributes, no markup inside.
_LEAF = re.compile(r"<([A-Z0-9_]+)>([^<]*)</")


class _FlatFields:
    """_Fields for the common ops without building a tree: their DATA is a flat list of leaf
    elements plus PERMISSION_STATUS and BLOCK children, whose leaf names (USERNAME, GROUPNAME,
    MODE; BLOCK_ID, NUM_BYTES, GENSTAMP) occur nowhere else. Building the ElementTree costs
    ~14 us per record, scanning the leaves ~3 us. Whatever this reader cannot read exactly as
    the tree reader would (entities, CR, self-closing or missing elements, a bad number or
    escape) raises _NotFlat, and the op is read again by _Fields, which also owns every error
    message; so both readers agree on every input by construction."""

    __slots__ = ("blocks", "fields", "text_", "txid")

    def __init__(self, op: EditOp, raw: bytes) -> None:
        if b"&" in raw or b"/>" in raw or b"\r" in raw:
            raise _NotFlat
        text = raw.decode("utf-8")
        pairs = _LEAF.findall(text)
        self.fields = dict(reversed(pairs))  # the first of a name wins, as findtext's does
        self.text_, self.txid = text, op.txid
        self.blocks = [v for k, v in pairs if k == "NUM_BYTES"]

    def value(self, name: str) -> str:
        value = self.fields.get(name)
        if value is None:
            raise _NotFlat
        return value

    def text(self, name: str) -> str:
        value = self.value(name)
        if "\\" not in value:
            return value
        try:
            return unmangle(value)
        except ValueError:
            raise _NotFlat from None

    def number(self, name: str) -> int:
        try:
            return int(self.value(name))
        except ValueError:
            raise _NotFlat from None

    def boolean(self, name: str, default: bool | None = None) -> bool:
        value = self.fields.get(name)
        if value is None:
            if default is None:
                raise _NotFlat
            return default
        return value.lower() == "true"

    def has(self, name: str) -> bool:
        return f"<{name}>" in self.text_

    def permission_status(self) -> tuple[str, str, str]:
        if "<PERMISSION_STATUS>" not in self.text_:
            raise _NotFlat
        return (self.text("USERNAME"), self.text("GROUPNAME"),
                perms_to_octal(self.number("MODE")))

    def block_bytes(self) -> int:
        if self.text_.count("<BLOCK>") != len(self.blocks):
            raise _NotFlat
        try:
            return sum(map(int, self.blocks))
        except ValueError:
            raise _NotFlat from None


Translation = Callable[[_Fields, str], list[HdfsEvent]]


def _event(f: _Fields, cluster: str, index: int, type_: EventType, path: str,
           **values: object) -> HdfsEvent:
    return HdfsEvent(cluster=cluster, txid=f.txid, index=index, type=type_, path=path,
                     **values)  # type: ignore[arg-type]


def _add(f: _Fields, cluster: str) -> list[HdfsEvent]:
    path = f.text("PATH")
    if f.has("BLOCK"):  # an append, in layouts before OP_APPEND
        return [_event(f, cluster, 0, EventType.APPEND, path, new_block=False)]
    owner, group, perms = f.permission_status()
    ctime = f.number("ATIME")
    # Hadoop 3: erasureCoded = (policy id != REPLICATION_POLICY_ID (0)). Layouts before erasure
    # coding log no id, and AddCloseOp then keeps REPLICATION_POLICY_ID: not erasure coded.
    ec_policy = 0
    if f.has("ERASURE_CODING_POLICY_ID"):
        ec_policy = f.number("ERASURE_CODING_POLICY_ID")
    return [_event(
        f, cluster, 0, EventType.CREATE, path, timestamp=ctime, inode_type=INodeType.FILE,
        ctime=ctime, replication=f.number("REPLICATION"), owner=owner, group=group,
        perms=perms, overwrite=f.boolean("OVERWRITE", default=False),
        block_size=f.number("BLOCKSIZE"),
        erasure_coded=ec_policy != 0,
    )]


def _close(f: _Fields, cluster: str) -> list[HdfsEvent]:
    return [_event(f, cluster, 0, EventType.CLOSE, f.text("PATH"), size=f.block_bytes(),
                   timestamp=f.number("MTIME"))]


def _append(f: _Fields, cluster: str) -> list[HdfsEvent]:
    return [_event(f, cluster, 0, EventType.APPEND, f.text("PATH"),
                   new_block=f.boolean("NEWBLOCK"))]


def _concat_delete(f: _Fields, cluster: str) -> list[HdfsEvent]:
    target, ts = f.text("TRG"), f.number("TIMESTAMP")
    sources_node = f.data.find("SOURCES")
    if sources_node is None:
        raise f.missing("SOURCES")
    # Hadoop's ConcatDeleteOp.fromXml reads SOURCE1, SOURCE2, ... up to the first gap.
    sources = []
    while (src := sources_node.find(f"SOURCE{len(sources) + 1}")) is not None:
        sources.append(f.unmangled(src.tag, src.text or ""))
    events = [_event(f, cluster, 0, EventType.APPEND, target, new_block=False)]
    events += [_event(f, cluster, i, EventType.UNLINK, src, timestamp=ts)
               for i, src in enumerate(sources, start=1)]
    # Hadoop reports -1: the concatenated length is not in the op.
    events.append(_event(f, cluster, len(events), EventType.CLOSE, target, size=-1,
                         timestamp=ts))
    return events


def _rename(f: _Fields, cluster: str) -> list[HdfsEvent]:
    return [_event(f, cluster, 0, EventType.RENAME, f.text("SRC"), dst_path=f.text("DST"),
                   timestamp=f.number("TIMESTAMP"))]


def _delete(f: _Fields, cluster: str) -> list[HdfsEvent]:
    return [_event(f, cluster, 0, EventType.UNLINK, f.text("PATH"),
                   timestamp=f.number("TIMESTAMP"))]


def _mkdir(f: _Fields, cluster: str) -> list[HdfsEvent]:
    owner, group, perms = f.permission_status()
    ctime = f.number("TIMESTAMP")
    return [_event(f, cluster, 0, EventType.CREATE, f.text("PATH"), timestamp=ctime,
                   inode_type=INodeType.DIRECTORY, ctime=ctime, owner=owner, group=group,
                   perms=perms)]


def _symlink(f: _Fields, cluster: str) -> list[HdfsEvent]:
    owner, group, perms = f.permission_status()
    ctime = f.number("ATIME")
    return [_event(f, cluster, 0, EventType.CREATE, f.text("PATH"), timestamp=ctime,
                   inode_type=INodeType.SYMLINK, ctime=ctime, owner=owner, group=group,
                   perms=perms, symlink_target=f.text("VALUE"))]


def _metadata(f: _Fields, cluster: str, path: str, kind: MetadataType,
              **values: object) -> list[HdfsEvent]:
    return [_event(f, cluster, 0, EventType.METADATA, path, metadata_type=kind, **values)]


def _set_replication(f: _Fields, cluster: str) -> list[HdfsEvent]:
    return _metadata(f, cluster, f.text("PATH"), MetadataType.REPLICATION,
                     replication=f.number("REPLICATION"))


def _set_permissions(f: _Fields, cluster: str) -> list[HdfsEvent]:
    return _metadata(f, cluster, f.text("SRC"), MetadataType.PERMS,
                     perms=perms_to_octal(f.number("MODE")))


def _set_owner(f: _Fields, cluster: str) -> list[HdfsEvent]:
    # chown may set only the owner or only the group; Hadoop logs just what was given.
    return _metadata(f, cluster, f.text("SRC"), MetadataType.OWNER,
                     owner=f.optional_text("USERNAME"), group=f.optional_text("GROUPNAME"))


def _times(f: _Fields, cluster: str) -> list[HdfsEvent]:
    return _metadata(f, cluster, f.text("PATH"), MetadataType.TIMES,
                     mtime=f.number("MTIME"), atime=f.number("ATIME"))


def _xattrs(f: _Fields, cluster: str, removed: bool) -> list[HdfsEvent]:
    xattrs = tuple(
        XAttr(namespace=f.choice("NAMESPACE", XATTR_NAMESPACES, x), name=f.text("NAME", x),
              value=f.optional_text("VALUE", x))
        for x in f.data.iterfind("XATTR")
    )
    return _metadata(f, cluster, f.text("SRC"), MetadataType.XATTRS, xattrs=xattrs,
                     xattrs_removed=removed)


def _set_acl(f: _Fields, cluster: str) -> list[HdfsEvent]:
    return _metadata(f, cluster, f.text("SRC"), MetadataType.ACLS,
                     acls=tuple(_acl_entry(f, e) for e in f.data.iterfind("ENTRY")))


def _acl_entry(f: _Fields, entry: ET.Element) -> str:
    """Hadoop's AclEntry.toString: [default:]type:name:perm, e.g. "user:alice:rw-"."""
    scope = f.choice("SCOPE", _ACL_SCOPES, entry)
    type_ = f.choice("TYPE", _ACL_TYPES, entry)
    perm = f.choice("PERM", _FS_ACTIONS, entry)
    prefix = "default:" if scope == "DEFAULT" else ""
    return f"{prefix}{type_.lower()}:{f.optional_text('NAME', entry) or ''}:{perm}"


_ACL_SCOPES = frozenset({"ACCESS", "DEFAULT"})
_ACL_TYPES = frozenset({"USER", "GROUP", "MASK", "OTHER"})
_FS_ACTIONS = frozenset({"---", "--x", "-w-", "-wx", "r--", "r-x", "rw-", "rwx"})  # FsAction.SYMBOL


def _truncate(f: _Fields, cluster: str) -> list[HdfsEvent]:
    return [_event(f, cluster, 0, EventType.TRUNCATE, f.text("SRC"),
                   size=f.number("NEWLENGTH"), timestamp=f.number("TIMESTAMP"))]


TRANSLATIONS: dict[str, Translation] = {
    "OP_ADD": _add,
    "OP_CLOSE": _close,
    "OP_APPEND": _append,
    "OP_CONCAT_DELETE": _concat_delete,
    "OP_RENAME_OLD": _rename,
    "OP_RENAME": _rename,
    "OP_DELETE": _delete,
    "OP_MKDIR": _mkdir,
    "OP_SYMLINK": _symlink,
    "OP_SET_REPLICATION": _set_replication,
    "OP_SET_PERMISSIONS": _set_permissions,
    "OP_SET_OWNER": _set_owner,
    "OP_TIMES": _times,
    "OP_SET_XATTR": lambda f, c: _xattrs(f, c, removed=False),
    "OP_REMOVE_XATTR": lambda f, c: _xattrs(f, c, removed=True),
    "OP_SET_ACL": _set_acl,
    "OP_TRUNCATE": _truncate,
}


def translate_op(op: EditOp, cluster: str, *, source: str = "<edits>",
                 stats: TranslationStats | None = None) -> list[HdfsEvent]:
    """The events of one op, indexed from 0 within its txid."""
    translation = TRANSLATIONS.get(op.opcode)
    if translation is None:
        if stats is not None and op.opcode not in SILENT_OPCODES:
            stats.unknown_opcodes[op.opcode] += 1
        return []
    raw = op.data_bytes if op.opcode in _FLAT_OPCODES else None
    if raw is not None:
        try:
            return translation(_FlatFields(op, raw), cluster)  # type: ignore[arg-type]
        except _NotFlat:
            pass
    return translation(_Fields(op, source), cluster)


# The ops that make up nearly every namespace change, all read through text/number/boolean/
# has/permission_status/block_bytes only (what _FlatFields offers).
_FLAT_OPCODES = frozenset({"OP_ADD", "OP_CLOSE", "OP_APPEND", "OP_RENAME_OLD", "OP_RENAME",
                           "OP_DELETE", "OP_MKDIR", "OP_SET_REPLICATION", "OP_SET_PERMISSIONS",
                           "OP_TIMES", "OP_TRUNCATE"})


def _translated(ops: Iterable[EditOp], cluster: str, source: str, from_txid: int | None,
                to_txid: int | None, stats: TranslationStats) -> Iterator[tuple[int, list[HdfsEvent]]]:
    """(txid, events) of every op with from_txid < txid <= to_txid, counted in `stats`."""
    for op in ops:
        if from_txid is not None and op.txid <= from_txid:
            continue
        if to_txid is not None and op.txid > to_txid:
            break
        stats.ops += 1
        events = translate_op(op, cluster, source=source, stats=stats)
        stats.events += len(events)
        yield op.txid, events


def translate_ops(ops: Iterable[EditOp], cluster: str, *, source: str = "<edits>",
                  from_txid: int | None = None, to_txid: int | None = None,
                  stats: TranslationStats | None = None) -> Iterator[HdfsEvent]:
    """Events of ops with from_txid < txid <= to_txid (inotify's "after txid N" convention)."""
    # No TxBatch per op here: most ops are block bookkeeping with no event.
    stats = stats if stats is not None else TranslationStats()
    for _, events in _translated(ops, cluster, source, from_txid, to_txid, stats):
        yield from events


def translate_batches(ops: Iterable[EditOp], cluster: str, *, source: str = "<edits>",
                      from_txid: int | None = None, to_txid: int | None = None,
                      stats: TranslationStats | None = None) -> Iterator[TxBatch]:
    """One TxBatch per op in range that yields events, in order, and an empty one for the last
    op when it yields none, so the checkpoint moves past the no-event ops (block allocations
    dominate real logs) at the end of a file.

    Ops without events in between are not handed on: a batch of txid t tells the pipeline that
    every lower txid is done (txids come in order), so they only let a message opened at t rest
    on t - 1 instead of the txid of the event before; on a restart the checkpoint may sit a few
    no-event ops lower, which yield nothing again. Two thirds of a log's ops are such ops, and
    the pipeline's loop over them was ~0.15 us an event on bench.ship."""
    stats = stats if stats is not None else TranslationStats()
    last: int | None = None  # the txid of the last op read, when it yielded no event
    for txid, events in _translated(ops, cluster, source, from_txid, to_txid, stats):
        if events:
            last = None
            yield TxBatch(txid=txid, events=tuple(events))
        else:
            last = txid
    if last is not None:
        yield TxBatch(txid=last, events=())
