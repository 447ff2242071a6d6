"""What the lake knows of one cluster's files, replayed in (txid, index) order: which files are
live and their sizes, and what each event did to them (glue_jobs.file_sizes runs it in Spark,
one task per cluster). Plain Python: it imports nothing of Spark's.

- a CLOSE writes its size less the size before it (an append's CLOSE reports the whole file);
- a TRUNCATE sets the size: what it cut is counted apart, never as negative writes;
- a CREATE with Hadoop's overwrite flag of a live file replaces it, and so does a RENAME onto
  one;
- an UNLINK removes every file at or below its path: `hdfs dfs -rm -r` is one UNLINK of a
  directory, whatever it held;
- a RENAME into a trash directory (TrashPolicyDefault's /user/<name>/.Trash/Current/...) is a
  delete of what it moved; the files stay known there (a restore brings their sizes back), and
  the later expunge (an UNLINK under .Trash) counts nothing again, else every `-rm` would count
  twice and every trash interval (fs.trash.interval) would raise a mass delete of files nobody
  deleted that day.

Why a replay and not joins: a RENAME of a directory moves every file below it, and a file can
move several times in a day; as Spark joins each move is another pass over the facts, and the
plan of a few passes took minutes to build. The tree holds the live files the lake knows (the
path state's FILES rows): its memory follows the namespace, ~200 bytes a file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, fields, replace
from typing import Any, Union

# A row of the path state (glue_jobs.rollups.FILES) loaded before the events: not an event.
STATE_FILE = "STATE_FILE"
# The event types that change what the tree holds.
CHANGES = ("CREATE", "CLOSE", "TRUNCATE", "UNLINK", "RENAME", "SNAPSHOT")


@dataclass(slots=True)
class File:
    size: int | None  # None: unknown (a concat's CLOSE reports -1)
    fresh: bool  # created and not closed since: its next CLOSE is a new file's
    txid: int  # of its latest size fact
    index: int


Dir = dict[str, Union["Dir", File]]


@dataclass(frozen=True, slots=True)
class Measures:
    """What one event did to the files."""
    files_created: int = 0
    files_overwritten: int = 0
    bytes_replaced: int = 0
    files_deleted: int | None = 0  # None: a delete of a path the lake knows nothing under
    bytes_deleted: int = 0
    bytes_written: int = 0
    bytes_truncated: int = 0
    closes_new_file: bool = False
    deletes: bool = False
    trash_move: bool = False


MEASURES = tuple(f.name for f in fields(Measures))


def _parts(path: str) -> list[str]:
    return [p for p in path.split("/") if p]


def _tally(node: Dir | File) -> tuple[int, int]:
    """(files, bytes of known size) at or below `node`."""
    files = size = 0
    stack: list[Dir | File] = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, File):
            files, size = files + 1, size + (n.size or 0)
        else:
            stack.extend(n.values())
    return files, size


class FileTree:
    def __init__(self, trash_pattern: str) -> None:
        self._root: Dir = {}
        self._trash = re.compile(trash_pattern)

    def _in_trash(self, path: str | None) -> bool:
        return path is not None and self._trash.search(path) is not None

    def _dir(self, parts: list[str], make: bool) -> Dir | None:
        node = self._root
        for name in parts:
            child = node.get(name)
            if not isinstance(child, dict):
                if not make:
                    return None
                child = node[name] = {}  # a file where a directory now is: that file is gone
            node = child
        return node

    def get(self, path: str) -> Dir | File | None:
        parts = _parts(path)
        if not parts:
            return self._root
        parent = self._dir(parts[:-1], make=False)
        return None if parent is None else parent.get(parts[-1])

    def _pop(self, path: str) -> Dir | File | None:
        parts = _parts(path)
        if not parts:
            node, self._root = self._root, {}
            return node
        parent = self._dir(parts[:-1], make=False)
        return None if parent is None else parent.pop(parts[-1], None)

    def _put(self, path: str, node: Dir | File) -> None:
        parts = _parts(path)
        if not parts:
            if isinstance(node, dict):
                self._root = node
            return
        parent = self._dir(parts[:-1], make=True)
        assert parent is not None
        parent[parts[-1]] = node

    def _file(self, path: str) -> File | None:
        node = self.get(path)
        return node if isinstance(node, File) else None

    def apply(self, type_: str, path: str, *, txid: int, index: int, dst_path: str | None = None,
              size: int | None = None, inode_type: str | None = None,
              overwrite: bool | None = None, fresh: bool | None = None) -> Measures | None:
        """Applies one event (or a STATE_FILE row) to the tree; what it did, None: nothing."""
        known = size if size is not None and size >= 0 else None
        if type_ == STATE_FILE:
            self._put(path, File(known, bool(fresh), txid, index))
        elif type_ == "CREATE" and inode_type == "FILE":
            old = self._file(path)
            self._put(path, File(0, True, txid, index))
            if overwrite and old is not None:
                return Measures(files_overwritten=1, bytes_replaced=old.size or 0)
            return Measures(files_created=1)
        elif type_ in ("CREATE", "SNAPSHOT") and inode_type == "DIRECTORY":
            if not isinstance(self.get(path), dict):
                self._put(path, {})
        elif type_ == "SNAPSHOT" and inode_type == "FILE":
            self._put(path, File(known, False, txid, index))
        elif type_ == "CLOSE":
            return self._close(path, known, txid, index)
        elif type_ == "TRUNCATE":
            f = self._file(path)
            self._put(path, File(known, False, txid, index))
            if f is not None and f.size is not None and known is not None:
                return Measures(bytes_truncated=max(f.size - known, 0))
        elif type_ == "UNLINK":
            node = self._pop(path)
            if not self._in_trash(path):  # an expunge of the trash counts nothing again
                return _deleted(node)
        elif type_ == "RENAME" and dst_path is not None:
            return self._rename(path, dst_path)
        return None

    def _close(self, path: str, size: int | None, txid: int, index: int) -> Measures | None:
        f = self._file(path)
        self._put(path, File(size, False, txid, index))
        if size is None:
            return None  # after a concat: no bytes known
        new_file = f is not None and f.fresh
        written = size - f.size if f is not None and f.size is not None else 0
        return Measures(bytes_written=max(written, 0), closes_new_file=new_file)

    def _rename(self, src: str, dst: str) -> Measures | None:
        from_trash, to_trash = self._in_trash(src), self._in_trash(dst)
        node = self._pop(src)
        old = None if from_trash or to_trash else self._file(dst)
        if node is None:
            self._pop(dst)  # whatever dst holds now, the lake does not know it
        else:
            self._put(dst, node)
        if to_trash and not from_trash:
            return replace(_deleted(node), trash_move=True)
        if from_trash or to_trash:  # a checkpoint of the trash, or a restore
            return Measures(trash_move=True)
        if old is not None:
            return Measures(files_overwritten=1, bytes_replaced=old.size or 0)
        return None

    def files(self) -> Iterator[tuple[str, File]]:
        """(path, file) of every live file, trash included."""
        stack: list[tuple[str, Dir]] = [("", self._root)]
        while stack:
            prefix, node = stack.pop()
            for name, child in node.items():
                path = f"{prefix}/{name}"
                if isinstance(child, File):
                    yield path, child
                else:
                    stack.append((path, child))


def _deleted(node: Dir | File | None) -> Measures:
    if node is None:
        return Measures(files_deleted=None, deletes=True)
    files, size = _tally(node)
    return Measures(files_deleted=files, bytes_deleted=size, deletes=True)


def replay_measures(rows: Iterable[Any], trash_pattern: str) -> Iterator[tuple]:
    """Rows (cluster, txid, index, type, path, dst_path, size, inode_type, overwrite, fresh),
    sorted by cluster, txid, index -> (cluster, txid, index, *Measures) of each event that did
    something. A function of its partition, for RDD.mapPartitions."""
    for cluster, tree, row in _by_cluster(rows, trash_pattern):
        m = _apply(tree, row)
        if m is not None:
            yield (cluster, row["txid"], row["index"], *(getattr(m, n) for n in MEASURES))


def replay_files(rows: Iterable[Any], trash_pattern: str) -> Iterator[tuple]:
    """The same rows -> (cluster, path, txid, index, size, fresh) of every file live after
    them."""
    tree, cluster = None, None
    for cluster_, tree_, row in _by_cluster(rows, trash_pattern):
        if tree is not None and tree_ is not tree:
            yield from _file_rows(cluster, tree)
        tree, cluster = tree_, cluster_
        _apply(tree, row)
    if tree is not None:
        yield from _file_rows(cluster, tree)


def _file_rows(cluster: str | None, tree: FileTree) -> Iterator[tuple]:
    for path, f in tree.files():
        yield (cluster, path, f.txid, f.index, f.size, f.fresh)


def _by_cluster(rows: Iterable[Any], trash_pattern: str
                ) -> Iterator[tuple[str, FileTree, Any]]:
    cluster, tree = None, FileTree(trash_pattern)
    for row in rows:
        if row["cluster"] != cluster:
            cluster, tree = row["cluster"], FileTree(trash_pattern)
        yield cluster, tree, row


def _apply(tree: FileTree, row: Any) -> Measures | None:
    # By name: a Row is a tuple, and row.index is tuple.index.
    return tree.apply(row["type"], row["path"], txid=row["txid"], index=row["index"],
                      dst_path=row["dst_path"], size=row["size"],
                      inode_type=row["inode_type"], overwrite=row["overwrite"],
                      fresh=row["fresh"])
