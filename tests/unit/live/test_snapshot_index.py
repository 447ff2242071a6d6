"""The index items of a snapshot built from any source of path states (hdfs_events/
snapshot_index.py) equal what the consumer keeps of the agent's SNAPSHOT records: the same walk
order (so the same (T, i) per path), the same attributes. The real NameNode's order and the whole
chain: tests/integration/agent/test_first_start_fsimage.py."""

from __future__ import annotations

import pytest

from hdfs_events.event import INodeType
from hdfs_events.index_item import INDEX_SHARDS
from hdfs_events.snapshot_index import (
    PathState,
    covering_root,
    outermost,
    snapshot_attrs,
    snapshot_item,
    walk_key,
)
from lambdas.ingest.index_rules import snapshot_values
from onprem_agent.live.snapshot import NamespaceEntry, snapshot_record, walk
from tests.unit.live.doubles import ListingDouble, dir_entry, file_entry

# "a-dir.x" sorts before "a-dir/..." as a whole path, after the "a-dir" subtree in a walk.
# "a\x7f" and "a\u0080" straddle the sign bit; "😀" is four UTF-8 bytes.
NAMES = ["a", "a-b", "a.b", "a-dir.x", "a0", "b", "é", "z", "Z", "日本", "a b", "a\x7f", "a\u0080",
         "😀"]


def namespace() -> list[NamespaceEntry]:
    entries = [dir_entry("/data"), dir_entry("/data/x"), dir_entry("/logs"), dir_entry("/zz")]
    for parent in ("/data", "/data/x", "/logs"):
        entries += [file_entry(f"{parent}/{n}") for n in NAMES]
    entries += [dir_entry("/data/a-dir"), dir_entry("/data/a-dir/é"),
                file_entry("/data/a-dir/é/f"),
                NamespaceEntry("/logs/ln", INodeType.SYMLINK, owner="u", group="g",
                               perms="0777", symlink_target="/data/a")]
    return entries


@pytest.mark.parametrize("roots", [["/"], ["/logs", "/data"], ["/data/x", "/data", "/zz"]])
def test_walk_key_sorts_paths_into_the_listing_walk_order(roots):
    entries = namespace()
    listed = [e.path for e in walk(ListingDouble(entries), roots, workers=1)]
    ordered = outermost(roots)
    covered = [e.path for e in entries if covering_root(e.path, ordered) is not None]
    by_key = sorted(covered, key=lambda p: walk_key(p, covering_root(p, ordered)))
    assert by_key == listed
    assert len(listed) > len(NAMES)


def test_the_root_itself_has_no_entry_and_paths_outside_the_roots_none():
    assert covering_root("/", ["/"]) is None
    assert covering_root("/datax/f", ["/data"]) is None
    assert covering_root("/data", ["/data"]) == 0


@pytest.mark.parametrize("entry", [
    file_entry("/d/f", size=77, mtime=9), dir_entry("/d/e", mtime=3),
    NamespaceEntry("/d/ln", INodeType.SYMLINK, mtime=4, atime=4, owner="u", group="g",
                   perms="0777", symlink_target="/d/f")])
def test_attributes_are_the_ones_the_consumer_keeps_of_a_snapshot_record(entry):
    state = PathState(entry.path, str(entry.inode_type), entry.size, entry.mtime, entry.atime,
                      entry.owner, entry.group, entry.perms, entry.replication,
                      entry.symlink_target)
    record = snapshot_record("c", 42, 7, entry, listed_ms=1)
    assert snapshot_attrs(state) == snapshot_values(record)


def test_a_hot_directory_is_written_sharded_and_its_children_in_its_shards():
    directory = snapshot_item("c", PathState("/hot", "DIRECTORY"), 5, 0, sharded=True,
                              parent_sharded=False).to_item(now_s=0)
    child = snapshot_item("c", PathState("/hot/f", "FILE", size=1), 5, 1, sharded=False,
                          parent_sharded=True).to_item(now_s=0)
    assert directory["shards"] == INDEX_SHARDS and directory["parent"] == "c#/"
    assert child["parent"].startswith("c#/hot//") and "shards" not in child
    assert (child["last_txid"], child["last_index"], child["deleted"]) == (5, 1, False)
