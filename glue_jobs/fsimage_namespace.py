"""Full paths for an fsimage's inodes, joined from its directory tree as oiv joins them.

Paths are not in the image: a directory's children are listed in INODE_DIR by id, and a child
that is an INodeReference (a rename under a snapshot) is listed by its position in the
INODE_REFERENCE section. `PathIndex` joins them as Hadoop's `hdfs oiv -p Delimited` does
(PBImageTextWriter): the parent's path and the inode's own name; an inode under no directory of
the current tree (kept only by a snapshot) has no path. `read_namespace` is the whole read in
one process: the reference a parallel reader is checked against.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from glue_jobs.fsimage_format import (
    DirEntry,
    ImageFormatError,
    ImageSummary,
    INodeReference,
    read_directory_entries,
    read_references,
    read_summary,
    section_data,
)
from glue_jobs.fsimage_inodes import INode, INodeKind, StringTable, read_inodes, read_string_table

ROOT_INODE_ID = 16385  # INodeId.ROOT_INODE_ID: 1 << 14, plus one


class PathIndex:
    """Full paths from the directory tree: parent of every listed child, names of directories.

    Built from the whole INODE_DIR (every part) and the directories' names; memory is one entry
    per inode under a directory plus one path per directory reached."""

    def __init__(self, entries: Iterable[DirEntry], references: list[INodeReference],
                 directory_names: Mapping[int, str]) -> None:
        self._parent: dict[int, int] = {}
        for entry in entries:
            for child in entry.children:
                self._parent[child] = entry.parent
            for position in entry.reference_children:
                if position >= len(references):
                    raise ImageFormatError(
                        f"INODE_DIR: directory {entry.parent} lists reference {position}, the "
                        f"INODE_REFERENCE section holds {len(references)}")
                self._parent[references[position].referred_id] = entry.parent
        self._names = directory_names
        self._paths: dict[int, str | None] = {ROOT_INODE_ID: "/"}

    def path(self, inode_id: int, name: str) -> str | None:
        """The inode's full path; None when it is under no directory of the current tree."""
        if inode_id == ROOT_INODE_ID:
            return "/"
        parent = self._parent.get(inode_id)
        if parent is None:
            return None
        above = self.directory_path(parent)
        if above is None:
            return None
        return f"/{name}" if above == "/" else f"{above}/{name}"

    def directory_path(self, dir_id: int) -> str | None:
        if dir_id in self._paths:
            return self._paths[dir_id]
        chain = []  # walked up iteratively: a deep tree must not hit Python's recursion limit
        node: int | None = dir_id
        while node is not None and node not in self._paths:
            chain.append(node)
            node = self._parent.get(node)
            if len(chain) > len(self._parent) + 1:
                raise ImageFormatError(f"INODE_DIR: directory {dir_id} is its own ancestor")
        above = None if node is None else self._paths[node]
        for node_id in reversed(chain):
            name = self._names.get(node_id)
            if above is None or name is None:
                above = None
            else:
                above = f"/{name}" if above == "/" else f"{above}/{name}"
            self._paths[node_id] = above
        return self._paths[dir_id]


def read_namespace(image: bytes) -> Iterator[tuple[str, INode]]:
    """(path, inode) for every inode of the current tree, in INODE section order, read in one
    process: the reference for a parallel reader, and what `hdfs oiv -p Delimited` prints.
    Holds every inode in memory (oiv scans INODE twice instead; decoding twice costs more)."""
    summary = read_summary(image)
    strings = _strings(image, summary)
    nodes: list[INode] = []
    for i, part in enumerate(summary.parts("INODE")):
        nodes += read_inodes(section_data(image, summary, part), strings, header=i == 0,
                             base=summary.base(part), section=part.name)
    names = {node.id: node.name for node in nodes if node.kind is INodeKind.DIRECTORY}
    references = []
    if summary.has("INODE_REFERENCE"):
        ref = summary.section("INODE_REFERENCE")
        references = read_references(section_data(image, summary, ref),
                                     base=summary.base(ref))
    entries = (entry for part in summary.parts("INODE_DIR")
               for entry in read_directory_entries(section_data(image, summary, part),
                                                   base=summary.base(part),
                                                   section=part.name))
    paths = PathIndex(entries, references, names)
    for node in nodes:
        path = paths.path(node.id, node.name)
        if path is not None:
            yield path, node


def _strings(image: bytes, summary: ImageSummary) -> StringTable:
    table = summary.section("STRING_TABLE")
    return read_string_table(section_data(image, summary, table), base=summary.base(table))

