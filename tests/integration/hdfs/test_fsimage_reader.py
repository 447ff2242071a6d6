"""glue_jobs.fsimage_format on images Hadoop wrote, row for row against Hadoop's own reader.

Two images: the kit's 2,000-file namespace (made by Hadoop's Offline Image Reconstructor) and
one saved by a live NameNode (`saveNamespace`, with dfs.image.parallel.load on, so it is cut in
INODE_SUB and INODE_DIR_SUB sub-sections) after a workload of writes, multi-block files,
renames of files and directories, deletes, a symlink, a sticky directory, owners, replication
and times set, quotas, a COLD storage policy, an erasure-coded directory and file, a file left
open, and a snapshot whose files were then renamed (INODE_REFERENCE) and deleted (kept only
by the snapshot: in no directory, so in neither listing).

For each image `hdfs oiv -p Delimited` (PBImageDelimitedTextWriter) is the reference: every
path it prints and every column (replication, mtime, atime, preferred block size, blocks, file
size, ns and ds quota, permission string, user, group) must be what our reader says.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from glue_jobs.fsimage_format import read_name_system, read_summary, section_data
from glue_jobs.fsimage_inodes import INode, INodeKind
from glue_jobs.fsimage_namespace import read_namespace
from tests.kit.hadoop.live_image import COLD, ONE_MB, live_image
from tests.kit.hadoop.namespace_image import as_delimited, delimited_listing, namespace_image

pytestmark = pytest.mark.slow


def our_rows(image: Path) -> tuple[dict[str, dict[str, str]], dict[str, INode]]:
    read = list(read_namespace(image.read_bytes()))
    nodes = dict(read)
    assert len(nodes) == len(read), "a path twice"
    return {path: as_delimited(path, node) for path, node in read}, nodes


def oiv_rows(image: Path, work: Path) -> dict[str, dict[str, str]]:
    return delimited_listing(image, work / f"{image.name}.tsv")[0]


def assert_same_rows(ours: dict[str, dict[str, str]], theirs: dict[str, dict[str, str]]) -> None:
    assert sorted(ours) == sorted(theirs)
    differ = [(ours[p], theirs[p]) for p in sorted(ours) if ours[p] != theirs[p]]
    assert differ == [], f"{len(differ)} of {len(ours)} rows differ, first: {differ[:3]}"


def test_the_kit_namespace_reads_as_oiv_prints_it(tmp_path: Path) -> None:
    image = next((namespace_image(2_000).name_dir / "current").glob("fsimage_" + "[0-9]" * 19))
    ours, nodes = our_rows(image)
    theirs = oiv_rows(image, tmp_path)
    assert_same_rows(ours, theirs)
    files = [n for n in nodes.values() if n.kind is INodeKind.FILE]
    assert len(files) == 2_000 and sum(n.blocks for n in files) > 0


# -- a live NameNode's image -------------------------------------------------------------------

@pytest.fixture(scope="module")
def saved_image(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with live_image(tmp_path_factory.mktemp("fsimage-nn")) as live:
        yield live.image


def test_a_live_namenodes_image_reads_as_oiv_prints_it(saved_image: Path,
                                                        tmp_path: Path) -> None:
    ours, nodes = our_rows(saved_image)
    assert_same_rows(ours, oiv_rows(saved_image, tmp_path))
    # the cases the workload made are in the image, and our typed fields say what they are
    data = saved_image.read_bytes()
    summary = read_summary(data)
    # fsimage_<txid>: the NameNode names the image for the last transaction it holds
    assert read_name_system(section_data(data, summary, summary.section("NS_INFO"))
                            ).transaction_id == int(saved_image.name.removeprefix("fsimage_"))
    assert len(summary.parts("INODE")) > 1 and len(summary.parts("INODE_DIR")) > 1
    assert summary.section("INODE_REFERENCE").length > 0
    assert nodes["/lake/latest"].kind is INodeKind.SYMLINK
    assert nodes["/lake/latest"].symlink_target == "/lake/curated/p1.csv"
    assert (nodes["/lake/curated/big.bin"].blocks, nodes["/lake/curated/big.bin"].size) == (
        3, 2 * ONE_MB + 17)
    assert nodes["/cold/archive.bin"].storage_policy_id == COLD
    assert nodes["/ec/striped.bin"].erasure_coding_policy_id == 1  # RS-6-3-1024k
    assert nodes["/lake/curated/p1.csv"].erasure_coding_policy_id is None
    assert nodes["/scratch/open.log"].under_construction
    assert nodes["/scratch"].mode == 0o1777
    assert (nodes["/quota"].ns_quota, nodes["/quota/q"].ds_quota) == (1000, 5 * 1024**3)
    assert "/snap/dir/renamed.txt" in nodes and "/lake/out-of-snapshot.txt" in nodes
    assert not any(p.startswith("/snap/dir/gone") or p.endswith("moved.txt") for p in nodes)
    assert "/lake/raw/2024/feb/part-000.csv" in nodes and "/lake/raw/2024/02" not in nodes
