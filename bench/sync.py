"""Live replication to S3 (`hdfs-events-agent sync`) from a real NameNode into moto S3, beside
Hadoop's `distcp -update` of the same tree, in the same run.

    .venv/bin/python -m bench.sync [--files 8] [--mb-per-file 8] [--lag-seconds 20]
                                   [--lag-rate 4] [--append-base-mb 64] [--copy 4x64MB ...]
                                   [--lag-during-mb 1000] [--lag-during-copies 5]
                                   [--out bench-out/sync.json]

The issue's rows (#33): `--copy 4x64MB --copy 1x1GB --copy 10000x4KB --lag-during-mb 1000`
(minutes each on 2 cores); the smoke runs none of them.

1. A real HDFS starts (tests/kit/hadoop) and a moto server whose S3 requests to the bench
   bucket are counted at the server (method and kind: the bill's classes), for both tools.
2. Initial copy of `--files` files: `hadoop distcp -update -direct hdfs://.../tree s3a://...`
   (tests/kit/hadoop/edge.py: Hadoop's own DistCp, LocalJobRunner) and the sync's first start
   (`hdfs-events-agent sync run`, a process of its own: the listing copies the tree), each
   timed from its command's start until the copy is done (JVM start included in both). Before
   them each copies a tree of one 1-byte file: its fixed cost, so the JSON also has the rate
   once running, bytes / (time - fixed cost) (`--no-fixed-cost`: the smoke skips it).
   `-direct` writes each object once; without it DistCp writes a temporary object and renames
   it (a COPY and a DELETE more per file on S3).
3. Lag: a writer closes `--lag-rate` files a second for `--lag-seconds` while the sync runs
   (window_ms = 1000, the default); a poller lists the prefix every 50 ms (its requests are
   not counted) and notes when each object appears. Lag = appearance - the client's close.
   Beside it, the baseline a scheduled DistCp gives: `distcp -update` of the same changed tree,
   timed (a change waits at least one such run, plus half the schedule's period on average).
4. S3 requests per replicated file in the steady phase, beside the incremental DistCp's.
2b. Each `--copy COUNTxSIZE` row: a tree of its own (random bytes, `hdfs dfs -put -d`), copied
   first by DistCp, then by a fresh sync process into a prefix of its own (its first start),
   one at a time. Beside the seconds: each tool's CPU (DistCp's JVM from getrusage of the
   waited child; the sync's process, its JVM threads included, from /proc/<pid>/stat, with
   CPU by thread name), less what its 1-byte copy cost, per GB; the moto server's CPU (this
   process) while each ran; and the HDFS load each caused, from the daemons' own metrics
   (JMX servlet): NameNode RPCs by method, DataNode read-block and block-checksum ops.
3b. `--lag-during-mb M`: an M MB file is put into the synced tree and, until its object
   appears, the writer closes `--lag-rate` small files a second: their lag while it copies.
   `--lag-during-copies K`: K such files one after another, the lags pooled (one 1 GB copy
   holds ~33 files quiet, whose p99 is their maximum; 5 hold enough for the third largest).
   The JSON keeps the slowest files' close and appearance times and every request moto took
   0.25 s or more to answer (wall clock, as the sync's log in bench-out/sync.log): where a
   slow file's time went.
5. Append: an `--append-base-mb` file already replicated gets 64 KiB appended. The sync sends
   the new bytes only when the object is at least 5 MiB (docs/sync.md, "Append"), else it
   re-copies the file: its own count of bytes sent, whether it sent them as an append, and the
   requests counted at the server. The baseline, the same multipart upload of UploadPartCopy
   (the unchanged bytes, copied inside S3) + UploadPart (the new bytes) made by hand with boto3
   on the same objects, is checked byte for byte against HDFS.
Prints the figures and writes bench-out/sync.json.
"""

from __future__ import annotations

import argparse
import base64
import getpass
import json
import logging
import os
import re
import resource
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config

from bench import OUT_DIR
from bench.hadoop_jmx import beans, namenode_http

BUCKET = "bench-replica"
CLUSTER = "bench"
TREE = "/bench/tree"
APPENDED = "/bench/append/base"
MIB = 1024 * 1024
_POLLER = "bench-poller"  # the poller's User-Agent mark: its requests are not the sync's bill
_AWS = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_DEFAULT_REGION": "eu-west-1", "AWS_CONFIG_FILE": "/dev/null",
        "AWS_SHARED_CREDENTIALS_FILE": "/dev/null"}


# --- the S3 bill, counted at the server ----------------------------------------------------------

class S3Requests:
    """WSGI middleware in front of moto: counts the requests to one bucket by S3's price classes
    (PUT, COPY, POST and LIST are billed at one price, GET and HEAD at another, DELETE free),
    and notes every request of any service that took SLOW_S or more."""

    SLOW_S = 0.25

    def __init__(self, app: Callable[..., Any], bucket: str) -> None:
        self._app, self._bucket = app, bucket
        self._lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        # Requests moto took this long or more to answer, any service (its server holds its
        # Python while it assembles a large object: every other request waits).
        self.slow: list[dict[str, Any]] = []

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        kind = self.kind(environ)
        if kind is not None:
            with self._lock:
                self.counts[kind] += 1
        start, began = time.perf_counter(), time.time()
        try:
            return self._app(environ, start_response)
        finally:
            seconds = time.perf_counter() - start
            if seconds >= self.SLOW_S:
                with self._lock:
                    self.slow.append({
                        "at": round(began, 3), "seconds": round(seconds, 3),
                        "request": environ.get("HTTP_X_AMZ_TARGET") or (
                            f"{environ['REQUEST_METHOD']} {environ.get('PATH_INFO', '')}"
                            f"?{environ.get('QUERY_STRING', '')}"[:120])})

    def kind(self, environ: dict[str, Any]) -> str | None:
        if _POLLER in environ.get("HTTP_USER_AGENT", ""):
            return None
        path, host = environ.get("PATH_INFO", ""), environ.get("HTTP_HOST", "")
        if host.startswith(self._bucket + "."):
            key = path.lstrip("/")
        elif path == "/" + self._bucket or path.startswith(f"/{self._bucket}/"):
            key = path[len(self._bucket) + 2:]
        else:
            return None  # DynamoDB (the sync's state), another bucket
        method, query = environ["REQUEST_METHOD"], environ.get("QUERY_STRING", "")
        if method == "DELETE":
            return "delete"
        if method == "GET" and (not key or "uploads" in query or "list-type" in query):
            return "list"
        if method in ("GET", "HEAD"):
            return "read"
        if method == "PUT" and "HTTP_X_AMZ_COPY_SOURCE" in environ:
            return "copy"
        return "write"  # PUT object or part, POST (create / complete multipart upload)

    def snapshot(self) -> Counter[str]:
        with self._lock:
            return Counter(self.counts)


@contextmanager
def moto_server() -> Iterator[tuple[str, S3Requests]]:
    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from werkzeug.serving import make_server

    from tests.kit import moto_fixes
    from tests.kit.moto_s3_complete import complete_checks_full_object_crc32c

    moto_fixes.apply()  # as wherever a moto server runs (DynamoDB's writes to a new partition)
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto server's request lines
    counter = S3Requests(DomainDispatcherApplication(create_backend_app), BUCKET)
    server = make_server("127.0.0.1", 0, counter, True, request_handler=MotoRequestHandler)
    thread = threading.Thread(target=server.serve_forever, name="moto", daemon=True)
    # S3's CompleteMultipartUpload reply carries the stored CRC32C; moto's does not, and the
    # HEAD a client then sends is no request S3 would get (tests/kit/moto_s3_complete.py).
    with complete_checks_full_object_crc32c():
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}", counter
        finally:
            server.shutdown()
            thread.join()


def per_file(counts: Counter[str], files: int) -> dict[str, float]:
    out = {k: round(v / files, 2) for k, v in sorted(counts.items())}
    out["total"] = round(sum(counts.values()) / files, 2)
    return out


# --- the workload ----------------------------------------------------------------------------------

def content(n: int) -> str:
    """n characters of incompressible text (base64 of random bytes: HDFS writes str as UTF-8)."""
    return base64.b64encode(os.urandom(n * 3 // 4 + 3)).decode()[:n]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def distcp(hadoop: Path, source: str, target: str) -> None:
    done = subprocess.run([str(hadoop), "distcp", "-update", "-direct", source, target],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"distcp exited {done.returncode}: {done.stderr[-2000:]}")


def keys_under(s3: Any, prefix: str) -> dict[str, int]:
    out = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
        out.update({o["Key"][len(prefix):]: o["Size"] for o in page.get("Contents", [])})
    return out


class SteadyWriter:
    """Closes one new file every 1/rate s under TREE/steady while the sync runs, and a poller
    that notes when each file's object appears in S3."""

    def __init__(self, hdfs: Any, rate: float, seconds: float, size: int, prefix: str,
                 subdir: str = "steady", until: Callable[[], bool] | None = None) -> None:
        """until: write on past `seconds` until it holds (a large copy has ended)."""
        self.hdfs, self.rate, self.seconds, self.size = hdfs, rate, seconds, size
        self.subdir, self._until = subdir, until
        self.prefix = prefix + TREE.lstrip("/") + f"/{subdir}/"
        self.closed: dict[str, float] = {}
        self.seen: dict[str, float] = {}
        self._done = threading.Event()
        self._s3 = boto3.client("s3", config=Config(user_agent_extra=_POLLER))

    def run(self) -> None:
        poller = threading.Thread(target=self._poll, name="poller", daemon=True)
        poller.start()
        start, i = time.monotonic(), 0
        body = content(self.size)
        while time.monotonic() - start < self.seconds or (
                self._until is not None and not self._until()):
            due = start + i / self.rate
            if due > time.monotonic():
                time.sleep(due - time.monotonic())
            name = f"f-{i:05d}"
            self.hdfs.run([["write", f"{TREE}/{self.subdir}/{name}", body]])
            self.closed[name] = time.time()
            i += 1
        deadline = time.monotonic() + 120
        while set(self.closed) - set(self.seen) and time.monotonic() < deadline:
            time.sleep(0.05)
        self._done.set()
        poller.join()
        missing = set(self.closed) - set(self.seen)
        if missing:
            raise SystemExit(f"sync never replicated {len(missing)} of {len(self.closed)} "
                             f"steady files, e.g. {sorted(missing)[:3]}")

    def _poll(self) -> None:
        while not self._done.is_set():
            keys = keys_under(self._s3, self.prefix)
            now = time.time()
            for name in keys:
                self.seen.setdefault(name, now)
            time.sleep(0.05)

    def lags_ms(self) -> list[float]:
        return [(self.seen[n] - t) * 1000 for n, t in self.closed.items()]

    def slowest(self, n: int) -> list[dict[str, Any]]:
        """The n files of largest lag: name, close and appearance (time.time())."""
        worst = sorted(self.closed, key=lambda f: self.closed[f] - self.seen[f])[:n]
        return [{"file": f"{self.subdir}/{f}", "closed": round(self.closed[f], 3),
                 "seen": round(self.seen[f], 3),
                 "lag_ms": round((self.seen[f] - self.closed[f]) * 1000, 1)} for f in worst]


def part_copy_append(s3: Any, source_key: str, target_key: str, old_size: int,
                     new_bytes: bytes) -> dict[str, Any]:
    """The append alternative: the unchanged bytes copied inside S3 (UploadPartCopy; every part
    but the last must be >= 5 MiB, so only when the old object is), the new bytes uploaded."""
    if old_size < 5 * MIB:
        raise SystemExit(f"UploadPartCopy needs the copied part >= 5 MiB, got {old_size}")
    start = time.perf_counter()
    upload = s3.create_multipart_upload(Bucket=BUCKET, Key=target_key)["UploadId"]
    copied = s3.upload_part_copy(Bucket=BUCKET, Key=target_key, UploadId=upload, PartNumber=1,
                                 CopySource={"Bucket": BUCKET, "Key": source_key},
                                 CopySourceRange=f"bytes=0-{old_size - 1}")
    sent = s3.upload_part(Bucket=BUCKET, Key=target_key, UploadId=upload, PartNumber=2,
                          Body=new_bytes)
    s3.complete_multipart_upload(
        Bucket=BUCKET, Key=target_key, UploadId=upload, MultipartUpload={"Parts": [
            {"PartNumber": 1, "ETag": copied["CopyPartResult"]["ETag"]},
            {"PartNumber": 2, "ETag": sent["ETag"]}]})
    return {"seconds": round(time.perf_counter() - start, 3), "requests": 4,
            "bytes_sent": len(new_bytes)}


# --- copy rows: files of one size, each tool's first copy of them ------------------------------------

_SIZE = re.compile(r"(\d+)x(\d+(?:\.\d+)?)(KB|MB|GB)")
_UNITS = {"KB": 1000, "MB": 1000**2, "GB": 1000**3}


@dataclass(frozen=True, slots=True)
class CopyRow:
    """`--copy 4x64MB`: that many files of that size (decimal units, as the issue's rows)."""
    files: int
    size: int
    label: str

    @classmethod
    def parse(cls, text: str) -> CopyRow:
        m = _SIZE.fullmatch(text)
        if m is None:
            raise argparse.ArgumentTypeError(f"--copy {text!r}: COUNTxSIZE, SIZE in KB, MB or "
                                             "GB (e.g. 4x64MB, 1x1GB, 10000x4KB)")
        return cls(int(m[1]), int(float(m[2]) * _UNITS[m[3]]), text)

    @property
    def tree(self) -> str:
        return f"/bench/rows/{self.label}"


def write_local_tree(directory: Path, files: int, size: int) -> Path:
    """Random bytes (incompressible), written in 8 MB pieces so a 1 GB file needs no 1 GB
    string."""
    directory.mkdir(parents=True)
    for i in range(files):
        with (directory / f"part-{i:05d}").open("wb") as f:
            left = size
            while left:
                piece = min(left, 8 * 1000**2)
                f.write(os.urandom(piece))
                left -= piece
    return directory


# Files up to this size are written by the NameNode host's own client, many per call (one JVM,
# the FileSystem API): `hdfs dfs -put` of 10,000 files took over 30 min here.
SMALL_FILE = 1_000_000


def write_small_tree(hdfs: Any, row: CopyRow, batch: int = 500) -> None:
    """The row's files (incompressible text, `row.size` bytes each) under its tree."""
    hdfs.run([["mkdirs", row.tree]])
    for first in range(0, row.files, batch):
        hdfs.run([["write", f"{row.tree}/part-{i:05d}", content(row.size)]
                  for i in range(first, min(row.files, first + batch))])


def put_tree(hdfs: Any, local: Path, target: str) -> None:
    """`hdfs dfs -put -d` (no `._COPYING_` temporary names) of a local directory."""
    hdfs.run([["mkdirs", str(Path(target).parent)],
              ["shell", getpass.getuser(), ["-put", "-d", str(local), target]]])


def process_cpu_s(pid: int) -> float:
    """utime + stime of a live process, every thread (the sync's JVM runs inside it)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def thread_cpu_s(pid: int) -> dict[str, float]:
    """CPU seconds by thread name (JVM threads are named; Python's are "python" or
    "hdfs-events-ag"), summed over threads of one name."""
    out: Counter[str] = Counter()
    tick = os.sysconf("SC_CLK_TCK")
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            text = (task / "stat").read_text()
        except FileNotFoundError:
            continue  # the thread ended
        name = text[text.index("(") + 1:text.rindex(")")]
        fields = text.rsplit(")", 1)[1].split()
        out[re.sub(r"[- ]?\d+$", "", name)] += (int(fields[11]) + int(fields[12])) / tick
    return {k: round(v, 2) for k, v in out.most_common(12)}


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def own_cpu_s() -> float:
    """The bench process's CPU: moto server serving both tools (the poller is idle then)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class HdfsLoad:
    """What a copy asks of HDFS, from the daemons' own metrics (JMX servlet): NameNode RPCs by
    method, and the DataNode's read-block and block-checksum operations and bytes read."""

    def __init__(self, conf_dir: Path) -> None:
        self._namenode = namenode_http(conf_dir)
        info = beans(self._namenode, "Hadoop:service=NameNode,name=NameNodeInfo")[0]
        (node,) = json.loads(info["LiveNodes"]).values()
        self._datanode = f"http://{node['infoAddr']}"


    # Hadoop's metrics system refreshes what JMX shows at most once a period (10 s by
    # default, MetricsSourceAdapter's JMX cache): a copy done within it read 0 block reads.
    JMX_CACHE_S = 11.0

    def snapshot(self) -> Counter[str]:
        time.sleep(self.JMX_CACHE_S)
        out: Counter[str] = Counter()
        for bean in beans(self._namenode,
                                "Hadoop:service=NameNode,name=RpcDetailedActivityForPort*"):
            for k, v in bean.items():
                if k.endswith("NumOps") and isinstance(v, int):
                    out["namenode." + k[:-len("NumOps")]] += v
        for bean in beans(self._datanode, "Hadoop:service=DataNode,name=DataNodeActivity*"):
            for k in ("ReadBlockOpNumOps", "BlockChecksumOpNumOps", "BytesRead"):
                out["datanode." + k.removesuffix("NumOps")] += int(bean.get(k, 0))
        return out

    # The DataNode's own calls to the NameNode, whoever copies.
    DATANODE_RPCS = ("namenode.SendHeartbeat", "namenode.BlockReport",
                     "namenode.BlockReceivedAndDeleted", "namenode.CacheReport")

    @staticmethod
    def summary(delta: Counter[str]) -> dict[str, int]:
        namenode = {k: v for k, v in delta.items()
                    if k.startswith("namenode.") and v and k not in HdfsLoad.DATANODE_RPCS}
        return {"namenode_rpcs": sum(namenode.values()),
                **dict(sorted(namenode.items(), key=lambda kv: -kv[1])[:6]),
                **{k: v for k, v in delta.items() if k.startswith("datanode.")}}


def measure_row(row: CopyRow, *, hdfs: Any, hadoop: Path, s3: Any, work: Path,
                fixed: dict[str, float], load: HdfsLoad, sync_extra: str) -> dict[str, Any]:
    """One row: DistCp's copy of the row's tree, then the sync's first start on it (a fresh
    process and destination), each with its CPU, its S3 requests and its HDFS load."""
    from tests.kit.sync_agent import (
        start_sync,
        sync_totals,
        wait_for_replication,
        write_sync_config,
    )

    expected = {f"part-{i:05d}": row.size for i in range(row.files)}
    out: dict[str, Any] = {"files": row.files, "bytes": row.files * row.size}
    hdfs_before = load.snapshot()
    cpu = children_cpu_s()
    moto_cpu = own_cpu_s()
    target = f"rows-distcp/{row.label}/"
    seconds, _ = timed(lambda: distcp(hadoop, hdfs.uri + row.tree, f"s3a://{BUCKET}/{target}"))
    out["distcp"] = {"seconds": round(seconds, 3), "cpu_s": round(children_cpu_s() - cpu, 2),
                     "moto_cpu_s": round(own_cpu_s() - moto_cpu, 2),
                     "hdfs": HdfsLoad.summary(load.snapshot() - hdfs_before)}
    if keys_under(s3, target) != expected:
        raise SystemExit(f"distcp {row.label}: the objects are not the tree")
    dest = f"s3://{BUCKET}/rows-sync/{row.label}/"
    config = write_sync_config(work / f"sync-{row.label}", cluster=CLUSTER, uri=hdfs.uri,
                               conf_dir=hdfs.conf_dir, destination=dest, paths=[row.tree],
                               sync_extra=sync_extra)
    hdfs_before = load.snapshot()
    moto_cpu = own_cpu_s()
    start = time.perf_counter()
    sync = start_sync(config)
    try:
        hdfs.run([["mkdirs", f"/markers/{row.label}"]])
        wait_for_replication(sync, CLUSTER, dest, hdfs.txid(), timeout_s=3600)
        seconds = time.perf_counter() - start
        out["sync"] = {"seconds": round(seconds, 3),
                       "cpu_s": round(process_cpu_s(sync.process.pid), 2),
                       "moto_cpu_s": round(own_cpu_s() - moto_cpu, 2),
                       "hdfs": HdfsLoad.summary(load.snapshot() - hdfs_before),
                       "threads_cpu_s": thread_cpu_s(sync.process.pid),
                       "own_count": sync_totals(CLUSTER, dest)}
        if sync.stop() != 0:
            raise SystemExit(f"sync exited {sync.process.returncode}: {sync.log_tail()}")
    except BaseException:
        if sync.process.poll() is None:
            sync.kill()
        raise
    prefix = f"rows-sync/{row.label}{row.tree}/"
    if (got := keys_under(s3, prefix)) != expected:
        raise SystemExit(f"sync {row.label}: the objects are not the tree: "
                         f"{sorted(set(got.items()) ^ set(expected.items()))[:5]}; "
                         f"{sync.log_tail()}")
    for tool in ("distcp", "sync"):
        r = out[tool]
        rest = r["seconds"] - fixed.get(tool, 0.0)
        r["mb_per_s"] = round(out["bytes"] / 1e6 / r["seconds"], 2)
        r["objects_per_s"] = round(row.files / r["seconds"], 2)
        r["running_mb_per_s"] = round(out["bytes"] / 1e6 / rest, 2) if rest > 0 else None
        r["running_objects_per_s"] = round(row.files / rest, 2) if rest > 0 else None
        # CPU once running: less what copying one byte cost (JVM start, clients, job set-up).
        r["running_cpu_s"] = round(r["cpu_s"] - fixed.get(f"{tool}_cpu", 0.0), 2)
        r["cpu_s_per_gb"] = round(r["running_cpu_s"] / (out["bytes"] / 1e9), 2)
    return out


def lag_during_copies(*, hdfs: Any, s3: Any, sync: Any, requests: S3Requests, work: Path,
                      destination: str, size: int, copies: int, rate: float) -> dict[str, Any]:
    """3b: `copies` files of `size` bytes put into the synced tree one after another; from each
    one's close until its object appears, a writer closes `rate` small files a second. Their
    lags are pooled: one 1 GB copy took ~11 s quiet, ~33 files, whose p99 is their maximum."""
    from tests.kit.sync_agent import wait_for_replication

    writers: list[SteadyWriter] = []
    seconds: list[float] = []
    threads: Counter[str] = Counter()
    slow_before = len(requests.slow)
    for n in range(copies):
        big = f"{TREE}/during-big-{n}"
        local = write_local_tree(work / "local" / f"during-{n}", 1, size)
        put_tree(hdfs, local, big)
        subprocess.run(["rm", "-rf", str(local)], check=True)
        closed, copied = time.perf_counter(), len(seconds)

        def big_copied(key: str = "sync" + big + "/part-00000", closed: float = closed,
                       copied: int = copied) -> bool:
            if len(seconds) == copied and keys_under(s3, key):
                seconds.append(time.perf_counter() - closed)
            return len(seconds) > copied

        writer = SteadyWriter(hdfs, rate, 1.0, 64 * 1024, "sync/", f"during-{n}",
                              until=big_copied)
        before = thread_cpu_s(sync.process.pid)
        writer.run()
        threads.update(thread_cpu_s(sync.process.pid))
        threads.subtract(before)
        hdfs.run([["mkdirs", f"/markers/during-{n}"]])
        wait_for_replication(sync, CLUSTER, destination, hdfs.txid(), timeout_s=600)
        wait_for_no_pending(sync, destination)
        writers.append(writer)
    lags = [lag for w in writers for lag in w.lags_ms()]
    return {"bytes": size, "copies": copies, "rate_per_s": rate, "files": len(lags),
            "copy_seconds": [round(s, 3) for s in seconds],
            "threads_cpu_s": {k: round(v, 2) for k, v in threads.most_common(8)},
            # The slowest files' close and appearance (wall clock, as the sync's log and the
            # slow requests), to find where their lag went.
            "slowest": sorted((f for w in writers for f in w.slowest(5)),
                              key=lambda f: -f["lag_ms"])[:5],
            "slow_requests": requests.slow[slow_before:],
            "lag_ms": {"p50": round(statistics.median(lags), 1),
                       "p99": round(percentile(lags, 99), 1), "max": round(max(lags), 1)}}


def wait_for_no_pending(sync: Any, destination: str, timeout_s: float = 600) -> None:
    """Until the sync holds no pending path: a copy of long_copy_mb or more runs beside later
    windows (docs/sync.md), so the replicated txid passes before its object is there."""
    from hdfs_events import names
    from tests.kit.sync_agent import SYNC_TABLE

    ddb = boto3.client("dynamodb")

    def none_pending() -> bool:
        return not ddb.query(
            TableName=SYNC_TABLE, ConsistentRead=True, Limit=1,
            KeyConditionExpression="#pk = :pk AND begins_with(#sk, :p)",
            ExpressionAttributeNames={"#pk": names.SYNC_PK, "#sk": names.SYNC_SK},
            ExpressionAttributeValues={":pk": {"S": CLUSTER},
                                       ":p": {"S": f"{destination}|pending|"}})["Items"]

    sync.wait_for(none_pending, lambda: "a copy beside the windows never ended", timeout_s)


# --- the run -----------------------------------------------------------------------------------------

def measure(files: int, size: int, lag_seconds: float, lag_rate: float, append_base: int,
            work: Path, fixed_cost: bool = True, rows: tuple[CopyRow, ...] = (),
            lag_during: int = 0, during_copies: int = 1) -> dict[str, Any]:
    from tests.kit.hadoop.cluster import HdfsCluster
    from tests.kit.hadoop.edge import write_edge_conf, write_hadoop_launcher
    from tests.kit.sync_agent import (
        create_sync_table,
        start_sync,
        sync_totals,
        wait_for_replication,
        write_sync_config,
    )

    os.environ.update(_AWS)
    os.environ.pop("AWS_PROFILE", None)
    dest = f"s3://{BUCKET}/sync/"
    with moto_server() as (endpoint, requests):
        os.environ["AWS_ENDPOINT_URL"] = endpoint
        # A client's close waits for the NameNode to see the last block complete, retrying
        # after dfs.client.block.write.locateFollowingBlock.initial.delay.ms (400) when the
        # DataNode's report has not arrived yet: 0.41 s per small file here, 10,000 files in
        # over an hour. The tree's writer only (the tools read).
        small = any(row.size <= SMALL_FILE for row in rows)
        hdfs = HdfsCluster.start(work / "cluster", conf={
            "dfs.client.block.write.locateFollowingBlock.initial.delay.ms": "10"} if small
            else None)
        sync = None
        try:
            s3 = boto3.client("s3")
            s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={
                "LocationConstraint": _AWS["AWS_DEFAULT_REGION"]})
            create_sync_table()
            conf = write_edge_conf(hdfs.conf_dir, work / "edge-conf", s3_endpoint=endpoint,
                                   region=_AWS["AWS_DEFAULT_REGION"])
            hadoop = write_hadoop_launcher(work / "bin", conf)  # as production runs it
            bodies = {f"part-{i:05d}": content(size) for i in range(files)}
            hdfs.run([["mkdirs", str(Path(APPENDED).parent)],
                      *(["write", f"{TREE}/{name}", body] for name, body in bodies.items())])
            total = sum(len(b) for b in bodies.values())
            for row in rows:
                if row.size <= SMALL_FILE:
                    write_small_tree(hdfs, row)
                    continue
                local = write_local_tree(work / "local" / row.label, row.files, row.size)
                put_tree(hdfs, local, row.tree)
                subprocess.run(["rm", "-rf", str(local)], check=True)
            load = HdfsLoad(hdfs.conf_dir) if rows else None

            # What each tool costs before its first byte (JVM, clients, listing, job set-up):
            # each copies a tree of one 1-byte file.
            fixed: dict[str, float] = {}
            if fixed_cost:
                hdfs.run([["write", "/bench/one/byte", "x"]])
                cpu = children_cpu_s()
                fixed["distcp"], _ = timed(lambda: distcp(hadoop, hdfs.uri + "/bench/one",
                                                          f"s3a://{BUCKET}/fixed-distcp/"))
                fixed["distcp_cpu"] = children_cpu_s() - cpu
                one = write_sync_config(work / "sync-one", cluster=CLUSTER, uri=hdfs.uri,
                                        conf_dir=hdfs.conf_dir,
                                        destination=f"s3://{BUCKET}/fixed-sync/",
                                        paths=["/bench/one"])
                start = time.perf_counter()
                first = start_sync(one)
                hdfs.run([["mkdirs", "/markers/one"]])
                wait_for_replication(first, CLUSTER, f"s3://{BUCKET}/fixed-sync/", hdfs.txid(),
                                    timeout_s=600)
                fixed["sync"] = time.perf_counter() - start
                fixed["sync_cpu"] = process_cpu_s(first.process.pid)
                if first.stop() != 0:
                    raise SystemExit(f"sync exited {first.process.returncode}: "
                                     f"{first.log_tail()}")

            # 2. the initial copy, DistCp then the sync (one at a time: 2 shared cores); the
            # rows of --copy first, each tool's first copy of a tree of its own
            copied_rows = {row.label: measure_row(row, hdfs=hdfs, hadoop=hadoop, s3=s3,
                                                  work=work, fixed=fixed, load=load,
                                                  sync_extra="window_ms = 1000\n")
                           for row in rows if load is not None}
            before = requests.snapshot()
            distcp_s, _ = timed(lambda: distcp(hadoop, hdfs.uri + TREE, f"s3a://{BUCKET}/distcp/"))
            distcp_requests = requests.snapshot() - before
            if keys_under(s3, "distcp/") != {n: len(b) for n, b in bodies.items()}:
                raise SystemExit("distcp: the objects are not the tree")
            config = write_sync_config(work / "sync", cluster=CLUSTER, uri=hdfs.uri,
                                       conf_dir=hdfs.conf_dir, destination=dest,
                                       paths=[TREE, str(Path(APPENDED).parent)],
                                       sync_extra="window_ms = 1000\n")
            before = requests.snapshot()
            start = time.perf_counter()
            sync = start_sync(config)
            hdfs.run([["mkdirs", "/markers/listed"]])
            wait_for_replication(sync, CLUSTER, dest, hdfs.txid(), timeout_s=600)
            sync_s = time.perf_counter() - start
            sync_requests = requests.snapshot() - before
            listed = keys_under(s3, "sync" + TREE + "/")
            if listed != {n: len(b) for n, b in bodies.items()}:
                raise SystemExit(f"sync: the objects are not the tree: {sorted(listed)[:5]}")
            listing_totals = sync_totals(CLUSTER, dest)

            # 3. steady workload: lag, and the bill per file
            before = requests.snapshot()
            writer = SteadyWriter(hdfs, lag_rate, lag_seconds, 64 * 1024, "sync/")
            writer.run()
            hdfs.run([["mkdirs", "/markers/steady"]])
            wait_for_replication(sync, CLUSTER, dest, hdfs.txid())
            steady_requests = requests.snapshot() - before
            steady = len(writer.closed)
            lags = writer.lags_ms()
            before = requests.snapshot()
            incremental_s, _ = timed(lambda: distcp(hadoop, hdfs.uri + TREE,
                                                    f"s3a://{BUCKET}/distcp/"))
            incremental_requests = requests.snapshot() - before
            if len(keys_under(s3, "distcp/steady/")) != steady:
                raise SystemExit("distcp -update did not copy the steady files")

            # 3b. lag while large files copy, one after another
            during = (lag_during_copies(hdfs=hdfs, s3=s3, sync=sync, requests=requests,
                                        work=work, destination=dest, size=lag_during,
                                        copies=during_copies, rate=lag_rate)
                      if lag_during else None)

            # 5. append: the sync's, then UploadPartCopy + UploadPart by hand on the same bytes
            base, added = content(append_base), content(64 * 1024)
            hdfs.run([["write", APPENDED, base], ["mkdirs", "/markers/base"]])
            wait_for_replication(sync, CLUSTER, dest, hdfs.txid())
            wait_for_no_pending(sync, dest)
            hdfs.run([["mkdirs", "/markers/base-counted"]])  # a window saves the base's totals
            wait_for_replication(sync, CLUSTER, dest, hdfs.txid())
            totals_before, before = sync_totals(CLUSTER, dest), requests.snapshot()
            hdfs.run([["append", APPENDED, added]])
            hdfs.run([["mkdirs", "/markers/appended"]])
            wait_for_replication(sync, CLUSTER, dest, hdfs.txid())
            wait_for_no_pending(sync, dest)
            hdfs.run([["mkdirs", "/markers/appended-counted"]])  # a window saves the totals
            wait_for_replication(sync, CLUSTER, dest, hdfs.txid())
            append_requests = requests.snapshot() - before
            totals_after = sync_totals(CLUSTER, dest)
            key = "sync" + APPENDED
            if s3.get_object(Bucket=BUCKET, Key=key)["Body"].read() != (base + added).encode():
                raise SystemExit("sync: the appended file's object is not the file")
            s3.put_object(Bucket=BUCKET, Key="alt/base", Body=base.encode())  # before the append
            alternative = part_copy_append(s3, "alt/base", "alt/appended", len(base),
                                           added.encode())
            if s3.get_object(Bucket=BUCKET, Key="alt/appended")["Body"].read() != (
                    base + added).encode():
                raise SystemExit("UploadPartCopy + UploadPart: the object is not the file")
            if sync.stop() != 0:
                raise SystemExit(f"sync exited {sync.process.returncode}: {sync.log_tail()}")
            OUT_DIR.mkdir(parents=True, exist_ok=True)
            shutil.copy(sync.log, OUT_DIR / "sync.log")  # its windows' timings (replicator.py)
            sync = None
        finally:
            if sync is not None:
                sync.kill()
            hdfs.stop()
    mb = total / 1e6

    def running(seconds: float, tool: str) -> float | None:
        """MB/s once started: bytes / (time - the tool's fixed cost)."""
        rest = seconds - fixed.get(tool, seconds)
        return round(mb / rest, 2) if rest > 0 else None

    return {
        "files": files, "bytes": total, "window_ms": 1000,
        "initial_copy": {
            "sync": {"seconds": round(sync_s, 3), "mb_per_s": round(mb / sync_s, 2),
                     "objects_per_s": round(files / sync_s, 2),
                     "fixed_cost_s": round(fixed["sync"], 3) if fixed else None,
                     "running_mb_per_s": running(sync_s, "sync"),
                     "requests_per_file": per_file(sync_requests, files),
                     "own_count": listing_totals},
            "distcp": {"seconds": round(distcp_s, 3), "mb_per_s": round(mb / distcp_s, 2),
                       "objects_per_s": round(files / distcp_s, 2),
                       "fixed_cost_s": round(fixed["distcp"], 3) if fixed else None,
                       "running_mb_per_s": running(distcp_s, "distcp"),
                       "requests_per_file": per_file(distcp_requests, files)},
        },
        "steady": {
            "files": steady, "rate_per_s": lag_rate, "seconds": lag_seconds,
            "file_bytes": 64 * 1024,
            "lag_ms": {"p50": round(statistics.median(lags), 1),
                       "p99": round(percentile(lags, 99), 1), "max": round(max(lags), 1)},
            "poll_ms": 50,
            "sync_requests_per_file": per_file(steady_requests, steady),
            "distcp_update_seconds": round(incremental_s, 3),
            "distcp_update_requests_per_file": per_file(incremental_requests, steady),
        },
        "rows": copied_rows,
        "lag_during_large_copy": during,
        "append": {
            "base_bytes": len(base), "appended_bytes": len(added),
            "sync": {"bytes_sent": totals_after.get("bytes", 0) - totals_before.get("bytes", 0),
                     "as_append": totals_after.get("appends", 0) > totals_before.get("appends", 0),
                     "requests": sum(append_requests.values()),
                     "requests_by_kind": dict(append_requests)},
            "part_copy": alternative,
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.sync", description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--mb-per-file", type=float, default=8)
    parser.add_argument("--lag-seconds", type=float, default=20)
    parser.add_argument("--lag-rate", type=float, default=4, help="files closed per second")
    parser.add_argument("--copy", type=CopyRow.parse, action="append", default=[],
                        metavar="COUNTxSIZE",
                        help="a row of first copies, beside DistCp's (e.g. 4x64MB, 1x1GB, "
                             "10000x4KB); repeatable")
    parser.add_argument("--lag-during-mb", type=float, default=0,
                        help="lag at --lag-rate while a file of this size copies (0: skip)")
    parser.add_argument("--lag-during-copies", type=int, default=1,
                        help="that many such files copied one after another, their lags pooled")
    parser.add_argument("--append-base-mb", type=float, default=64,
                        help="the appended file's size before (UploadPartCopy: >= 5 MiB)")
    parser.add_argument("--no-fixed-cost", action="store_true",
                        help="skip the 1-byte copies that measure each tool's fixed cost")
    parser.add_argument("--out", type=Path, default=OUT_DIR / "sync.json")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-sync-") as tmp:
        result = measure(args.files, int(args.mb_per_file * 1_000_000), args.lag_seconds,
                         args.lag_rate, int(args.append_base_mb * MIB), Path(tmp),
                         fixed_cost=not args.no_fixed_cost, rows=tuple(args.copy),
                         lag_during=int(args.lag_during_mb * 1_000_000),
                         during_copies=args.lag_during_copies)
    result["load_average"] = os.getloadavg()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    first, steady, append = result["initial_copy"], result["steady"], result["append"]
    print(f"sync: {args.files} x {args.mb_per_file:g} MB: sync {first['sync']['mb_per_s']} MB/s "
          f"{first['sync']['objects_per_s']} obj/s ({first['sync']['seconds']} s), distcp -update "
          f"{first['distcp']['mb_per_s']} MB/s {first['distcp']['objects_per_s']} obj/s "
          f"({first['distcp']['seconds']} s), JVM start in both (1-byte copy: sync "
          f"{first['sync']['fixed_cost_s']} s, distcp {first['distcp']['fixed_cost_s']} s); lag p50 "
          f"{steady['lag_ms']['p50']} ms p99 {steady['lag_ms']['p99']} ms at "
          f"{args.lag_rate:g} files/s (distcp -update of the changes: "
          f"{steady['distcp_update_seconds']} s); S3 requests per file "
          f"{steady['sync_requests_per_file']['total']} (distcp -update "
          f"{steady['distcp_update_requests_per_file']['total']}); append: sync "
          f"{append['sync']['bytes_sent']} B / {append['sync']['requests']} requests ("
          f"{'new bytes only' if append['sync']['as_append'] else 're-copy'}), by hand "
          f"{append['part_copy']['bytes_sent']} B / {append['part_copy']['requests']}; "
          f"load {result['load_average'][0]:.1f}")
    for label, row in result["rows"].items():
        sync, dcp = row["sync"], row["distcp"]
        print(f"sync: {label}: once running sync {sync['running_mb_per_s']} MB/s "
              f"{sync['running_objects_per_s']} obj/s, distcp -update -direct "
              f"{dcp['running_mb_per_s']} MB/s {dcp['running_objects_per_s']} obj/s "
              f"(with JVM start: {sync['seconds']} vs {dcp['seconds']} s); CPU s per GB once "
              f"running {sync['cpu_s_per_gb']} vs {dcp['cpu_s_per_gb']} (moto {sync['moto_cpu_s']} vs "
              f"{dcp['moto_cpu_s']} s); NameNode RPCs {sync['hdfs']['namenode_rpcs']} vs "
              f"{dcp['hdfs']['namenode_rpcs']}, DataNode block reads "
              f"{sync['hdfs'].get('datanode.ReadBlockOp', 0)} vs "
              f"{dcp['hdfs'].get('datanode.ReadBlockOp', 0)}")
    if result["lag_during_large_copy"] is not None:
        d = result["lag_during_large_copy"]
        copies = "" if d["copies"] == 1 else f"{d['copies']} x "
        print(f"sync: lag at {d['rate_per_s']:g} files/s while {copies}{d['bytes'] / 1e6:g} MB "
              f"copies ({', '.join(map(str, d['copy_seconds']))} s): p50 {d['lag_ms']['p50']} "
              f"ms p99 {d['lag_ms']['p99']} ms max {d['lag_ms']['max']} ms over {d['files']} "
              "files")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
