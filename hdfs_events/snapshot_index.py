"""A snapshot of the covered namespace at txid T as index items: the same items the consumer
holds after applying the agent's SNAPSHOT records of it, built from any source of the paths'
states (the agent's listing, or a namespace image decoded by glue_jobs/image_index.py).

The agent numbers a snapshot's records 0..n-1 in its walk order (onprem_agent/live/snapshot.py):
the covered roots in sorted order, each a pre-order depth-first walk, a directory's children
in the NameNode's order. `walk_key` sorts paths into exactly that order, so a writer that sees
the paths in any order (a Spark job) gives each the (T, index) the listing would have. It is one
string compared by code point, which Spark's string order is too (UTF-8 bytes, unsigned), so a
Spark job computes the same key with `translate` over `WALK_KEY_BYTES` and sorts in the JVM.

Records of one snapshot commute: each is a blind put of a path's final state at (T, i), and on a
first start the index holds nothing older. So they may be written in any order by many writers,
and a rerun writes the same items (exactly once by key).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from hdfs_events.index_item import INDEX_SHARDS, IndexItem

FILE, DIRECTORY, SYMLINK = "FILE", "DIRECTORY", "SYMLINK"
# A directory receiving more child writes than this in one chunk is sharded (index_item.py):
# the sequencer applies a cluster's chunks one after another, CHUNK_EVENTS (1,000) events each,
# so 10,000 creates/s is about 10 chunks a second, and below this a directory takes under
# 10 x 100 writes a second, DynamoDB's 1,000 WCU/s for one partition key. Above it, its next
# listings cost 1 + INDEX_SHARDS Queries instead of one, which only hot directories pay.
# A snapshot shards by the same number from the directory's own record on (`crowded`): a walk
# spreads a directory's children over many chunks, between their subtrees.
SHARD_AFTER_WRITES = 100


def crowded(children_num: int) -> bool:
    """Whether a directory of `children_num` children is sharded from its own snapshot record
    on: the consumer applies it at a directory's SNAPSHOT record, glue_jobs/image_index.py
    (`hot_directories`) the same comparison in Spark to the image's counts, so both write the
    same items."""
    return children_num > SHARD_AFTER_WRITES


def name_order(name: str) -> bytes:
    """The NameNode's order of names in a directory as a key Python compares: HDFS compares
    the UTF-8 bytes as signed (DFSUtilClient.compareBytes uses Guava's SignedBytes), so a byte
    of 0x80 or more sorts before ASCII; flipping the top bit makes that an unsigned order."""
    return bytes(b ^ 0x80 for b in name.encode("utf-8"))


def outermost(roots: Iterable[str]) -> list[str]:
    """The roots a walk lists, in the order it lists them: roots inside other roots dropped, so
    nothing is listed twice."""
    out: list[str] = []
    for root in sorted({r.rstrip("/") or "/" for r in roots}):
        if not any(root == o or root.startswith(o.rstrip("/") + "/") for o in out):
            out.append(root)
    return out


def covering_root(path: str, roots: list[str]) -> int | None:
    """The position in `roots` (outermost's) of the root whose walk lists `path`; None: no
    walk lists it (outside every root, or "/" itself, which has no entry)."""
    if path == "/":
        return None
    for i, root in enumerate(roots):
        if root == "/" or path == root or path.startswith(root + "/"):
            return i
    return None


def _walk_char(byte: int) -> str:
    """A path byte's character in a walk key. "/" is the lowest, so a parent's key is a prefix
    of its child's that sorts before its siblings' ("a" < "a/x" < "a-b"); every other byte in
    name_order's order (top bit flipped), one up below "/"'s flipped 0xAF to leave room.
    From U+0100 on: Spark's translate drops a character mapped to U+0000, and code points of
    one UTF-8 length compare as their bytes do."""
    if byte == ord("/"):
        return chr(0x100)
    flipped = byte ^ 0x80
    return chr(0x100 + flipped + (flipped < 0xAF))


# Each UTF-8 byte of a path (read as ISO-8859-1: one character a byte) to its walk character.
WALK_KEY_BYTES = "".join(chr(b) for b in range(256))
WALK_KEY_CHARS = "".join(_walk_char(b) for b in range(256))
_WALK_TABLE = str.maketrans(WALK_KEY_BYTES, WALK_KEY_CHARS)
WALK_ROOT_DIGITS = 10  # the root's position, zero-padded: compares before the path


def walk_key(path: str, root: int) -> str:
    """Sorts the (normalised) paths of the walks of `roots` into walk order: the root's
    position in `outermost(roots)`, then the path's components, a parent's a prefix of its
    child's (a prefix sorts first), siblings in the NameNode's name order."""
    return f"{root:0{WALK_ROOT_DIGITS}d}" + path.encode().decode("latin-1").translate(_WALK_TABLE)


@dataclass(frozen=True, slots=True)
class PathState:
    """One path as a snapshot record carries it (onprem_agent.live.snapshot.snapshot_record)."""

    path: str
    inode_type: str  # FILE, DIRECTORY, SYMLINK
    size: int = 0
    mtime: int = 0
    atime: int = 0
    owner: str = ""
    group: str = ""
    perms: str = "0000"
    replication: int = 0
    symlink_target: str | None = None


def snapshot_attrs(state: PathState) -> dict[str, Any]:
    """The entry's attributes, as the consumer keeps a SNAPSHOT record's
    (lambdas/ingest/index_rules.snapshot_values): size and replication of files only (a
    directory's FileStatus carries zeros there, not values), symlink_target of symlinks only."""
    is_file = state.inode_type == FILE
    return {
        "type": state.inode_type,
        "size": state.size if is_file else None, "mtime": state.mtime, "atime": state.atime,
        "owner": state.owner, "group": state.group, "perms": state.perms,
        "replication": state.replication if is_file else None,
        "symlink_target": state.symlink_target if state.inode_type == SYMLINK else None,
    }


def snapshot_item(cluster: str, state: PathState, txid: int, index: int, *,
                  sharded: bool, parent_sharded: bool) -> IndexItem:
    """The item of one record at (txid, index). `sharded`: a directory with more than
    SHARD_AFTER_WRITES children, written sharded from the start; `parent_sharded`: the entry
    goes to its parent's shard partition."""
    return IndexItem(cluster, state.path, snapshot_attrs(state), txid, index,
                     shards=INDEX_SHARDS if sharded else 0, in_shard=parent_sharded)

