"""The generated workload as Hadoop client calls: every call one a NameNode accepts, made from
the generator's operations (a real NameNode runs them in `make demo` and bench.live)."""

from __future__ import annotations

from hdfs_events.event import EventType, HdfsEvent, INodeType, MetadataType
from tests.kit.client_workload import client_ops, client_workload


def ev(txid: int, type_: EventType, path: str, index: int = 0, **fields) -> HdfsEvent:
    return HdfsEvent("generated", txid, index, type_, path, **fields)


def test_a_delete_of_a_path_older_than_the_log_creates_it_first():
    work = client_ops([ev(1, EventType.UNLINK, "/data/a/dt=2025-01-01"),
                       ev(2, EventType.UNLINK, "/data/a/part-00001")])
    assert work.ops == [["mkdirs", "/data/a/dt=2025-01-01"],
                        ["delete", "/data/a/dt=2025-01-01", True],
                        ["write", "/data/a/part-00001", "", False],
                        ["delete", "/data/a/part-00001", True]]
    assert work.prerequisites == 2 and work.skipped == 0


def test_names_hdfs_refuses_are_left_out_and_counted():
    work = client_ops([ev(1, EventType.CREATE, "/user/bob/C:\\Users\\x.csv",
                          inode_type=INodeType.FILE, block_size=1)])
    assert work.ops == [] and work.skipped == 1 and work.calls == 1


def test_a_concat_txid_becomes_one_concat_of_sources_holding_bytes():
    work = client_ops([
        ev(1, EventType.CREATE, "/c/f0", inode_type=INodeType.FILE, block_size=1),
        ev(2, EventType.APPEND, "/c/f0", 0, new_block=False),
        ev(2, EventType.UNLINK, "/c/f1", 1), ev(2, EventType.UNLINK, "/c/f2", 2),
        ev(2, EventType.CLOSE, "/c/f0", 3, size=9)])
    assert work.ops[-1] == ["concat", "/c/f0", ["/c/f1", "/c/f2"]]
    # Hadoop refuses an empty concat source: each is written with data first.
    sources = [op for op in work.ops if op[0] == "write" and op[1] in ("/c/f1", "/c/f2")]
    assert len(sources) == 2 and all(op[2] for op in sources)


def test_a_rename_onto_a_file_replaces_it_and_onto_a_directory_is_left_out():
    work = client_ops([
        ev(1, EventType.CREATE, "/d/a.tmp", inode_type=INodeType.FILE, block_size=1),
        ev(2, EventType.CREATE, "/d/b", inode_type=INodeType.FILE, block_size=1),
        ev(3, EventType.RENAME, "/d/a.tmp", dst_path="/d/b"),
        ev(4, EventType.CREATE, "/e", inode_type=INodeType.DIRECTORY),
        ev(5, EventType.RENAME, "/d/b", dst_path="/e"),
        ev(6, EventType.RENAME, "/d/b", dst_path="/new/parent/b")])
    assert ["rename", "/d/a.tmp", "/d/b", True] in work.ops
    assert not any(op[0] == "rename" and op[2] == "/e" for op in work.ops)
    # rename(a, b) fails when b's parent is missing: it is made first.
    assert work.ops[-2:] == [["mkdirs", "/new/parent"], ["rename", "/d/b", "/new/parent/b", False]]
    assert work.skipped == 1


def test_metadata_calls_carry_the_events_values():
    work = client_ops([
        ev(1, EventType.METADATA, "/data/x", metadata_type=MetadataType.PERMS, perms="1777"),
        ev(2, EventType.METADATA, "/data/x", metadata_type=MetadataType.OWNER, owner=None,
           group="ml"),
        ev(3, EventType.METADATA, "/data/x/part-00000", metadata_type=MetadataType.TIMES,
           mtime=5, atime=-1),
        ev(4, EventType.METADATA, "/data/x/part-00000",
           metadata_type=MetadataType.REPLICATION, replication=2),
        ev(5, EventType.METADATA, "/data/x", metadata_type=MetadataType.ACLS,
           acls=("user::rwx", "default:group:ml:r-x"))])
    calls = [op for op in work.ops if op[0] not in ("mkdirs", "write")]
    assert calls == [["chmod", "/data/x", "1777"], ["chown", "/data/x", None, "ml"],
                     ["set_times", "/data/x/part-00000", 5, -1],
                     ["setrep", "/data/x/part-00000", 2],
                     ["setacl", "/data/x", ["user::rwx", "default:group:ml:r-x"]]]


def test_the_generated_workload_maps_every_kind_of_call_and_stays_under_its_root():
    work = client_workload(ops=6000, seed=7, mass_delete=200, root="/load")
    assert {"write", "mkdirs", "rename", "delete", "append", "chmod", "chown", "set_times",
            "setrep"} <= set(work.by_op)
    assert work.skipped <= work.calls // 100
    paths = [a for op in work.ops for a in op[1:]
             if isinstance(a, str) and a.startswith("/")]
    assert paths and all(p.startswith("/load/") for p in paths)
    assert work.by_op["delete"] >= 200  # the mass delete, each file created first
