"""The large namespace's generator: the shape issue #32 asks for, known without a NameNode, and
the XML Hadoop's Offline Image Reconstructor reads. A NameNode started on the image, listed by
the agent's first start and checked by verify against these counts: bench.first_start, whose
smoke size runs in tests/bench."""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import pytest

from tests.kit.hadoop.namespace_image import write_image_xml
from tests.kit.hadoop.namespace_shape import (
    BLOCK_SIZE,
    FLAT_DIRS,
    PARTS_PER_HOUR,
    ROOT_INODE_ID,
    Dir,
    EndDir,
    File,
    summary,
    walk,
)

FILES = 5_000


@pytest.fixture(scope="module")
def items() -> list[Dir | File | EndDir]:
    return list(walk(FILES))


def test_the_namespace_holds_exactly_the_files_asked_for_a_fifth_in_three_flat_dirs(items):
    files = [i for i in items if isinstance(i, File)]
    assert len(files) == FILES
    by_parent = Counter(f.path.rsplit("/", 1)[0] for f in files)
    flat = [path for path, _ in FLAT_DIRS]
    assert sum(by_parent[p] for p in flat) == pytest.approx(FILES * 0.2, abs=3)
    assert all(by_parent[p] > PARTS_PER_HOUR * 10 for p in flat)
    assert max(n for p, n in by_parent.items() if p not in flat) == PARTS_PER_HOUR


def test_date_partitioned_files_sit_five_levels_down_with_varied_owners_modes_and_sizes(items):
    parts = [f for f in items if isinstance(f, File) and f.path.startswith("/data/")]
    assert all(len(f.path.split("/")) == 6 and "/dt=2024-" in f.path and "/hour=" in f.path
               for f in parts)
    files = [i for i in items if isinstance(i, File)]
    assert len({f.owner for f in files}) >= 4 and len({f.group for f in files}) >= 3
    assert len({f.mode for f in files}) >= 4
    sizes = [f.size for f in files]
    assert min(sizes) == 0 and max(sizes) > BLOCK_SIZE and max(sizes) < 2 * BLOCK_SIZE


def test_every_directory_names_its_children_in_name_order_and_ids_are_unique(items):
    by_inode = {i.inode: i for i in items if not isinstance(i, EndDir)}
    assert len(by_inode) == sum(not isinstance(i, EndDir) for i in items)
    assert min(by_inode) == ROOT_INODE_ID and max(by_inode) == ROOT_INODE_ID + len(by_inode) - 1
    ended = [i for i in items if isinstance(i, EndDir)]
    assert {e.inode for e in ended} == {i.inode for i in by_inode.values() if isinstance(i, Dir)}
    for end in ended:
        parent = by_inode[end.inode].path.rstrip("/")
        children = [by_inode[c].path for c in end.children]
        assert all(c.rsplit("/", 1)[0] == parent for c in children)
        assert children == sorted(children)


def test_the_summary_is_the_walk_counted_and_the_same_every_time(items):
    once, again = summary(FILES), summary(FILES)
    assert once == again
    assert once.files == FILES
    assert once.dirs == sum(isinstance(i, Dir) for i in items)
    assert once.bytes == sum(i.size for i in items if isinstance(i, File))
    assert sum(s.files for s in once.subtrees.values()) == FILES
    assert once.subtrees["/user/etl/landing"].dirs == 1


def test_image_xml_declares_every_inode_block_and_child(tmp_path: Path):
    out = io.StringIO()
    counts = write_image_xml(FILES, out, tmp_path)
    root = ET.fromstring(out.getvalue())
    section = root.find("INodeSection")
    assert section is not None
    inodes = section.findall("inode")
    assert int(section.findtext("numInodes") or 0) == len(inodes) == counts.files + counts.dirs
    ids = {int(i.findtext("id") or 0) for i in inodes}
    children = [int(c.text or 0) for c in root.iter("child")]
    assert len(children) == len(set(children)) == len(ids) - 1  # all but the root
    assert set(children) <= ids
    blocks = [int(b.findtext("id") or 0) for b in root.iter("block")]
    assert len(blocks) == len(set(blocks))
    assert int(root.findtext("NameSection/lastAllocatedBlockId") or 0) == max(blocks)
    sizes = sum(int(b.findtext("numBytes") or 0) for b in root.iter("block"))
    assert sizes == counts.bytes
    assert list(tmp_path.iterdir()) == []  # the spool files are gone
