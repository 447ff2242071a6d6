"""The event record: one HDFS namespace change, named as Hadoop's inotify API names it.

Fields follow org.apache.hadoop.hdfs.inotify.Event.* in snake_case. Every event carries the
common key (cluster, txid, index) that makes it unique: `index` is its position inside the
EventBatch of its txid, because one transaction can yield several events (OP_CONCAT_DELETE
gives APPEND, one UNLINK per source, then CLOSE, all under one txid).

Canonical JSON has every field of FIELDS on every event, in that order, with null where the
event type has no such value: the raw lake's line. A fixed key set keeps the lake's schema
stable for Spark, Athena and jq alike. On the wire (the SQS envelope) an event travels as its
sparse JSON, the canonical JSON without its null fields: half the bytes on bench.ship's log (267
against 535), and gzip spends ~25 % less CPU on it in the agent. Every reader takes a missing
field as null (`from_dict`), so agents that still send the nulls are read alike.
"""

from __future__ import annotations

import json
import re
from dataclasses import MISSING, asdict, dataclass, fields
from enum import StrEnum
from typing import Any


class EventType(StrEnum):
    CREATE = "CREATE"
    CLOSE = "CLOSE"
    APPEND = "APPEND"
    RENAME = "RENAME"
    METADATA = "METADATA"
    UNLINK = "UNLINK"
    TRUNCATE = "TRUNCATE"
    # Not Hadoop inotify types: records the agent adds to the stream itself.
    # GAP: edits the NameNode purged before the agent read them, txids [txid, gap_end_txid).
    GAP = "GAP"
    # SNAPSHOT: the state of one path as listed after a GAP, at the NameNode txid taken before
    # the listing began (every change after it follows in the stream).
    SNAPSHOT = "SNAPSHOT"


class INodeType(StrEnum):
    FILE = "FILE"
    DIRECTORY = "DIRECTORY"
    SYMLINK = "SYMLINK"


class MetadataType(StrEnum):
    TIMES = "TIMES"
    REPLICATION = "REPLICATION"
    OWNER = "OWNER"
    PERMS = "PERMS"
    ACLS = "ACLS"
    XATTRS = "XATTRS"


@dataclass(frozen=True, slots=True)
class XAttr:
    namespace: str  # USER, TRUSTED, SECURITY, SYSTEM, RAW
    name: str
    value: str | None  # hex as Hadoop prints it ("0x313233"); None when removed or empty


@dataclass(frozen=True, slots=True)
class HdfsEvent:
    cluster: str
    txid: int
    index: int
    type: EventType
    path: str  # RENAME: the source path
    dst_path: str | None = None
    # NameNode time of the change in epoch ms, where Hadoop's event carries one: CREATE (ctime),
    # CLOSE, RENAME, UNLINK, TRUNCATE. APPEND and METADATA carry none in Hadoop, so none here.
    timestamp: int | None = None
    # CREATE
    inode_type: INodeType | None = None
    ctime: int | None = None
    replication: int | None = None  # also METADATA REPLICATION
    owner: str | None = None  # also METADATA OWNER
    group: str | None = None  # also METADATA OWNER
    perms: str | None = None  # octal, e.g. "0644"; also METADATA PERMS
    symlink_target: str | None = None
    overwrite: bool | None = None
    block_size: int | None = None
    erasure_coded: bool | None = None
    # CLOSE, TRUNCATE (CLOSE after a concat reports -1, as Hadoop does)
    size: int | None = None
    # APPEND
    new_block: bool | None = None
    # METADATA
    metadata_type: MetadataType | None = None
    mtime: int | None = None
    atime: int | None = None
    acls: tuple[str, ...] | None = None  # Hadoop's AclEntry strings, e.g. "user:alice:rw-"
    xattrs: tuple[XAttr, ...] | None = None
    xattrs_removed: bool | None = None
    # GAP: the first txid the NameNode still had; txids txid .. gap_end_txid-1 are lost.
    gap_end_txid: int | None = None
    # SNAPSHOT of a directory: how many children the listing says it has (HdfsFileStatus
    # .getChildrenNum, which listStatus returns with each directory). Null: not known (agents
    # before it; every other record). The consumer shards a crowded directory from it.
    children_num: int | None = None

    @property
    def key(self) -> tuple[str, int, int]:
        """The exactly-once key of the product."""
        return (self.cluster, self.txid, self.index)

    def to_dict(self) -> dict[str, Any]:
        # Not dataclasses.asdict: it deep-copies every field and costs ~5x more on the agent's
        # hot path. Enum members are str subclasses, so json writes them as their values.
        d = {name: getattr(self, name) for name in FIELDS}
        if self.acls is not None:
            d["acls"] = list(self.acls)
        if self.xattrs is not None:
            d["xattrs"] = [asdict(x) for x in self.xattrs]
        return d

    def to_json(self) -> str:
        """The canonical JSON: every field, null where the event has no value (the lake)."""
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"))

    def to_sparse_json(self) -> str:
        """The canonical JSON without its null fields, in the same order (the wire)."""
        return json.dumps({k: v for k, v in self.to_dict().items() if v is not None},
                          ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> HdfsEvent:
        """Builds an event from its canonical or sparse dict (a missing field is null);
        raises EventFormatError naming the field."""
        if not isinstance(d, dict):
            raise EventFormatError(f"event must be a JSON object, got {type(d).__name__}")
        unknown = d.keys() - FIELD_SET
        if unknown:
            raise EventFormatError(f"unknown field(s) {sorted(unknown)}")
        for name in REQUIRED:
            if d.get(name) is None:
                raise EventFormatError(f"missing required field '{name}'")
        kw = {k: v for k, v in d.items() if v is not None}
        try:
            for name, conv in _ENUMS.items():
                if name in kw:
                    kw[name] = conv(kw[name])
        except ValueError as exc:
            raise EventFormatError(str(exc)) from exc
        for name, typ in _SCALARS.items():
            value = kw.get(name)
            if value is not None and not _is_instance(value, typ):
                raise EventFormatError(f"field '{name}' must be {typ.__name__}, got {value!r}")
        for name in ("txid", "index", "gap_end_txid", "children_num"):
            if kw.get(name, 0) < 0:
                raise EventFormatError(f"field '{name}' must be >= 0, got {kw[name]}")
        if kw["type"] == EventType.GAP and not kw.get("gap_end_txid", -1) > kw["txid"]:
            raise EventFormatError(
                f"a GAP needs 'gap_end_txid' > txid {kw['txid']}, got {kw.get('gap_end_txid')!r}")
        if kw["type"] == EventType.SNAPSHOT and "inode_type" not in kw:
            raise EventFormatError("a SNAPSHOT needs 'inode_type'")
        if "perms" in kw and not _PERMS.fullmatch(kw["perms"]):
            raise EventFormatError(f"field 'perms' must be 4 octal digits, got {kw['perms']!r}")
        if "acls" in kw:
            acls = kw["acls"]
            if not isinstance(acls, list) or not all(
                    isinstance(a, str) and _ACL_ENTRY.fullmatch(a) for a in acls):
                raise EventFormatError(
                    "field 'acls' must be a list of AclEntry strings like 'user:alice:rw-'")
            kw["acls"] = tuple(acls)
        if "xattrs" in kw:
            kw["xattrs"] = tuple(_xattr_from_dict(x) for x in _as_list(kw["xattrs"], "xattrs"))
        return cls(**kw)


def _slot_setter_init(cls: type) -> None:
    """Replaces a frozen slotted dataclass's __init__ by one with the same signature that
    writes each slot through its descriptor's __set__.

    dataclass(frozen=True) writes every field with object.__setattr__, which looks the name up
    in the type on each call; for the 25 fields of an event that is ~2.5x slower, and the
    agent builds events at 100k+/s. Generated from fields() so it cannot drift from them.
    """
    names = [f.name for f in fields(cls)]
    params = ", ".join(n if f.default is MISSING else f"{n}={n}_default"
                       for n, f in zip(names, fields(cls), strict=True))
    lines = [f"def __init__(self, {params}):"]
    lines += [f"    {n}_set(self, {n})" for n in names]
    scope: dict[str, Any] = {f"{n}_set": cls.__dict__[n].__set__ for n in names}
    scope.update({f"{f.name}_default": f.default for f in fields(cls) if f.default is not MISSING})
    namespace: dict[str, Any] = {}
    exec(compile("\n".join(lines), f"<{cls.__name__}.__init__>", "exec"), scope, namespace)
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__name__}.__init__"
    init.__doc__ = cls.__init__.__doc__
    cls.__init__ = init  # type: ignore[misc]


_slot_setter_init(HdfsEvent)


class EventFormatError(ValueError):
    """An event object that does not follow the contract."""


FIELDS: tuple[str, ...] = tuple(f.name for f in fields(HdfsEvent))
FIELD_SET = frozenset(FIELDS)
REQUIRED = ("cluster", "txid", "index", "type", "path")
XATTR_NAMESPACES = frozenset({"USER", "TRUSTED", "SECURITY", "SYSTEM", "RAW"})  # XAttr.NameSpace
_XATTR_KEYS = frozenset({"namespace", "name", "value"})
_PERMS = re.compile(r"[0-7]{4}")
# Hadoop's AclEntry.toStringStable: [default:]type:name:perm, perm an FsAction symbol.
_ACL_ENTRY = re.compile(r"(default:)?(user|group|mask|other):[^:]*:[r-][w-][x-]")
_ENUMS = {"type": EventType, "inode_type": INodeType, "metadata_type": MetadataType}
_SCALARS: dict[str, type] = {
    "cluster": str, "txid": int, "index": int, "path": str, "dst_path": str,
    "timestamp": int, "ctime": int, "replication": int, "owner": str, "group": str,
    "perms": str, "symlink_target": str, "overwrite": bool, "block_size": int,
    "erasure_coded": bool, "size": int, "new_block": bool, "mtime": int, "atime": int,
    "xattrs_removed": bool, "gap_end_txid": int, "children_num": int,
}


def _is_instance(value: Any, typ: type) -> bool:
    # bool is an int subclass in Python; JSON true must not pass as a txid.
    if typ is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, typ)


def _as_list(value: Any, name: str) -> list[Any]:
    if not isinstance(value, list):
        raise EventFormatError(f"field '{name}' must be a list")
    return value


def _xattr_from_dict(x: Any) -> XAttr:
    if not isinstance(x, dict) or not isinstance(x.get("namespace"), str) or not isinstance(
        x.get("name"), str
    ):
        raise EventFormatError("each xattr needs string 'namespace' and 'name'")
    if x.keys() - _XATTR_KEYS:
        raise EventFormatError(f"unknown xattr field(s) {sorted(x.keys() - _XATTR_KEYS)}")
    if x["namespace"] not in XATTR_NAMESPACES:
        raise EventFormatError(
            f"xattr namespace {x['namespace']!r} is not one of {sorted(XATTR_NAMESPACES)}")
    value = x.get("value")
    if value is not None and not isinstance(value, str):
        raise EventFormatError("xattr 'value' must be a string or null")
    return XAttr(namespace=x["namespace"], name=x["name"], value=value)


# Every permission string, made once: the events of a stream share them (an agent holding
# thousands of events in flight holds 1,024 strings, not one each).
_PERMS_OCTAL = tuple(f"{mode:04o}" for mode in range(0o2000))


def perms_to_octal(mode: int) -> str:
    """FsPermission as a 4-digit octal string: sticky bit and rwx bits ("1777", "0644").

    FsPermission.fromShort keeps bits 0-9 only (rwx x3 and sticky; HDFS has no setuid/setgid),
    so higher bits in a MODE are dropped as Hadoop drops them.
    """
    return _PERMS_OCTAL[mode & 0o1777]
