"""An fsimage a live NameNode saved after a workload of every case the image reader handles, with
sub-sections (dfs.image.parallel.load on): the second image the namespace inventory job is
checked on, against `hdfs oiv -p Delimited` and the listing below
(tests/integration/glue/test_namespace_inventory.py).

    with live_image(tmp) as live: ...  # live.image: <tmp>/dfs/name*/current/fsimage_<txid>
                                       # live.listing: the NameNode's listing of / at that txid

The workload: writes, a three-block file, renames of files and of a directory, deletes, a
symlink, a sticky directory, a chown, setrep and set_times, ns and space quotas, a COLD storage
policy, an erasure-coded directory and file (RS-6-3-1024k), a file left open, and a snapshot
whose files were then renamed (INODE_REFERENCE) and deleted (kept by the snapshot only: in no
directory, so in no listing). One NameNode, stopped when the block ends.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.kit.hadoop.cluster import HdfsCluster

ONE_MB = 1024 * 1024
COLD = 2  # HdfsConstants.COLD_STORAGE_POLICY_ID


@dataclass(frozen=True)
class LiveImage:
    image: Path
    listing: dict[str, dict[str, Any]]  # ops.Workload.op_tree("/") when the image was saved


@contextmanager
def live_image(base: Path) -> Iterator[LiveImage]:
    # Sub-sections are written only when parallel load is on (FSImageFormatProtobuf.Saver);
    # 4 target sections over ~50 inodes makes several INODE_SUB of ~12 inodes each.
    conf = {"dfs.image.parallel.load": "true", "dfs.image.parallel.target.sections": "4",
            "dfs.image.parallel.inode.threshold": "1",
            "dfs.namenode.fs-limits.min-block-size": str(ONE_MB)}
    with HdfsCluster.start(base, conf=conf) as hdfs:
        superuser = hdfs.run([["status", "/"]])[0]["owner"]
        ops: list[list[object]] = [["mkdirs", d] for d in (
            "/lake/raw/2024/01", "/lake/raw/2024/02", "/lake/curated", "/snap/dir", "/quota/q",
            "/cold", "/ec", "/scratch")]
        ops += [["write", f"/lake/raw/2024/{m:02d}/part-{i:03d}.csv", f"{m},{i}\n" * (i + 1)]
                for m in (1, 2) for i in range(15)]
        ops += [["write", "/lake/curated/big.bin", "x" * (2 * ONE_MB + 17), False, ONE_MB],
                ["write", "/cold/archive.bin", "cold data"],
                ["setrep", "/lake/curated/big.bin", 2],
                ["chmod", "/scratch", "1777"],
                ["chown", "/lake/curated", "alice", "analysts"],
                ["set_times", "/lake/raw/2024/01/part-000.csv", 1_600_000_000_000,
                 1_650_000_000_000],
                ["rename", "/lake/raw/2024/01/part-001.csv", "/lake/curated/p1.csv"],
                ["rename", "/lake/raw/2024/02", "/lake/raw/2024/feb"],
                ["delete", "/lake/raw/2024/01/part-002.csv", False],
                ["delete", "/lake/raw/2024/feb/part-014.csv", False],
                ["symlink", "/lake/curated/p1.csv", "/lake/latest"],
                ["write", "/snap/dir/keep.txt", "k"], ["write", "/snap/dir/moved.txt", "m"],
                ["write", "/snap/dir/gone.txt", "g"], ["write", "/snap/dir/out.txt", "o"],
                ["open_file", "/scratch/open.log", "half a line"]]
        hdfs.run(ops)
        tools = "org.apache.hadoop.hdfs.tools"
        hdfs.run([["shell", superuser, args, f"{tools}.{tool}"] for tool, args in (
            ("DFSAdmin", ["-allowSnapshot", "/snap"]),
            ("DFSAdmin", ["-setQuota", "1000", "/quota"]),
            ("DFSAdmin", ["-setSpaceQuota", "5g", "/quota/q"]),
            ("StoragePolicyAdmin", ["-setStoragePolicy", "-path", "/cold/archive.bin",
                                    "-policy", "COLD"]),
            ("ECAdmin", ["-setPolicy", "-path", "/ec", "-policy", "RS-6-3-1024k"]))])
        hdfs.run([["shell", superuser, ["-createSnapshot", "/snap", "s1"]],
                  ["rename", "/snap/dir/moved.txt", "/snap/dir/renamed.txt"],
                  ["rename", "/snap/dir/out.txt", "/lake/out-of-snapshot.txt"],
                  ["delete", "/snap/dir/gone.txt", False],
                  ["write", "/ec/striped.bin", ""]])  # no block: a striped file needs 9 DNs
        hdfs.checkpoint()
        images = sorted((base / "dfs").glob("name*/current/fsimage_" + "[0-9]" * 19))
        assert images, f"no fsimage under {base / 'dfs'}"
        listing = hdfs.run([["tree", "/"], ["close_file", "/scratch/open.log"]])[0]
        yield LiveImage(images[-1], listing)
