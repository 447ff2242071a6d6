"""The file replay behind the activity rollups' byte and file figures, hand-checked without
Spark (tests/integration/glue/test_rollup_sizes.py runs the same cases through the job's
transforms)."""

from __future__ import annotations

import pytest

from glue_jobs.file_sizes import DEFAULT_TRASH_PATTERN
from glue_jobs.file_tree import (
    MEASURES,
    STATE_FILE,
    FileTree,
    Measures,
    replay_files,
    replay_measures,
)

TRASH = "/user/alice/.Trash"


class Run:
    """A tree and the events applied to it, txids counted up."""

    def __init__(self) -> None:
        self.tree = FileTree(DEFAULT_TRASH_PATTERN)
        self.txid = 0

    def __call__(self, type_: str, path: str, **fields) -> Measures | None:
        self.txid += 1
        return self.tree.apply(type_, path, txid=self.txid, index=0, **fields)

    def write(self, path: str, size: int) -> None:
        self("CREATE", path, inode_type="FILE")
        self("CLOSE", path, size=size)

    def files(self) -> dict[str, int | None]:
        return {path: f.size for path, f in self.tree.files()}


@pytest.fixture
def run() -> Run:
    return Run()


def test_a_new_files_close_writes_its_size_and_is_a_new_file(run):
    assert run("CREATE", "/a/f", inode_type="FILE") == Measures(files_created=1)
    assert run("CLOSE", "/a/f", size=70) == Measures(bytes_written=70, closes_new_file=True)


def test_an_append_of_one_byte_writes_one_byte(run):
    run.write("/a/log", 1000)
    assert run("APPEND", "/a/log") is None
    assert run("CLOSE", "/a/log", size=1001) == Measures(bytes_written=1)


def test_an_overwrite_replaces_the_old_size(run):
    run.write("/a/f", 500)
    assert run("CREATE", "/a/f", inode_type="FILE", overwrite=True) == Measures(
        files_overwritten=1, bytes_replaced=500)
    assert run("CLOSE", "/a/f", size=300) == Measures(bytes_written=300, closes_new_file=True)


def test_a_truncate_cuts_and_the_append_after_it_writes_from_the_new_length(run):
    run.write("/a/f", 1000)
    assert run("TRUNCATE", "/a/f", size=400) == Measures(bytes_truncated=600)
    assert run("CLOSE", "/a/f", size=450) == Measures(bytes_written=50)


def test_a_close_after_a_concat_writes_nothing_and_leaves_the_size_unknown(run):
    run.write("/a/f", 10)
    assert run("CLOSE", "/a/f", size=-1) is None
    assert run("CLOSE", "/a/f", size=40) == Measures(bytes_written=0)
    assert run.files() == {"/a/f": 40}


def test_rm_r_counts_every_file_under_the_directory(run):
    run("CREATE", "/a/d", inode_type="DIRECTORY")
    for path, size in (("/a/d/x", 10), ("/a/d/sub/y", 20), ("/a/d/z", 30), ("/a/dd", 5)):
        run.write(path, size)
    assert run("UNLINK", "/a/d") == Measures(files_deleted=3, bytes_deleted=60, deletes=True)
    assert run.files() == {"/a/dd": 5}


def test_a_delete_the_lake_knows_nothing_of_leaves_the_count_to_the_caller(run):
    assert run("UNLINK", "/old") == Measures(files_deleted=None, deletes=True)
    run("CREATE", "/empty", inode_type="DIRECTORY")
    assert run("UNLINK", "/empty") == Measures(files_deleted=0, deletes=True)


def test_a_move_into_the_trash_deletes_once_and_the_expunge_counts_nothing(run):
    run.write("/data/p/x", 100)
    run.write("/data/p/y", 200)
    assert run("RENAME", "/data/p", dst_path=f"{TRASH}/Current/data/p") == Measures(
        files_deleted=2, bytes_deleted=300, deletes=True, trash_move=True)
    assert run("RENAME", f"{TRASH}/Current", dst_path=f"{TRASH}/261126120000") == Measures(
        trash_move=True)
    assert run("UNLINK", f"{TRASH}/261126120000") is None
    assert run.files() == {}


def test_a_restore_from_the_trash_brings_the_sizes_back(run):
    run.write("/data/p/x", 100)
    run("RENAME", "/data/p", dst_path=f"{TRASH}/Current/data/p")
    assert run("RENAME", f"{TRASH}/Current/data/p", dst_path="/data/p") == Measures(
        trash_move=True)
    assert run("UNLINK", "/data/p/x") == Measures(files_deleted=1, bytes_deleted=100,
                                                  deletes=True)


def test_files_move_with_their_directory_any_number_of_times(run):
    run.write("/a/f._COPYING_", 7)
    assert run("RENAME", "/a/f._COPYING_", dst_path="/a/f") is None
    run("RENAME", "/a", dst_path="/b")
    run("RENAME", "/b/f", dst_path="/c/g")
    assert run.files() == {"/c/g": 7}
    assert run("CLOSE", "/c/g", size=10) == Measures(bytes_written=3)


def test_a_rename_onto_a_live_file_overwrites_it(run):
    run.write("/a/f", 500)
    run.write("/a/f._COPYING_", 70)
    assert run("RENAME", "/a/f._COPYING_", dst_path="/a/f") == Measures(
        files_overwritten=1, bytes_replaced=500)
    assert run.files() == {"/a/f": 70}


def test_the_path_state_rows_load_before_the_events(run):
    run.tree.apply(STATE_FILE, "/a/f", txid=1, index=0, size=1000, fresh=False)
    run.tree.apply(STATE_FILE, "/a/g", txid=2, index=0, size=0, fresh=True)
    run.txid = 10
    assert run("CLOSE", "/a/f", size=1500) == Measures(bytes_written=500)
    assert run("CLOSE", "/a/g", size=5) == Measures(bytes_written=5, closes_new_file=True)


def _row(cluster: str, txid: int, type_: str, path: str, **fields) -> dict:
    return {"cluster": cluster, "txid": txid, "index": 0, "type": type_, "path": path,
            "dst_path": None, "size": None, "inode_type": None, "overwrite": None,
            "fresh": None, **fields}


def test_a_partition_of_two_clusters_is_replayed_one_tree_each():
    rows = [_row("c1", 1, STATE_FILE, "/a/f", size=10, fresh=False),
            _row("c1", 5, "CLOSE", "/a/f", size=12),
            _row("c2", 3, "CLOSE", "/a/f", size=20),  # another cluster's /a/f: unknown size
            _row("c2", 4, "CREATE", "/b", inode_type="FILE")]

    measures = list(replay_measures(rows, DEFAULT_TRASH_PATTERN))
    files = sorted(replay_files(rows, DEFAULT_TRASH_PATTERN))

    created, written = (3 + MEASURES.index(f) for f in ("files_created", "bytes_written"))
    assert [(*m[:3], m[created], m[written]) for m in measures] == [
        ("c1", 5, 0, 0, 2), ("c2", 3, 0, 0, 0), ("c2", 4, 0, 1, 0)]
    assert files == [("c1", "/a/f", 5, 0, 12, False), ("c2", "/a/f", 3, 0, 20, False),
                     ("c2", "/b", 4, 0, 0, True)]
