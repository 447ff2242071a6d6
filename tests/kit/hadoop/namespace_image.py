"""A NameNode name directory holding a large namespace, built with Hadoop's own tools, cached.

    image = namespace_image(1_000_000)      # .hadoop/namespaces/lake-v1.2-1000000/, built once
    with HdfsCluster.start(tmp, image=image.name_dir, datanodes=0, heap=image.heap) as hdfs: ...
    image.summary                            # files, dirs, bytes per subtree (namespace_shape)

How: namespace_shape.walk streams the tree as the XML Hadoop's Offline Image Viewer writes
(`hdfs oiv -p XML`), and Hadoop's Offline Image Reconstructor (`hdfs oiv -p ReverseXML`) turns
it into an fsimage; VERSION, seen_txid and the image's MD5 file complete the name directory. No
RPC per file, no edit log to replay: the NameNode loads it as it loads any checkpoint.

From PARALLEL_INODE_THRESHOLD inodes up, a NameNode then saves the image again
(`saveNamespace` with `dfs.image.parallel.load` on, SAVE_CONF) and the cache keeps that one: a
NameNode writes INODE and INODE_DIR in sub-sections, which the reconstructor never does, and
the image job reads one sub-section per task. Below the threshold the NameNode writes one part
per section too, so a smaller image stays as reconstructed (no NameNode start to build it).

The files have blocks that no DataNode holds: start with `datanodes=0` (HdfsCluster leaves safe
mode then, as an operator would with `hdfs dfsadmin -safemode leave`). Listing, inotify and
writes of new empty files work; reading a generated file's data does not.

Cache: `.hadoop/namespaces/<shape>-v<SHAPE_VERSION>.<IMAGE_VERSION>-<files>/` (git-ignored with
.hadoop; `make clean` drops it): `current/` (the name directory's files), `summary.json`
(namespace_shape's counts), `build.json` (how long each step took, the tools' peak RSS). A
directory without build.json is a build that did not finish, and is rebuilt. The NameNode
writes into its name directory, so a cluster gets hard links of these files in its own base dir
(cluster.py), never the cache itself.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from tests.kit.hadoop.jars import LIB, REPO, jars, java
from tests.kit.hadoop.namespace_shape import (
    BLOCK_SIZE,
    FIRST_BLOCK_ID,
    SHAPE_VERSION,
    Dir,
    EndDir,
    File,
    Subtree,
    Summary,
    walk,
)

CACHE = REPO / ".hadoop" / "namespaces"
SHAPE = "lake"
# Bump when the build makes a different image of the same shape (2: saved by a NameNode).
IMAGE_VERSION = 2
# Hadoop 3.3.4's dfs.image.parallel.inode.threshold default: fewer inodes, no sub-sections.
PARALLEL_INODE_THRESHOLD = 1_000_000
# What an operator turns on for parallel image loading; target.sections and the threshold are
# Hadoop's defaults (12; 1,000,000), written out because the saver reads them.
SAVE_CONF = {"dfs.image.parallel.load": "true", "dfs.image.parallel.target.sections": "12",
             "dfs.image.parallel.inode.threshold": str(PARALLEL_INODE_THRESHOLD),
             "dfs.image.parallel.threads": "4"}
LAYOUT_VERSION = -66  # NameNodeLayoutVersion.CURRENT_LAYOUT_VERSION of Hadoop 3.3.x
NAMESPACE_ID = 7_000_001
CLUSTER_ID = "CID-hdfs-events-large-namespace"
IMAGE_TXID = 1
GENSTAMP = 1001  # GenerationStamp.LAST_RESERVED_STAMP + 1
REPLICATION = 3  # every file's
ROOT_NS_QUOTA = (1 << 63) - 1  # Long.MAX_VALUE: the root's default, as a formatted NameNode's


@dataclass(frozen=True, slots=True)
class NamespaceImage:
    name_dir: Path  # holds current/: what HdfsCluster.start(image=...) takes
    files: int
    summary: Summary
    build: dict[str, Any]  # seconds per step of the build that made it; "cached": reused

    @property
    def image(self) -> Path:
        """The fsimage file (its txid: 1 as reconstructed, the NameNode's when it saved it)."""
        return max((self.name_dir / "current").glob("fsimage_" + "[0-9]" * 19))

    @property
    def heap(self) -> str:
        """A NameNode heap that holds this namespace: ~500 bytes per file (its inode, ~1.2
        blocks and their map entries) and room to save, 1g at least."""
        return f"{max(1, -(-self.files * 600 // 2**30))}g"


def namespace_image(files: int, *, cache: Path = CACHE, heap: str = "2g") -> NamespaceImage:
    """The cached name directory of namespace_shape.walk(files), built when missing. heap: the
    reconstructor's -Xmx (it streams: 2g holds 10M files)."""
    root = cache / f"{SHAPE}-v{SHAPE_VERSION}.{IMAGE_VERSION}-{files}"
    done = root / "build.json"
    cache.mkdir(parents=True, exist_ok=True)
    # One builder per image: a test process and a bench smoke (or two test workers) asking at
    # once wait for the first build instead of removing each other's half-written files.
    with (cache / f"{root.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _cached_or_built(root, done, files, heap)


def _cached_or_built(root: Path, done: Path, files: int, heap: str) -> NamespaceImage:
    if done.exists():
        return NamespaceImage(root, files, _read_summary(root / "summary.json"),
                              {**json.loads(done.read_text()), "cached": True})
    shutil.rmtree(root, ignore_errors=True)
    work = root / "work"
    current = root / "current"
    work.mkdir(parents=True)
    current.mkdir()
    started = time.perf_counter()
    xml = work / "fsimage.xml"
    with xml.open("w", encoding="ascii", buffering=1 << 20) as out:
        counted = write_image_xml(files, out, work)
    xml_s = time.perf_counter() - started
    image = current / f"fsimage_{IMAGE_TXID:019d}"
    reconstruct_rss_mb = reconstruct(xml, image, heap=heap)
    reconstruct_s = time.perf_counter() - started - xml_s
    _write_md5(image)
    (current / "seen_txid").write_text(f"{IMAGE_TXID}\n")
    (current / "VERSION").write_text(
        f"namespaceID={NAMESPACE_ID}\nclusterID={CLUSTER_ID}\ncTime=0\n"
        f"storageType=NAME_NODE\nblockpoolID=BP-{NAMESPACE_ID}-127.0.0.1-0\n"
        f"layoutVersion={LAYOUT_VERSION}\n")
    shutil.rmtree(work)
    build: dict[str, Any] = {"xml_s": round(xml_s, 1), "reconstruct_s": round(reconstruct_s, 1),
                             "reconstruct_peak_rss_mb": reconstruct_rss_mb}
    inodes = counted.files + counted.dirs
    made = NamespaceImage(root, files, counted, build)
    if inodes >= PARALLEL_INODE_THRESHOLD:
        build.update(save_by_namenode(made))
    (root / "summary.json").write_text(json.dumps(asdict(counted), indent=1) + "\n")
    build.update(seconds=round(time.perf_counter() - started, 1),
                 image_bytes=made.image.stat().st_size, inodes=inodes)
    done.write_text(json.dumps(build) + "\n")
    return NamespaceImage(root, files, counted, {**build, "cached": False})


def save_by_namenode(made: NamespaceImage) -> dict[str, Any]:
    """`made`'s current/ replaced by the image a NameNode started on it saves with SAVE_CONF
    (safe mode, saveNamespace), with its MD5 file, VERSION and a seen_txid naming it. Returns
    the NameNode's start and save seconds and its process's peak RSS."""
    from tests.kit.hadoop.cluster import HdfsCluster  # cluster's host imports this module

    work = made.name_dir / "namenode"
    shutil.rmtree(work, ignore_errors=True)
    started = time.perf_counter()
    with HdfsCluster.start(work, image=made.name_dir, datanodes=0, conf=SAVE_CONF,
                           heap=made.heap) as hdfs:
        start_s = hdfs.started_s
        hdfs.checkpoint()
        save_s = time.perf_counter() - started - start_s
        rss_mb = _peak_rss_mb(hdfs.pid)
    saved = max((work / "dfs" / "name-0-1" / "current").glob("fsimage_" + "[0-9]" * 19))
    current = made.name_dir / "current"
    for old in current.glob("fsimage_*"):
        old.unlink()
    for name in (saved.name, saved.name + ".md5"):
        shutil.move(saved.with_name(name), current / name)
    (current / "seen_txid").write_text(f"{int(saved.name.split('_')[1])}\n")
    shutil.rmtree(work)
    return {"namenode_start_s": round(start_s, 1), "namenode_save_s": round(save_s, 1),
            "namenode_peak_rss_mb": rss_mb, "namenode_heap": made.heap}


def _peak_rss_mb(pid: int) -> int:
    """VmHWM of a running process (Linux): its peak resident set so far."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) // 1024
    raise RuntimeError(f"/proc/{pid}/status has no VmHWM")


def write_image_xml(files: int, out: IO[str], work: Path) -> Summary:
    """The XML `hdfs oiv -p XML` writes for walk(files), streamed: the INodeSection's header
    holds counts known only at the end and a directory's children are known only once walked,
    so inodes and directories go to two spool files in `work` first. Returns the counts."""
    counts = Summary()
    inodes, last_inode, block_id = 0, 0, FIRST_BLOCK_ID - 1
    inode_spool, dir_spool = work / "inodes.xml", work / "directories.xml"
    with inode_spool.open("w", encoding="ascii", buffering=1 << 20) as ins, \
            dir_spool.open("w", encoding="ascii", buffering=1 << 20) as dirs:
        for item in walk(files):
            if isinstance(item, EndDir):
                if item.children:
                    dirs.write(f"<directory><parent>{item.inode}</parent>"
                               + "".join(f"<child>{c}</child>" for c in item.children)
                               + "</directory>\n")
                continue
            inodes += 1
            last_inode = max(last_inode, item.inode)
            counts.add(item)
            name = "" if item.path == "/" else item.path.rsplit("/", 1)[1]
            perm = f"{item.owner}:{item.group}:{item.mode:04o}"
            if isinstance(item, Dir):
                quota = ROOT_NS_QUOTA if item.path == "/" else -1
                ins.write(f"<inode><id>{item.inode}</id><type>DIRECTORY</type><name>{name}</name>"
                          f"<mtime>{item.mtime_ms}</mtime><permission>{perm}</permission>"
                          f"<nsquota>{quota}</nsquota><dsquota>-1</dsquota></inode>\n")
                continue
            blocks = []
            for offset in range(0, item.size, BLOCK_SIZE):
                block_id += 1
                blocks.append(f"<block><id>{block_id}</id><genstamp>{GENSTAMP}</genstamp>"
                              f"<numBytes>{min(item.size - offset, BLOCK_SIZE)}</numBytes>"
                              "</block>")
            ins.write(f"<inode><id>{item.inode}</id><type>FILE</type><name>{name}</name>"
                      f"<replication>{REPLICATION}</replication><mtime>{item.mtime_ms}</mtime>"
                      f"<atime>{item.mtime_ms}</atime>"
                      f"<preferredBlockSize>{BLOCK_SIZE}</preferredBlockSize>"
                      f"<permission>{perm}</permission>"
                      + (f"<blocks>{''.join(blocks)}</blocks>" if blocks else "")
                      + "<storagePolicyId>0</storagePolicyId></inode>\n")
    out.write('<?xml version="1.0"?>\n<fsimage><version>'
              f"<layoutVersion>{LAYOUT_VERSION}</layoutVersion><onDiskVersion>1"
              "</onDiskVersion><oivRevision>hdfs-events-kit</oivRevision></version>\n"
              f"<NameSection><namespaceId>{NAMESPACE_ID}</namespaceId><genstampV1>1000"
              f"</genstampV1><genstampV2>{GENSTAMP}</genstampV2><genstampV1Limit>0"
              f"</genstampV1Limit><lastAllocatedBlockId>{block_id}</lastAllocatedBlockId>"
              f"<txid>{IMAGE_TXID}</txid></NameSection>\n"
              + _ERASURE_CODING_SECTION +
              f"<INodeSection><lastInodeId>{last_inode}</lastInodeId>"
              f"<numInodes>{inodes}</numInodes>\n")
    _append(inode_spool, out)
    out.write("</INodeSection>\n<INodeReferenceSection></INodeReferenceSection>"
              "<SnapshotSection><snapshotCounter>0</snapshotCounter><numSnapshots>0"
              "</numSnapshots></SnapshotSection>\n<INodeDirectorySection>")
    _append(dir_spool, out)
    out.write("</INodeDirectorySection>\n<FileUnderConstructionSection>"
              "</FileUnderConstructionSection>\n<SnapshotDiffSection></SnapshotDiffSection>\n"
              "<SecretManagerSection><currentId>0"
              "</currentId><tokenSequenceNumber>0</tokenSequenceNumber><numDelegationKeys>0"
              "</numDelegationKeys><numTokens>0</numTokens></SecretManagerSection>"
              "<CacheManagerSection><nextDirectiveId>1</nextDirectiveId><numDirectives>0"
              "</numDirectives><numPools>0</numPools></CacheManagerSection>\n</fsimage>\n")
    return counts


def declared_rows(files: int) -> dict[str, dict[str, Any]]:
    """The inventory table's rows (hdfs_events.inventory_schema's columns but image_txid) of
    walk(files), by path, every field as write_image_xml declares it: what a reader of the
    kit's image must give, field for field, to the millisecond."""
    rows = {}
    for item in walk(files):
        if isinstance(item, EndDir):
            continue
        is_file = isinstance(item, File)
        size = item.size if is_file else 0
        rows[item.path] = {
            "path": item.path, "type": "FILE" if is_file else "DIRECTORY", "size": size,
            "owner": item.owner, "group": item.group, "perms": f"{item.mode:04o}",
            "mtime": item.mtime_ms, "atime": item.mtime_ms if is_file else 0,
            "replication": REPLICATION if is_file else 0, "blocks": -(-size // BLOCK_SIZE),
            "preferred_block_size": BLOCK_SIZE if is_file else 0, "storage_policy_id": 0,
            "erasure_coding_policy_id": None,
            "ns_quota": 0 if is_file else ROOT_NS_QUOTA if item.path == "/" else -1,
            "ds_quota": 0 if is_file else -1, "symlink_target": None,
            "under_construction": False}
    return rows


# The built-in policies, as a freshly formatted NameNode's image lists them (ReverseXML
# requires the section; every policy disabled, as Hadoop 3.3's default).
_ERASURE_CODING_SECTION = "<ErasureCodingSection>" + "".join(
    f"<erasureCodingPolicy><policyId>{pid}</policyId><policyName>{name}</policyName>"
    "<cellSize>1048576</cellSize><policyState>DISABLED</policyState><ecSchema>"
    f"<codecName>{codec}</codecName><dataUnits>{data}</dataUnits><parityUnits>{parity}"
    "</parityUnits></ecSchema></erasureCodingPolicy>"
    for pid, name, codec, data, parity in (
        (1, "RS-6-3-1024k", "rs", 6, 3), (2, "RS-3-2-1024k", "rs", 3, 2),
        (3, "RS-LEGACY-6-3-1024k", "rs-legacy", 6, 3), (4, "XOR-2-1-1024k", "xor", 2, 1),
        (5, "RS-10-4-1024k", "rs", 10, 4))) + "</ErasureCodingSection>\n"


def _append(spool: Path, out: IO[str]) -> None:
    with spool.open(encoding="ascii") as f:
        shutil.copyfileobj(f, out, 1 << 20)
    spool.unlink()


def reconstruct(xml: Path, image: Path, *, heap: str) -> int:
    """Hadoop's Offline Image Reconstructor (`hdfs oiv -p ReverseXML`), in a JVM of its own:
    its main() ends in System.exit. Returns its peak RSS in MiB."""
    jars()
    with tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(
            [java(), f"-Xmx{heap}", "-cp", str(LIB / "*"),
             "org.apache.hadoop.hdfs.tools.offlineImageViewer.OfflineImageViewerPB",
             "-p", "ReverseXML", "-i", str(xml), "-o", str(image)],
            stdout=subprocess.DEVNULL, stderr=err)
        # wait4 gives this child's own peak RSS (RUSAGE_CHILDREN: the largest of any child)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        stderr = err.read()
    if process.returncode != 0 or not image.exists():
        raise RuntimeError(f"ReverseXML exited {process.returncode}: {stderr[-3000:]}")
    rss_mb = round(usage.ru_maxrss / 1024)
    return rss_mb


# `hdfs oiv -p Delimited`'s columns (PBImageDelimitedTextWriter, Hadoop 3.3.4).
DELIMITED_COLUMNS = ("Path", "Replication", "ModificationTime", "AccessTime",
                     "PreferredBlockSize", "BlocksCount", "FileSize", "NSQUOTA", "DSQUOTA",
                     "Permission", "UserName", "GroupName")


def delimited_listing(image: Path, out: Path, *, heap: str = "1g"
                      ) -> tuple[dict[str, dict[str, str]], float]:
    """Hadoop's Offline Image Viewer (`hdfs oiv -p Delimited`) over `image` into `out`, in a
    JVM of its own with UTC times (it prints them in the JVM's zone, to the minute): its rows
    by path, and the JVM's wall seconds, start included."""
    jars()
    started = time.perf_counter()
    done = subprocess.run(
        [java(), f"-Xmx{heap}", "-Duser.timezone=UTC", "-cp", str(LIB / "*"),
         "org.apache.hadoop.hdfs.tools.offlineImageViewer.OfflineImageViewerPB",
         "-p", "Delimited", "-i", str(image), "-o", str(out)],
        capture_output=True, text=True, timeout=3600, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0 or not out.exists():
        raise RuntimeError(f"oiv -p Delimited exited {done.returncode}: {done.stderr[-3000:]}")
    with out.open(encoding="utf-8") as f:
        header = tuple(next(f).rstrip("\n").split("\t"))
        if header != DELIMITED_COLUMNS:
            raise RuntimeError(f"oiv -p Delimited printed columns {header}")
        rows = {}
        for line in f:
            row = dict(zip(DELIMITED_COLUMNS, line.rstrip("\n").split("\t"), strict=True))
            if row["Path"] in rows:
                raise RuntimeError(f"oiv -p Delimited printed {row['Path']} twice")
            rows[row["Path"]] = row
    return rows, seconds


def as_delimited(row: Mapping[str, Any]) -> dict[str, str]:
    """An inventory table row (hdfs_events.inventory_schema's columns) in oiv -p Delimited's
    words: times to the minute in UTC, the type letter ('-' for a symlink too, as
    PBImageDelimitedTextWriter prints it) before FsPermission's nine characters."""
    minute = "%Y-%m-%d %H:%M"
    values = (row["path"], row["replication"],
              datetime.fromtimestamp(row["mtime"] / 1000, UTC).strftime(minute),
              datetime.fromtimestamp(row["atime"] / 1000, UTC).strftime(minute),
              row["preferred_block_size"], row["blocks"], row["size"], row["ns_quota"],
              row["ds_quota"],
              ("d" if row["type"] == "DIRECTORY" else "-") + symbolic_mode(int(row["perms"], 8)),
              row["owner"], row["group"])
    return dict(zip(DELIMITED_COLUMNS, map(str, values), strict=True))


def symbolic_mode(mode: int) -> str:
    """The 9 permission characters as FsPermission.toString writes them (t/T for sticky)."""
    out = []
    for shift in (6, 3, 0):
        bits = mode >> shift
        out += ["r" if bits & 4 else "-", "w" if bits & 2 else "-", "x" if bits & 1 else "-"]
    if mode & 0o1000:
        out[-1] = "t" if mode & 1 else "T"
    return "".join(out)


def _write_md5(image: Path) -> None:
    """fsimage_N.md5 as MD5FileUtils writes it: the NameNode refuses an image without one."""
    md5 = hashlib.md5()
    with image.open("rb") as f:
        while chunk := f.read(1 << 20):
            md5.update(chunk)
    image.with_name(image.name + ".md5").write_text(f"{md5.hexdigest()} *{image.name}\n")


def _read_summary(path: Path) -> Summary:
    doc = json.loads(path.read_text())
    return Summary(files=doc["files"], dirs=doc["dirs"], bytes=doc["bytes"],
                   subtrees={k: Subtree(**v) for k, v in doc["subtrees"].items()})


def link_name_dir(image: Path, name_dir: Path) -> None:
    """`image`'s current/ into `name_dir`/current as hard links (a copy across file systems):
    the NameNode writes new files beside them and never rewrites one in place."""
    target = name_dir / "current"
    target.mkdir(parents=True, exist_ok=True)
    for source in (image / "current").iterdir():
        try:
            os.link(source, target / source.name)
        except OSError:
            shutil.copy2(source, target / source.name)
