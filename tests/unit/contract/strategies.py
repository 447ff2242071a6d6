"""Hypothesis strategies for contract records: every field, every type, awkward text."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import strategies as st

from hdfs_events.event import EventType, HdfsEvent, INodeType, MetadataType, XAttr

# Any text a Java String could hold after oev's unmangling that is valid UTF-8.
text = st.text(st.characters(exclude_categories=["Cs"]), max_size=40)
# A path component the NameNode accepts (hdfs_events.validation.check_path).
component = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="/\0"),
                    min_size=1, max_size=40).filter(lambda s: s not in (".", ".."))
paths = st.lists(component, min_size=0, max_size=6).map(lambda parts: "/" + "/".join(parts))
int64 = st.integers(0, 2**63 - 1)
times = st.none() | st.integers(-1, 253_402_300_799_999)
maybe_int = st.none() | int64
maybe_bool = st.none() | st.booleans()
perms = st.integers(0, 0o1777).map(lambda m: f"{m:04o}")
acl_entry = st.builds(
    lambda default, kind, name, perm: f"{'default:' if default else ''}{kind}:{name}:{perm}",
    st.booleans(), st.sampled_from(["user", "group", "mask", "other"]),
    st.text(st.characters(exclude_categories=["Cs"], exclude_characters=":"), max_size=12),
    st.sampled_from(["---", "--x", "-w-", "-wx", "r--", "r-x", "rw-", "rwx"]))
xattr = st.builds(XAttr, namespace=st.sampled_from(["USER", "TRUSTED", "SECURITY", "SYSTEM",
                                                    "RAW"]),
                  name=text, value=st.none() | st.binary(max_size=16).map(lambda b: "0x" + b.hex()))

events = st.builds(
    HdfsEvent,
    cluster=st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}", fullmatch=True),
    txid=st.integers(0, 2**63 - 1), index=st.integers(0, 2**20),
    type=st.sampled_from(EventType), path=paths, dst_path=st.none() | paths,
    timestamp=st.none() | st.integers(0, 253_402_300_799_999),
    inode_type=st.none() | st.sampled_from(INodeType), ctime=times,
    replication=st.none() | st.integers(0, 2**15 - 1), owner=st.none() | text, group=st.none() | text,
    perms=st.none() | perms, symlink_target=st.none() | paths, overwrite=maybe_bool,
    block_size=maybe_int, erasure_coded=maybe_bool, size=st.none() | st.integers(-1, 2**63 - 1),
    new_block=maybe_bool, metadata_type=st.none() | st.sampled_from(MetadataType), mtime=times,
    atime=times,
    acls=st.none() | st.lists(acl_entry, max_size=4).map(tuple),
    xattrs=st.none() | st.lists(xattr, max_size=3).map(tuple), xattrs_removed=maybe_bool,
    gap_end_txid=st.none() | st.integers(0, 2**63 - 1),
    children_num=st.none() | st.integers(0, 2**31 - 1),
).map(lambda e: _valid_agent_record(e))


def _valid_agent_record(e: HdfsEvent) -> HdfsEvent:
    """Types with required fields of their own (hdfs_events.validation checks them)."""
    if e.type == EventType.GAP:
        # txid + 1 stays within int64 (the lake's column type): step back from the top.
        txid = min(e.txid, 2**63 - 1001)
        return replace(e, txid=txid, gap_end_txid=txid + 1 + (e.gap_end_txid or 0) % 1000)
    if e.type in (EventType.SNAPSHOT, EventType.CREATE) and e.inode_type is None:
        return replace(e, inode_type=INodeType.FILE)
    if e.type == EventType.RENAME and e.dst_path is None:
        return replace(e, dst_path=e.path + "-renamed" if e.path != "/" else "/renamed")
    if e.type == EventType.METADATA and e.metadata_type is None:
        return replace(e, metadata_type=MetadataType.TIMES)
    return e


def ordered_run(cluster: str = "c1") -> st.SearchStrategy[list[HdfsEvent]]:
    """Events of one cluster in strictly increasing (txid, index) order, as a message holds."""
    return st.lists(events, min_size=1, max_size=30).map(lambda evs: [
        _valid_agent_record(replace(e, cluster=cluster, txid=100 + i // 3, index=i % 3))
        for i, e in enumerate(evs)])
