"""The contract's rules on content: what a valid event, message body and manifest may hold.

One validation for every component: the agent checks each event before it packs it, the
consumer and the Glue compaction after they read it. Every rule names the field it checks and
the limit, and every limit says where its number comes from:

- Hadoop: txid is a Java long (FSEditLog); an event's index is its position in an EventBatch's
  Java array (an int); replication is a Java short; times are epoch milliseconds.
- HDFS paths: absolute and normalized, as DFSUtil.isValidName requires of every path the
  NameNode accepts (no empty, "." or ".." component); components at most
  255 UTF-8 bytes (dfs.namenode.fs-limits.max-component-length, default 255); at most 8,000
  characters and 1,000 components (HdfsServerConstants.MAX_PATH_LENGTH / MAX_PATH_DEPTH).
- DynamoDB: the namespace index keys an entry by "<cluster>#<parent dir>" (partition key, at most
  2,048 bytes) and the entry name (sort key, at most 1,024 bytes; an HDFS component is <= 255);
  a Number holds 38 digits (every bound here is a Java long, 19 digits); an item holds 400 KB,
  which the string bounds below keep an entry's few copies of its strings far under.
- Python: a lake partition is a `datetime`, which ends at year 9999.

JSON text is read by `parse_json`: nesting depth bounded before parsing (CPython's parser
recurses and raises RecursionError on deep input), duplicate keys rejected (json keeps the last
silently), NaN/Infinity refused, integers longer than Python's int-string limit reported as a
rule, not a crash.
"""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from hdfs_events.event import (
    _ACL_ENTRY,
    _ENUMS,
    _PERMS,
    FIELD_SET,
    EventFormatError,
    EventType,
    HdfsEvent,
)
from hdfs_events.ids import CLUSTER_NAME
from hdfs_events.names import POSITION_TXID_DONE, index_partition, split_path

JAVA_LONG_MAX = 2**63 - 1
JAVA_SHORT_MAX = 2**15 - 1
JAVA_INT_MAX = 2**31 - 1
# An index below the sequencer's "whole txid applied" marker (names.POSITION_TXID_DONE), which
# is Java's int maximum: EventBatch indices are Java array positions anyway.
MAX_INDEX = POSITION_TXID_DONE - 1
# 9999-12-31T23:59:59.999Z: the last millisecond a Python datetime (the lake's partition) holds.
MAX_TIME_MS = 253_402_300_799_999
MAX_COMPONENT_BYTES = 255  # dfs.namenode.fs-limits.max-component-length default
MAX_PATH_CHARS = 8_000  # HdfsServerConstants.MAX_PATH_LENGTH
MAX_PATH_DEPTH = 1_000  # HdfsServerConstants.MAX_PATH_DEPTH
MAX_PARTITION_KEY_BYTES = 2_048  # DynamoDB partition key
MAX_SORT_KEY_BYTES = 1_024  # DynamoDB sort key
# User and group names: Linux allows 32 characters, Kerberos short names are similar; 256
# leaves room for any directory service and bounds the index entry.
MAX_NAME_CHARS = 256
MAX_ACL_ENTRIES = 32  # Hadoop's AclTransformation.MAX_ENTRIES
MAX_ACL_ENTRY_CHARS = 2 * MAX_NAME_CHARS
MAX_XATTRS = 32  # dfs.namenode.fs-limits.max-xattrs-per-inode default
MAX_XATTR_BYTES = 16_384  # dfs.namenode.fs-limits.max-xattr-size default (name + value)
# Nesting of a valid body: envelope {events [ event {xattrs [ xattr { }]}]} is 4 deep; a copy
# request's manifest 3. 16 refuses hostile input long before CPython's recursion limit.
MAX_JSON_DEPTH = 16
# Shown of an offending value in a reason: reasons end up in log lines and quarantine objects.
PREVIEW_CHARS = 80

_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'[]{}"')
_INNERMOST_PAIRS = re.compile(rb"\[\]|\{\}")
_INT_FIELDS: dict[str, tuple[int, int]] = {
    "txid": (0, JAVA_LONG_MAX),
    "index": (0, MAX_INDEX),
    "gap_end_txid": (0, JAVA_LONG_MAX),
    "children_num": (0, JAVA_INT_MAX),  # INodeDirectory counts its children in a Java int
    # The lake partitions by `timestamp`: it must be a date.
    "timestamp": (0, MAX_TIME_MS),
    # HDFS writes -1 for "not set" in times and for a CLOSE after a concat's size.
    "ctime": (-1, MAX_TIME_MS),
    "mtime": (-1, MAX_TIME_MS),
    "atime": (-1, MAX_TIME_MS),
    "size": (-1, JAVA_LONG_MAX),
    "block_size": (0, JAVA_LONG_MAX),
    "replication": (0, JAVA_SHORT_MAX),
}
_NAME_FIELDS = ("owner", "group")
# Fields Hadoop's event of the type always carries (Event.RenameEvent.getDstPath, ...).
_REQUIRED_BY_TYPE: dict[EventType, tuple[str, ...]] = {
    EventType.CREATE: ("inode_type",),
    EventType.RENAME: ("dst_path",),
    EventType.METADATA: ("metadata_type",),
    EventType.SNAPSHOT: ("inode_type",),
}


# The rules above as tables, for checks built elsewhere from the same definitions (the Glue
# compaction's Spark SQL pre-check, glue_jobs/contract_sql.py); read-only views, no copies.
INT_FIELD_RANGES: Mapping[str, tuple[int, int]] = MappingProxyType(_INT_FIELDS)
REQUIRED_BY_TYPE: Mapping[EventType, tuple[str, ...]] = MappingProxyType(_REQUIRED_BY_TYPE)
NAME_FIELDS: tuple[str, ...] = _NAME_FIELDS
# HdfsEvent.from_dict's own rules (hdfs_events.event), named here beside the limits.
ENUM_FIELDS: Mapping[str, type[StrEnum]] = MappingProxyType(_ENUMS)
PERMS_PATTERN: str = _PERMS.pattern
ACL_ENTRY_PATTERN: str = _ACL_ENTRY.pattern


class JsonTextError(ValueError):
    """JSON text the contract refuses; the message completes "<what> ..." with the rule.
    `field` is the key at fault where there is one (a duplicated key)."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


def preview(value: Any) -> str:
    """repr() of a value cut to PREVIEW_CHARS: what a reason may quote of untrusted input."""
    text = repr(value)
    return text if len(text) <= PREVIEW_CHARS else f"{text[:PREVIEW_CHARS]}... ({len(text)} chars)"


def parse_json(text: str, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """The JSON value of `text`, or JsonTextError naming the rule it breaks."""
    depth = nesting_depth(text, max_depth)
    if depth > max_depth:
        raise JsonTextError(f"nests deeper than {max_depth} levels")
    try:
        return json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
    except JsonTextError:
        raise
    except json.JSONDecodeError as exc:
        raise JsonTextError(f"is not JSON: {exc}") from exc
    except ValueError as exc:
        # CPython refuses an integer of over 4,300 digits before converting it (the int-string
        # limit); shorter ones convert in microseconds and fail the field's range check.
        raise JsonTextError(f"holds a number too long to read: {preview(str(exc))}") from exc
    except RecursionError as exc:  # nesting_depth counts only balanced brackets
        raise JsonTextError(f"nests deeper than {max_depth} levels") from exc


def nesting_depth(text: str, limit: int) -> int:
    """How deep brackets nest outside strings, counted up to limit + 1.

    Byte operations instead of a character loop: a body is up to 64 MiB decompressed, and each
    step here runs in C (a 1.3 MB envelope in ~6 ms, json.loads takes ~9). Escaped
    backslashes and quotes go first (JSON pairs backslashes left to right, as `replace` does),
    then everything but brackets and quotes, then what quotes enclose; each pass then removes
    the innermost `[]`/`{}` pairs, so after k passes only nesting deeper than k is left.
    Unmatched brackets are left for the JSON parser to report."""
    raw = text.encode("utf-8", "surrogatepass").replace(b"\\\\", b"").replace(b'\\"', b"")
    # Between the n-th and (n+1)-th quote is a string when n is odd: keep the even pieces.
    brackets = b"".join(raw.translate(None, _NOT_STRUCTURE).split(b'"')[::2])
    depth = 0
    while depth <= limit:
        inner = _INNERMOST_PAIRS.sub(b"", brackets)
        if inner == brackets:  # nothing left, or only unmatched brackets (json says so)
            return depth
        brackets, depth = inner, depth + 1
    return depth


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    d = dict(pairs)
    if len(d) != len(pairs):
        twice = next(k for k, n in Counter(k for k, _ in pairs).items() if n > 1)
        raise JsonTextError(f"has key {preview(twice)} twice in one object", field=twice)
    return d


def _no_constant(name: str) -> Any:
    raise JsonTextError(f"holds {name}, which is not a JSON number")


def check_event(event: HdfsEvent) -> None:
    """Raises EventFormatError naming the field and the rule when `event` breaks the contract
    beyond its types (HdfsEvent.from_dict checks those): ranges, paths, string sizes."""
    if not CLUSTER_NAME.fullmatch(event.cluster):
        raise EventFormatError(f"field 'cluster': cluster name {preview(event.cluster)} is not "
                               "valid: use 1-63 letters, digits, '_', '.' or '-'")
    for name, (low, high) in _INT_FIELDS.items():
        value = getattr(event, name)
        if value is not None and not low <= value <= high:
            raise EventFormatError(f"field '{name}' must be in {low}..{high}, got "
                                   f"{preview(value)}")
    for name in _REQUIRED_BY_TYPE.get(event.type, ()):
        if getattr(event, name) is None:
            raise EventFormatError(f"a {event.type} needs '{name}'")
    check_path(event.cluster, event.path, "path")
    if event.dst_path is not None:
        check_path(event.cluster, event.dst_path, "dst_path")
    if event.symlink_target is not None:
        _check_text(event.symlink_target, "symlink_target", MAX_PATH_CHARS)
    for name in _NAME_FIELDS:
        value = getattr(event, name)
        if value is not None:
            _check_text(value, name, MAX_NAME_CHARS)
    # The patterns HdfsEvent.from_dict (the consumer's decode) holds them to: an event that
    # passed here and failed there would have its whole message quarantined.
    if event.perms is not None and not _PERMS.fullmatch(event.perms):
        raise EventFormatError(f"field 'perms' must be 4 octal digits, got "
                               f"{preview(event.perms)}")
    if event.acls is not None:
        if len(event.acls) > MAX_ACL_ENTRIES:
            raise EventFormatError(f"field 'acls' holds {len(event.acls)} entries; Hadoop "
                                   f"allows {MAX_ACL_ENTRIES}")
        for entry in event.acls:
            _check_text(entry, "acls", MAX_ACL_ENTRY_CHARS)
            if not _ACL_ENTRY.fullmatch(entry):
                raise EventFormatError("field 'acls' must hold AclEntry strings like "
                                       f"'user:alice:rw-', got {preview(entry)}")
    if event.xattrs is not None:
        if len(event.xattrs) > MAX_XATTRS:
            raise EventFormatError(f"field 'xattrs' holds {len(event.xattrs)} entries; HDFS "
                                   f"allows {MAX_XATTRS}")
        for x in event.xattrs:
            _check_text(x.name, "xattrs", MAX_XATTR_BYTES)
            if x.value is not None:
                # Hadoop prints the value as "0x" and two hex digits a byte.
                _check_text(x.value, "xattrs", 2 + 2 * MAX_XATTR_BYTES)
    if event.type == EventType.GAP and not (event.gap_end_txid or 0) > event.txid:
        raise EventFormatError(f"a GAP needs 'gap_end_txid' > txid {event.txid}")


def check_path(cluster: str, path: str, field: str) -> None:
    """An HDFS path as the NameNode gives it, storable as a namespace index key."""
    if not path.startswith("/"):
        raise EventFormatError(f"field '{field}' must be an absolute HDFS path, got "
                               f"{preview(path)}")
    if len(path) > MAX_PATH_CHARS:
        raise EventFormatError(f"field '{field}' is {len(path)} characters; HDFS allows "
                               f"{MAX_PATH_CHARS}")
    if "\0" in path:
        raise EventFormatError(f"field '{field}' holds a NUL character")
    encoded = _utf8(path, field)
    if path == "/":
        return
    # Fast path for the common case: nothing that could be an empty, "." or ".." component,
    # nor a component over the limit. A ':' is not refused: DFSUtil.isValidName refuses it in
    # new names over RPC, but namespaces older than that check and other gateways hold such
    # names, the agent must still report them, and the index stores them as any other.
    if ("//" in path or "/." in path or path.endswith("/")
            or len(encoded) > MAX_COMPONENT_BYTES):
        components = path[1:].split("/")
        if len(components) > MAX_PATH_DEPTH:
            raise EventFormatError(f"field '{field}' has {len(components)} components; HDFS "
                                   f"allows {MAX_PATH_DEPTH}")
        for part in components:
            if part in ("", ".", ".."):
                raise EventFormatError(f"field '{field}' is not normalized: component "
                                       f"{part!r} in {preview(path)}")
            size = len(part.encode("utf-8"))
            if size > MAX_COMPONENT_BYTES:
                raise EventFormatError(f"field '{field}' has a component of {size} bytes; HDFS "
                                       f"allows {MAX_COMPONENT_BYTES}")
    parent, _ = split_path(path)
    key_bytes = len(index_partition(cluster, parent).encode("utf-8"))
    if key_bytes > MAX_PARTITION_KEY_BYTES:
        raise EventFormatError(
            f"field '{field}': the index key '<cluster>#<parent dir>' would be {key_bytes} "
            f"bytes; DynamoDB allows {MAX_PARTITION_KEY_BYTES} for a partition key")


def _check_text(value: str, field: str, max_chars: int) -> None:
    if len(value) > max_chars:
        raise EventFormatError(f"field '{field}' is {len(value)} characters; the contract "
                               f"allows {max_chars}")
    _utf8(value, field)


def _utf8(value: str, field: str) -> bytes:
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError as exc:
        # JSON's \ud800 escapes decode to lone surrogates, which no UTF-8 writer can store.
        raise EventFormatError(f"field '{field}' is not valid Unicode: {exc.reason} at "
                               f"character {exc.start}") from exc


def check_message_events(events: Sequence[HdfsEvent]) -> None:
    """What one message's events must hold together: one cluster, (txid, index) increasing.
    Raises EventFormatError naming the event."""
    if not events:
        raise EventFormatError("a message needs at least one event")
    cluster = events[0].cluster
    for i, (a, b) in enumerate(itertools.pairwise(events), start=1):
        if b.cluster != cluster:
            raise EventFormatError(f"event {i}: cluster {preview(b.cluster)} in a message of "
                                   f"{cluster!r}")
        if (b.txid, b.index) <= (a.txid, a.index):
            raise EventFormatError(f"event {i}: (txid, index) ({b.txid}, {b.index}) does not "
                                   f"follow ({a.txid}, {a.index})")


def split_known_fields(doc: Any) -> tuple[Any, dict[str, Any]]:
    """(the fields this contract knows, the others) of an event object; anything else whole.

    The others are a newer minor's (docs/contract.md, "Versions"): kept, never checked."""
    if not isinstance(doc, dict):
        return doc, {}
    known = {k: v for k, v in doc.items() if k in FIELD_SET}
    return known, {k: v for k, v in doc.items() if k not in FIELD_SET}


def event_from_line(line: str) -> HdfsEvent:
    """One raw lake line as a checked event; EventFormatError if not. The consumer wrote the
    line canonical, followed by any fields of a newer minor: those are not this reader's."""
    try:
        doc = parse_json(line)
    except JsonTextError as exc:
        raise EventFormatError(f"line {exc}") from exc
    event = HdfsEvent.from_dict(split_known_fields(doc)[0])
    check_event(event)
    return event


def line_problem(line: str) -> str | None:
    """Why a raw lake line breaks the contract, or None: the Glue compaction's check."""
    try:
        event_from_line(line)
    except ValueError as exc:
        return str(exc)
    return None
