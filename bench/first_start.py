"""The agent's first start and `verify` on a real NameNode holding 100k, 300k and 1M files: the
agent process's peak memory at each size against the smallest, measured in the same run.

    .venv/bin/python -m bench.first_start [--sizes 100000,300000,1000000] [--code-tree DIR]
        [--listing-max-files 1000000] [--writes-double-from 3000000]

For each size (steps 1, 6 and 7 only above `--listing-max-files`: the listing of 10M files
through moto's SQS and verify's second listing do not fit a bench's time):
1. The NameNode starts on the kit's cached name directory of that many files
   (tests/kit/hadoop/namespace_image.py: Hadoop's Offline Image Reconstructor, built once per
   size into .hadoop/namespaces/), no DataNode; its start time is recorded.
2. A fresh moto server state (one server on 127.0.0.1 for the run, reset per size): the FIFO
   event queue, the consumer's apply queue, the lake bucket and the index table as the stacks
   make them.
3. `hdfs-events-agent run` as the systemd unit runs it (its own process, default heap), with no
   checkpoint and the default gap policy: first start lists `/` and ships SNAPSHOT records at one
   txid. Timed until its checkpoint reaches that txid (the snapshot's last message and manifest
   acknowledged by SQS), then stopped with SIGTERM. Peak RSS: the process's VmHWM (JVM and
   Python are one process with JPype), polled from /proc every 0.1 s while it runs (VmHWM is
   the kernel's high-water mark, so a poll misses only what the last 0.1 s adds). Not wait4's
   ru_maxrss: Linux starts an exec'd child's maxrss at the high-water mark of the process it
   was forked from (exec_mmap's setmax_mm_hiwater_rss), and this bench's process holds moto's
   whole index in memory, so ru_maxrss reported the bench's own size (1,135 MiB "verify" at
   300k against a VmHWM of 203 MiB).
4. Up to `--index-max-files` (default: every size), the consumer Lambda's handler
   (tests/kit/sqs_lambda.py, its own process, polling both of the function's queues: the event
   queue's messages store, the apply queue's continue requests apply) applies the queue to the
   index, timed until both queues are empty. moto
   answers the index's Query from its one partition (tests/kit/moto_fast_query.py, applied by
   local_chain.local_aws): without it moto sorts the whole table on every Query and indexed ~40
   entries/s at 100k files; and the gap repair's Scan a page at the page's cost
   (tests/kit/moto_fast_scan.py). Above the limit the index stays empty.
5. `hdfs-events-agent verify --prefix /`: its peak RSS and wall time. It must count every entry
   the generator made in HDFS (namespace_shape's counts, not a listing) and, when indexed, the
   same in the index with 0 differ; against an empty index every entry is MISSING (the drift
   path at its largest). Compare memory only between sizes verified the same way.

6. The fsimage start on the same NameNode (cluster `bench-image`, `[inotify] first_start =
   "fsimage"`): the agent fetches the image, starts the inventory job (moto's Glue, run for
   real on local[2] by tests/kit/glue_runs.py), waits for the index and streams from T+1. Timed
   until its checkpoint is T; its peak RSS; listStatus calls in the NameNode's audit log while
   it runs (must be 0); when the listing start was indexed, the two indexes compared entry for
   entry (every attribute but each snapshot's txid and where an entry is stored; must be 0
   differ). From `--writes-double-from` on (moto cannot hold 10M index items), the job's
   BatchWriteItem calls are answered by the latency double (bench/dynamodb_latency.py, through
   botocore's plugin hook in the job's environment; S3, the job's reads, the position and the
   marker stay on moto server): one timeline, the agent's fetch to its checkpoint T, with the
   index written at `--latency-ms` per call; nothing stored, so not compared (a covered
   directory is checked absent: the double answered). Goals at 10M inodes: <= 300 s, the
   agent's peak RSS <= 1 GiB, 0 listing RPCs.
7. The SNAPSHOT apply rate: the image job's index writes (walk order and numbers in the JVM,
   each item's JSON in the JVM, BatchWriteItem with `--index-threads` calls in flight per task; the
   numbering's own seconds reported apart) of that inventory at
   `--latency-ms` per DynamoDB call (`latency_dynamodb`: the job's own botocore client, its HTTP
   exchange replaced by the wait, since moto's own cost per call exceeds 5 ms), goal 50,000
   records/s; through the double (step 6), the image start's own writes are this rate and the
   step is not run again. `--apply-sizes N,...` measures only this, on N
   synthetic rows (no NameNode), for sizes the machine cannot run whole.
8. Gap repair from the fsimage on the same NameNode and the image start's index: with the
   image agent stopped at checkpoint T0, a few hundred changes it never reads (`GAP_*`:
   deletes in a flat directory, an hour's subtree deleted, a day's renamed, new files), the
   consumer run if the position is short of T0, checkpoints that purge the edits after T0
   (the NameNode runs with `PURGING`), then `run` again with `gap_policy = "fsimage"`: the GAP,
   the fetch, the inventory job with `--repair_after T0` (its own job name, REPAIR_JOB), timed
   until the checkpoint passes T0 (the image's T saved), against step 3's listing start (a
   listing repair lists the same tree). Its peak RSS, listStatus calls while it runs (must be
   0), the job's wall and its report (the marker: entries, `removed`). Where step 6 wrote into
   moto (its index is whole there, whether or not step 4 ran), the consumer applies what
   followed and verify of `/` must find 0 differ; through the double, a new directory is
   checked absent instead.

The figures: first start and verify peak RSS at each size against the smallest size (goal:
flat within 20 %, at most 1.2x). `--code-tree` runs agent, consumer and verify from another copy
of the code (`git archive <commit> onprem_agent hdfs_events lambdas tests/__init__.py tests/kit`),
for a before/after of a design in one run's conditions. Writes bench-out/first_start.json.
"""

from __future__ import annotations

import argparse
import contextlib
import getpass
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import boto3

from bench import REPO
from bench.dynamodb_latency import (
    KEY_WCU_ENV,
    LATENCY_ENV,
    PARTITION_KEY_WCU,
    latency_dynamodb,
    plugin_env,
)
from bench.inventory_scale import fit
from hdfs_events import lake_layout, names
from hdfs_events.dynamodb_json import from_wire
from hdfs_events.index_item import plain, wire_keys
from hdfs_events_cli.index_status import read_status
from tests.kit.glue_runs import LocalGlueRuns
from tests.kit.hadoop.cluster import HdfsCluster
from tests.kit.hadoop.namespace_image import NamespaceImage, namespace_image
from tests.kit.hadoop.namespace_shape import FLAT_DIRS, PARTS_PER_HOUR
from tests.kit.image_start import image_agent_config, listing_calls
from tests.kit.ingest_aws import BUCKET, TABLE, ConsumerQueues, create_resources
from tests.kit.lambda_events import MOTO_SENDER_ID, cluster_senders
from tests.kit.live_agent import AGENT, AgentProcess, write_agent_config
from tests.kit.local_chain import local_aws

OUT = Path("bench-out/first_start.json")
CLUSTER = "bench"
IMAGE_CLUSTER = "bench-image"  # the same NameNode, started from its fsimage
INVENTORY_JOB = "bench-namespace-inventory"
# The same job for step 8's run, under a name of its own: LocalGlueRuns runs every run of its
# job it has not seen yet, so a second one on INVENTORY_JOB would run step 6's again first.
REPAIR_JOB = "bench-gap-repair"
# Only a checkpoint purges edits, keeping num.checkpoints.retained images and the edits from
# num.extra.edits.retained txids before the oldest (defaults 2 and 1,000,000: nothing purged).
# Hadoop 3.3.4 refuses fewer than the few txids saveNamespace writes itself, hence 4 (as
# tests/integration/hdfs/conftest.py's PURGING). Nothing checkpoints before step 8, so steps
# 1-7 run as on the defaults.
PURGING = {"dfs.namenode.num.checkpoints.retained": "1",
           "dfs.namenode.num.extra.edits.retained": "4"}
GAP_DELETES = 100  # files deleted from the landing zone while the agent is down
GAP_NEW_FILES = 200  # empty files made under GAP_NEW_DIR
GAP_NEW_DIR = "/data/late-arrivals"
APPLY_GOAL = 50_000  # SNAPSHOT records/s applied at 5 ms per DynamoDB call (issue #32)
FIRST_START_GOAL_S = 300  # the image start of 10M inodes on 2 cores (issue #32)
# namespace_shape's directories add ~5.2% inodes to its files (10,000,000 files: 10,520,858).
FILES_100M_INODES = 105_208_580
RSS_GOAL_MIB = 1024  # the agent's peak RSS during it (issue #32)
GOAL = 1.2  # peak RSS at any size / at the smallest
FLAT_DIR = "/data/flat"  # synthetic_inventory's flat directory
DRIFT = re.compile(r"(\d+) (?:entries )?differ\b")
COUNTS = re.compile(r"(\d+) entries in HDFS, (\d+) in the index")
DRIFT_LINES = 50  # verify's drift lines kept, and the index items of those paths read back
MISSING = re.compile(r"MISSING in index: (\S+)")


class PeakWatch:
    """Polls /proc/<pid>/status VmHWM while the process runs: its peak RSS (see the module's
    docstring for why not wait4's ru_maxrss)."""

    def __init__(self, pid: int) -> None:
        self.pid, self.vm_hwm_kb = pid, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"hwm-{pid}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            try:
                text = Path(f"/proc/{self.pid}/status").read_text()
            except OSError:
                return
            found = re.search(r"^VmHWM:\s+(\d+)", text, re.M)
            if found:
                self.vm_hwm_kb = max(self.vm_hwm_kb, int(found.group(1)))

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.vm_hwm_kb


def reap(process: subprocess.Popen[bytes], timeout_s: float) -> int:
    """The exit status, killing the process after `timeout_s`."""
    try:
        return process.wait(timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        raise TimeoutError(f"pid {process.pid} still running after {timeout_s:.0f} s") from None


def run_until(agent: AgentProcess, wait: Callable[[], object]) -> tuple[float, int, int]:
    """The agent's run until `wait` returns, then SIGTERM: (seconds, exit code, peak RSS KiB)."""
    watch = PeakWatch(agent.process.pid)
    started = time.perf_counter()
    try:
        wait()
    except BaseException:
        agent.kill()
        raise
    seconds = time.perf_counter() - started
    agent.process.send_signal(signal.SIGTERM)
    code = reap(agent.process, 120)
    return seconds, code, watch.stop()


def first_start(config: Path, txid: int, timeout_s: float) -> dict[str, Any]:
    agent = AgentProcess.start(config)
    seconds, code, hwm = run_until(
        agent, lambda: agent.wait_for_checkpoint(txid, timeout_s=timeout_s))
    if code != 0:
        raise RuntimeError(f"the agent exited {code} on SIGTERM: {agent.log_tail()}")
    return {"seconds": round(seconds, 2), "peak_rss_kb": hwm, "exit": code}


def consume(queues: ConsumerQueues, code_tree: Path, log: Path) -> dict[str, Any]:
    """The consumer Lambda's handler over the whole queue, with the function's environment and
    both its event sources; its output kept in `log` (what it logged when the index comes out
    short)."""
    env = {**os.environ, names.ENV_LAKE_BUCKET: BUCKET, names.ENV_INDEX_TABLE: TABLE,
           names.ENV_INDEX_PREFIXES: "/", names.ENV_APPLY_QUEUE_URL: queues.apply,
           names.ENV_LOG_MODE: "summary",
           names.ENV_CLUSTER_SENDERS: cluster_senders({CLUSTER: MOTO_SENDER_ID,
                                                       IMAGE_CLUSTER: MOTO_SENDER_ID}),
           "POWERTOOLS_METRICS_NAMESPACE": names.METRICS_NAMESPACE,
           "POWERTOOLS_SERVICE_NAME": "hdfs-events-ingest", "POWERTOOLS_TRACE_DISABLED": "1"}
    urls: tuple[str, ...] = queues.urls
    if not (code_tree / "lambdas" / "ingest" / "apply_queue.py").exists():
        # A `--code-tree` from before the apply queue (issue 32): one queue, its continue
        # requests on the event queue, named by the variable of the time.
        urls, env["EVENT_QUEUE_URL"] = (queues.events,), queues.events
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "tests.kit.sqs_lambda", *urls,
                           "--idle-polls", "3"], env=env, capture_output=True, text=True,
                          timeout=4 * 3600, cwd=code_tree, check=False)
    log.write_text(done.stdout + done.stderr, encoding="utf-8")
    if done.returncode != 0:
        raise RuntimeError(f"consumer exited {done.returncode}: {done.stderr[-2000:]}")
    counts = dict(kv.split("=") for kv in done.stdout.split() if "=" in kv)
    if int(counts.get("failures", 0)):
        raise RuntimeError(f"the consumer failed messages: {done.stdout.strip()}")
    return {"seconds": round(time.perf_counter() - started, 2),
            # Both queues': event messages and manifests, and continue requests.
            "messages": int(counts["records"]), "invocations": int(counts["invocations"])}


def verify(config: Path, timeout_s: float) -> dict[str, Any]:
    with tempfile.TemporaryFile() as out:
        started = time.perf_counter()
        process = subprocess.Popen([str(AGENT), "verify", "--config", str(config),
                                    "--prefix", "/", "--max-lines", str(DRIFT_LINES)],
                                   stdout=out, stderr=subprocess.STDOUT, env=dict(os.environ))
        watch = PeakWatch(process.pid)
        code = reap(process, timeout_s)
        seconds = time.perf_counter() - started
        hwm = watch.stop()
        out.seek(0)
        text = out.read().decode(errors="replace")
    found, counts = DRIFT.search(text), COUNTS.search(text)
    if found is None or counts is None:
        raise RuntimeError(f"verify exited {code} without its summary line: {text[-2000:]}")
    # verify's first drift lines: which paths, when the counts disagree.
    drift_lines = text[found.end():].strip().splitlines()[:DRIFT_LINES]
    return {"seconds": round(seconds, 2), "peak_rss_kb": hwm, "exit": code,
            "differ": int(found.group(1)), "in_hdfs": int(counts.group(1)),
            "in_index": int(counts.group(2)), "drift_lines": drift_lines}


def stored_items(drift_lines: Sequence[str]) -> dict[str, Any]:
    """The index table's item (delete markers included) for each path verify found missing."""
    ddb = boto3.client("dynamodb")
    out: dict[str, Any] = {}
    for line in drift_lines:
        if (found := MISSING.search(line)) is not None:
            # Both keys a path may have (a hot directory's child is in a shard of it).
            items = [got["Item"] for key in wire_keys(CLUSTER, found.group(1))
                     if "Item" in (got := ddb.get_item(TableName=TABLE, Key=key,
                                                       ConsistentRead=True))]
            out[found.group(1)] = items[-1] if items else None
    return out


def create_inventory_job(name: str, threads: int) -> None:
    """The inventory job in moto's Glue, with the arguments the stack gives it."""
    boto3.client("glue").create_job(
        Name=name, Role="arn:aws:iam::123456789012:role/glue",
        Command={"Name": "glueetl", "ScriptLocation": "s3://assets/namespace_inventory.py"},
        DefaultArguments={"--target": f"s3://{BUCKET}", "--index_table": TABLE,
                          "--index_prefixes": "/", "--index_threads": str(threads)})


def job_env(latency_ms: float | None, key_limit: bool) -> dict[str, str]:
    """The environment the inventory job's runs get (LocalGlueRuns): with `latency_ms`, its
    BatchWriteItem calls answered by the latency double (botocore's plugin hook)."""
    # The driver is every executor on local[2]: the heap bench.inventory_scale gives the same
    # job (a Glue G.1X executor's 10g is more than this machine spares); Spark's 1g default
    # does not hold the 10M image's sort.
    return {**os.environ, "SPARK_MASTER": "local[2]",
            "PYSPARK_SUBMIT_ARGS": "--driver-memory 4g pyspark-shell",
            **(plugin_env(latency_ms, key_limit) if latency_ms is not None else {})}


def absent_from_index(path: str) -> bool:
    """No item of `path` under IMAGE_CLUSTER at either key it may have."""
    ddb = boto3.client("dynamodb")
    return not any("Item" in ddb.get_item(TableName=TABLE, Key=key, ConsistentRead=True)
                   for key in wire_keys(IMAGE_CLUSTER, path))


def indexed_marker(txid: int) -> dict[str, Any]:
    """The inventory job's report beside IMAGE_CLUSTER's image of `txid` (`_indexed.json`)."""
    return json.loads(boto3.client("s3").get_object(
        Bucket=BUCKET, Key=lake_layout.fsimage_indexed_key(IMAGE_CLUSTER, txid))["Body"].read())


def run_with_job(hdfs: HdfsCluster, config: Path, job: str,
                 done: Callable[[AgentProcess], bool], *, threads: int,
                 latency_ms: float | None, key_limit: bool, timeout_s: float
                 ) -> tuple[AgentProcess, LocalGlueRuns, tuple[float, int, int], int]:
    """`run` on `config` while the inventory job `job` is run for real (moto's Glue, local[2]),
    until `done(agent)` or a run fails: the agent, the runs, run_until's (seconds, exit code,
    peak RSS) and the listStatus calls meanwhile."""
    create_inventory_job(job, threads)
    before = listing_calls(hdfs)
    with LocalGlueRuns(job, "glue_jobs.namespace_inventory",
                       job_env(latency_ms, key_limit)) as runs:
        agent = AgentProcess.start(config)
        ran = run_until(agent, lambda: agent.wait_for(
            lambda: done(agent) or any(code for _, code, _ in runs.finished),
            lambda: str(runs.finished), timeout_s=timeout_s, poll_s=0.5))
    return agent, runs, ran, listing_calls(hdfs) - before


def image_start(hdfs: HdfsCluster, config: Path, timeout_s: float, threads: int,
                latency_ms: float | None, top: str, key_limit: bool = False) -> dict[str, Any]:
    """`run` with first_start = "fsimage" (`config`, image_agent_config's): fetch, the
    inventory job on local[2] (moto's Glue run for real, tests/kit/glue_runs.py), the index
    written, until the checkpoint is T. With `latency_ms`, the job's BatchWriteItem calls are
    answered by the latency double (bench/dynamodb_latency.py: botocore's plugin hook, in the
    job's environment only), the rest as before: S3 and the position on moto server, one
    timeline; `top`, a covered directory, is then checked absent from the index (the double
    answered, nothing stored)."""
    agent, runs, (seconds, code, hwm), listed = run_with_job(
        hdfs, config, INVENTORY_JOB, lambda agent: agent.checkpoint() is not None,
        threads=threads, latency_ms=latency_ms, key_limit=key_limit, timeout_s=timeout_s)
    failed = [(run, rc, err) for run, rc, err in runs.finished if rc != 0]
    if failed or code != 0:
        raise RuntimeError(f"image start: job runs {failed}, agent exit {code}: "
                           f"{agent.log_tail()}")
    txid = agent.checkpoint()
    assert txid is not None
    marker = indexed_marker(txid)
    if latency_ms is not None and not absent_from_index(top):
        raise RuntimeError(f"{top} is in the index: the job's writes did not go through "
                           "the latency double (botocore's plugin hook not taken)")
    return {"seconds": round(seconds, 2), "peak_rss_kb": hwm, "txid": txid,
            "job_seconds": round(sum(runs.seconds.values()), 2), "job_runs": len(runs.finished),
            "listing_rpcs": listed, "indexed": marker,
            "writes_latency_ms": latency_ms, "key_limit": key_limit}


def compare_indexes(listed_through: int, image_txid: int) -> dict[str, Any]:
    """The listing start's index (CLUSTER) against the image start's (IMAGE_CLUSTER), entry for
    entry: every attribute but each snapshot's own txid and where an entry is stored."""
    clusters: dict[str, dict[str, dict[str, Any]]] = {CLUSTER: {}, IMAGE_CLUSTER: {}}
    for page in boto3.client("dynamodb").get_paginator("scan").paginate(TableName=TABLE):
        for raw in page["Items"]:
            item = plain(from_wire(raw))
            if item.get("cluster") in clusters:
                clusters[item["cluster"]][item["path"]] = {
                    k: v for k, v in item.items()
                    if k not in (names.INDEX_PK, "cluster", "last_txid", names.TTL_ATTRIBUTE)}
    listed, imaged = clusters[CLUSTER], clusters[IMAGE_CLUSTER]
    differ = sorted(p for p in listed.keys() | imaged.keys()
                    if listed.get(p) != imaged.get(p))
    return {"entries": len(listed), "image_entries": len(imaged), "differ": len(differ),
            "first_differ": differ[:5]}


def gap_changes(image: NamespaceImage) -> tuple[list[list[Any]], int, int]:
    """Step 8's changes while the agent is down: (hdfs.run's ops, how many changes, the index
    entries they take away: paths deleted or renamed away). GAP_DELETES files of the landing
    zone deleted, the first hour of /data/clicks deleted with its files, the first day of
    /data/orders renamed, a new directory of GAP_NEW_FILES empty files. Paths and counts from
    namespace_shape: no listing."""
    landing = "/user/etl/landing"
    assert landing in dict(FLAT_DIRS)
    subtrees = image.summary.subtrees
    deletes = min(GAP_DELETES, subtrees[landing].files)
    clicks, orders = subtrees["/data/clicks"].files, subtrees["/data/orders"].files
    hour, day = "/data/clicks/dt=2024-01-01/hour=00", "/data/orders/dt=2024-01-01"
    new_files = [f"{GAP_NEW_DIR}/part-{j:05d}" for j in range(GAP_NEW_FILES)]
    ops: list[list[Any]] = [
        *(["delete", f"{landing}/f-{j:08d}"] for j in range(deletes)),
        ["delete", hour, True], ["rename", day, f"{day}-restated"], ["mkdirs", GAP_NEW_DIR],
        # Hadoop's shell, one call for all: with no DataNode, MiniDFSCluster lowers the
        # clients' dfs.replication to 0, which the NameNode refuses for a new file; -D sets
        # it back (an empty file needs no block).
        ["shell", getpass.getuser(), ["-D", "dfs.replication=1", "-touchz", *new_files]]]
    day_hours = min(24, -(-orders // PARTS_PER_HOUR))
    away = (deletes + 1 + min(PARTS_PER_HOUR, clicks)
            + 1 + day_hours + min(24 * PARTS_PER_HOUR, orders))
    return ops, deletes + 3 + len(new_files), away


def repair_config(image_config: Path) -> Path:
    """The image agent's agent.toml with gap_policy = "fsimage", REPAIR_JOB and verify's
    table, beside it: the same checkpoint file (image_agent_config again would remove it)."""
    text = image_config.read_text(encoding="utf-8")
    job = f'inventory_job = "{INVENTORY_JOB}"'
    assert text.count("[inotify]\n") == 1 and text.count(job) == 1, text
    config = image_config.with_name("agent-repair.toml")
    config.write_text(text.replace("[inotify]\n", '[inotify]\ngap_policy = "fsimage"\n')
                      .replace(job, f'inventory_job = "{REPAIR_JOB}"')
                      + f'[verify]\nindex_table = "{TABLE}"\n', encoding="utf-8")
    return config


def gap_repair(hdfs: HdfsCluster, image: NamespaceImage, image_config: Path, stopped_at: int,
               queues: ConsumerQueues, code_tree: Path, work: Path, timeout_s: float,
               threads: int, latency_ms: float | None, key_limit: bool,
               verified: bool) -> dict[str, Any]:
    """Step 8 (the module's docstring): the image agent, stopped at checkpoint `stopped_at`,
    meets purged edits and repairs the index from the image. `verified`: the index is on moto
    and whole, so verify of `/` must find 0 differ after it."""
    ops, changes, away = gap_changes(image)
    done = hdfs.run(ops)
    if not all(ok for op, ok in zip(ops, done, strict=True) if op[0] == "delete"):
        raise RuntimeError(f"a delete of step 8 found nothing: {ops[:3]}... {done[:3]}...")
    consumed = None
    status = read_status(boto3.client("dynamodb"), TABLE, IMAGE_CLUSTER)
    if (status.txid, status.index) != (stopped_at, None):
        # What the agent shipped after T: the job waits for the index applied through T0.
        consumed = consume(queues, code_tree, work / "consumer-before-repair.log")
    started = time.perf_counter()
    hdfs.purge_edits_through(stopped_at + 1)
    purge_s = time.perf_counter() - started
    config = repair_config(image_config)
    agent, runs, (seconds, code, hwm), listed = run_with_job(
        hdfs, config, REPAIR_JOB, lambda agent: (agent.checkpoint() or 0) > stopped_at,
        threads=threads, latency_ms=latency_ms, key_limit=key_limit, timeout_s=timeout_s)
    failed = [(run, rc, err) for run, rc, err in runs.finished if rc != 0]
    txid = agent.checkpoint()
    if failed or code != 0 or txid is None or txid <= stopped_at:
        raise RuntimeError(f"gap repair: job runs {failed}, agent exit {code}, checkpoint "
                           f"{txid}: {agent.log_tail()}")
    marker = indexed_marker(txid)
    if marker.get("repair_after") != stopped_at:
        raise RuntimeError(f"the image of txid {txid} was indexed by {marker}, not a repair "
                           f"after {stopped_at}")
    if listed:
        raise RuntimeError(f"the gap repair made {listed} listStatus calls")
    if latency_ms is not None and not absent_from_index(GAP_NEW_DIR):
        raise RuntimeError(f"{GAP_NEW_DIR} is in the index: the repair's writes did not go "
                           "through the latency double")
    checked = None
    if verified:
        consume(queues, code_tree, work / "consumer-after-repair.log")  # the GAP, then T+1..
        checked = verify(config, timeout_s)
        if checked["differ"] or checked["in_hdfs"] != checked["in_index"]:
            raise RuntimeError(f"after the gap repair verify found {checked['differ']} "
                               f"differing, {checked['in_hdfs']:,} entries in HDFS and "
                               f"{checked['in_index']:,} in the index: "
                               + "; ".join(checked["drift_lines"]))
    return {"seconds": round(seconds, 2), "peak_rss_kb": hwm, "stopped_at": stopped_at,
            "txid": txid, "changes": changes, "paths_away": away,
            "consumed_before": consumed, "purge_seconds": round(purge_s, 2),
            "job_seconds": round(sum(runs.seconds.values()), 2), "job_runs": len(runs.finished),
            "listing_rpcs": listed, "indexed": marker, "verify": checked,
            "writes_latency_ms": latency_ms, "key_limit": key_limit}


def snapshot_apply_rate(inventory: str | int, latency_ms: float, threads: int, *,
                        flat_share: float = 0.0, key_limit: bool = False) -> dict[str, Any]:
    """The image job's index writes of the inventory rows at `latency_ms` per DynamoDB call,
    on local[2]: records/s (the sort into walk order and the items' JSON included). Given a
    number instead of an inventory, that many synthetic rows (`synthetic_inventory`, that share
    of them in one flat directory); with `key_limit`, DynamoDB's 1,000 writes/s a partition key
    modelled (bench/dynamodb_latency.py)."""
    from glue_jobs.image_index import IndexSettings, write_index
    from glue_jobs.runtime import local_session

    os.environ[LATENCY_ENV] = str(latency_ms)
    os.environ[KEY_WCU_ENV] = str(PARTITION_KEY_WCU) if key_limit else ""
    # botocore needs a region and keys to sign with; nothing is sent (latency_dynamodb), and
    # the Python workers inherit them from this process.
    for key, value in (("AWS_DEFAULT_REGION", "us-east-1"), ("AWS_ACCESS_KEY_ID", "bench"),
                       ("AWS_SECRET_ACCESS_KEY", "bench")):
        os.environ.setdefault(key, value)
    spark = local_session("bench-snapshot-apply", s3a=isinstance(inventory, str))
    try:
        rows = (spark.read.parquet(inventory) if isinstance(inventory, str)
                else synthetic_inventory(spark, inventory, flat_share)).cache()
        count = rows.count()
        started = time.perf_counter()
        report = write_index(rows, "rate", 1, IndexSettings(TABLE, ("/",), threads=threads),
                             ddb=latency_dynamodb(1), client=latency_dynamodb)
        seconds = time.perf_counter() - started
    finally:
        spark.stop()
    return {"rows": count, "entries": report.entries, "seconds": round(seconds, 2),
            "numbering_seconds": round(report.numbering_seconds, 2),
            "records_per_s": round(report.entries / seconds), "latency_ms": latency_ms,
            "threads_per_task": threads, "batch_calls": report.batch_calls,
            "write_tasks": report.write_tasks, "unprocessed_resends": report.unprocessed_retries,
            "key_limit": key_limit}


def synthetic_inventory(spark: Any, files: int, flat_share: float = 0.0) -> Any:
    """Inventory rows of `files` files, 50 to a directory under /data (and those directories),
    the first `flat_share` of them in one flat directory, /data/flat (a landing zone: its
    children's shard keys written back to back), built in Spark: the apply rate at sizes whose
    NameNode, listing and image job this machine cannot run in a bench's time."""
    from pyspark.sql import functions as F

    ids = spark.range(files)
    flat = F.col("id") < int(files * flat_share)
    directory = F.when(flat, F.lit(FLAT_DIR)).otherwise(
        F.concat(F.lit("/data/d"), F.format_string("%07d", (F.col("id") / 50).cast("long"))))
    common = {"owner": F.lit("etl"), "group": F.lit("hadoop"), "mtime": F.lit(1_700_000_000_000),
              "symlink_target": F.lit(None).cast("string")}
    files_ = ids.select(F.concat(directory, F.lit("/f"), F.col("id").cast("string")).alias("path"),
                        F.lit("FILE").alias("type"), (F.col("id") % 4096).alias("size"),
                        F.lit("0644").alias("perms"), F.lit(1_700_000_000_000).alias("atime"),
                        F.lit(3).alias("replication"), *(v.alias(k) for k, v in common.items()))
    dirs = (ids.where((F.col("id") % 50 == 0) & ~flat)
            .select(directory.alias("path"), F.lit("DIRECTORY").alias("type"),
                    F.lit(0).cast("long").alias("size"), F.lit("0755").alias("perms"),
                    F.lit(0).cast("long").alias("atime"), F.lit(0).alias("replication"),
                    *(v.alias(k) for k, v in common.items())))
    top = spark.createDataFrame([(d, "DIRECTORY", 0, "0755", 0, 0, "etl", "hadoop",
                                  1_700_000_000_000, None)
                                 for d in ("/data", *([FLAT_DIR] if flat_share else []))],
                                files_.schema)
    return files_.unionByName(dirs).unionByName(top)


def inventory_location(cluster: str) -> str:
    """The run prefix the inventory job published for the cluster (its JSON catalog)."""
    from glue_jobs.catalog import JsonFileCatalog
    from glue_jobs.layout import INVENTORY_LOCAL_CATALOG_KEY, INVENTORY_TABLE
    from glue_jobs.storage import store_for

    catalog = JsonFileCatalog(store_for(f"s3://{BUCKET}"), INVENTORY_LOCAL_CATALOG_KEY,
                              INVENTORY_TABLE)
    (location,) = [v for k, v in catalog.locations().items() if k[0] == cluster]
    return location.replace("s3://", "s3a://", 1)


def measure(files: int, work: Path, endpoint: str, code_tree: Path, timeout_s: float,
            index_max_files: int, latency_ms: float = 5.0, threads: int = 16, *,
            listing_max_files: int = 1_000_000, writes_double_from: int = 3_000_000,
            key_limit: bool = False) -> dict[str, Any]:
    image = namespace_image(files)
    urllib.request.urlopen(urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST"),
                           timeout=60).read()
    queues = create_resources(boto3.client("s3"), boto3.client("dynamodb"), boto3.client("sqs"))
    inodes = image.summary.files + image.summary.dirs
    listed = files <= listing_max_files
    doubled = files >= writes_double_from
    start = index = checked = None
    # The NameNode loads the image in parallel as bench.inventory_scale starts it (10M: ~1 min
    # instead of ~2); its heap sized for the namespace.
    with HdfsCluster.start(work / f"hdfs-{files}", image=image.name_dir, datanodes=0,
                           heap=image.heap,
                           conf={"dfs.image.parallel.load": "true", **PURGING}) as hdfs:
        if listed:
            config = write_agent_config(
                work / f"agent-{files}", cluster=CLUSTER, queue_url=queues.events, uri=hdfs.uri,
                conf_dir=hdfs.conf_dir, extra=f'[verify]\nindex_table = "{TABLE}"\n')
            txid = hdfs.txid()  # nothing writes: the snapshot is taken at this txid
            start = first_start(config, txid, timeout_s)
            start["events_per_s"] = round(inodes / start["seconds"])
            if files <= index_max_files:
                index = consume(queues, code_tree, work / f"consumer-{files}.log")
                index["records_per_s"] = round(inodes / index["seconds"])
            checked = verify(config, timeout_s)
        top = "/" + next(iter(image.summary.subtrees)).split("/")[1]
        image_config = image_agent_config(
            work / f"agent-image-{files}", hdfs, cluster=IMAGE_CLUSTER, queue_url=queues.events,
            first_start="fsimage", bucket=BUCKET, inventory_job=INVENTORY_JOB)
        imaged = image_start(hdfs, image_config, timeout_s, threads,
                             latency_ms if doubled else None, top, key_limit)
        if imaged["listing_rpcs"]:
            raise RuntimeError(f"the image start made {imaged['listing_rpcs']} listStatus calls")
        compared = None
        if index is not None and not doubled:
            compared = compare_indexes(txid, imaged["txid"])
            if compared["differ"] or compared["entries"] != inodes - 1:
                raise RuntimeError(f"at {files:,} files the image start's index differs from "
                                   f"the listing start's: {compared}")
        imaged["compared"] = compared
        # Step 7 reads step 6's inventory: the repair publishes its own in its place.
        inventory = "" if doubled else inventory_location(IMAGE_CLUSTER)
        repaired = gap_repair(hdfs, image, image_config, imaged["txid"], queues, code_tree,
                              work / f"agent-image-{files}", timeout_s, threads,
                              latency_ms if doubled else None, key_limit,
                              verified=not doubled)
        namenode_s = round(hdfs.started_s, 1)
    written = imaged["indexed"]
    # Through the double, the image start's own writes are the apply rate: the real inventory,
    # in the job as deployed, at the latency.
    imaged["apply"] = (
        {"rows": written["entries"], "entries": written["entries"],
         "seconds": written["seconds"], "numbering_seconds": written["numbering_seconds"],
         "records_per_s": round(written["entries"] / written["seconds"]),
         "latency_ms": latency_ms, "threads_per_task": threads,
         "batch_calls": written["batch_calls"], "write_tasks": written["write_tasks"],
         "unprocessed_resends": written["unprocessed_retries"], "key_limit": key_limit,
         "in_the_image_start": True} if doubled else
        snapshot_apply_rate(inventory, latency_ms, threads, key_limit=key_limit))
    if checked is not None:
        check_verify(checked, files, inodes - 1, index is not None, work)
    return {"files": files, "dirs": image.summary.dirs, "inodes": inodes,
            "bytes": image.summary.bytes, "image": image.build, "namenode_start_s": namenode_s,
            "first_start": start, "index": index, "verify": checked, "image_start": imaged,
            "gap_repair": repaired}


def check_verify(checked: dict[str, Any], files: int, expected: int, indexed_all: bool,
                 work: Path) -> None:
    """verify counted every entry (every inode but the root, what the generator made, counted
    without listing) and, without the consumer's pass, found every entry MISSING."""
    indexed = expected if indexed_all else 0
    if (checked["differ"], checked["in_hdfs"], checked["in_index"]) != (
            expected - indexed, expected, indexed):
        # What the table holds for a path verify misses: nothing (a write that never landed)
        # or a delete marker (an entry a later rule or walk ended), read before moto goes.
        stored = stored_items(checked["drift_lines"])
        (work / f"drift-{files}.json").write_text(json.dumps(stored, indent=1) + "\n")
        raise RuntimeError(f"at {files:,} files verify found {checked['differ']} differing, "
                           f"{checked['in_hdfs']:,} entries in HDFS and {checked['in_index']:,} "
                           f"in the index; the namespace holds {expected:,}, the index "
                           f"should hold {indexed:,}; verify's first lines: "
                           + "; ".join(checked["drift_lines"]))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.first_start",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,300000,1000000",
                        help="files in the namespace, comma-separated; the first is the baseline")
    parser.add_argument("--code-tree", type=Path, default=REPO,
                        help="the copy of onprem_agent, hdfs_events and lambdas to run")
    # verify against a full 1M index through moto took ~45-70 min (~250-400 entries/s).
    parser.add_argument("--timeout", type=float, default=2 * 3600,
                        help="seconds each agent command may take at one size")
    parser.add_argument("--index-max-files", type=int, default=1_000_000,
                        help="sizes up to this are indexed by the consumer through moto before "
                             "verify (~500 index entries/s at 100k on a loaded machine); larger "
                             "ones are verified against the empty index")
    parser.add_argument("--latency-ms", type=float, default=5.0,
                        help="DynamoDB's latency per call for the SNAPSHOT apply rate")
    parser.add_argument("--index-threads", type=int, default=16,
                        help="BatchWriteItem calls in flight per write task of the image job")
    parser.add_argument("--listing-max-files", type=int, default=1_000_000,
                        help="sizes up to this also run the listing start, the consumer and "
                             "verify; above, the image start alone (the listing of 10M files "
                             "through moto's SQS does not fit a bench's time)")
    parser.add_argument("--writes-double-from", type=int, default=3_000_000,
                        help="sizes from this on run the image start with the job's index "
                             "writes answered by the latency double (moto cannot hold them): "
                             "its index is not compared, and its own writes are the apply rate")
    parser.add_argument("--apply-sizes", default="",
                        help="only the SNAPSHOT apply rate, on this many synthetic rows each "
                             "(comma-separated): no NameNode, agent or image job")
    parser.add_argument("--apply-flat-share", type=float, default=0.0,
                        help="with --apply-sizes: this share of the synthetic files in one flat "
                             "directory")
    parser.add_argument("--key-limit", action="store_true",
                        help="the latency double refuses a partition key's writes past 1,000 a "
                             "second as UnprocessedItems, as DynamoDB does")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--work", type=Path, default=None,
                        help="keep the NameNodes, agent configs and consumer logs here (default: "
                             "a temporary directory, removed at the end)")
    args = parser.parse_args(argv)
    if args.apply_sizes:
        for files in (int(n) for n in args.apply_sizes.split(",")):
            a = snapshot_apply_rate(files, args.latency_ms, args.index_threads,
                                    flat_share=args.apply_flat_share, key_limit=args.key_limit)
            print(f"{files:>9,} synthetic rows"
                  + (f" ({args.apply_flat_share:.0%} in {FLAT_DIR})" if args.apply_flat_share
                     else "")
                  + f": {apply_line(a)}; load {os.getloadavg()[0]:.1f})", flush=True)
        return 0
    sizes = [int(s) for s in args.sizes.split(",")]
    code_tree = args.code_tree.resolve()
    # The agent's console script imports the code from PYTHONPATH before the editable install.
    os.environ["PYTHONPATH"] = os.pathsep.join(
        filter(None, (str(code_tree), os.environ.get("PYTHONPATH"))))
    runs = []
    with contextlib.ExitStack() as stack:
        work = args.work or Path(stack.enter_context(
            tempfile.TemporaryDirectory(prefix="bench-first-start-")))
        work.mkdir(parents=True, exist_ok=True)
        endpoint = stack.enter_context(local_aws())
        for files in sizes:
            runs.append(measure(files, work, endpoint, code_tree, args.timeout,
                                args.index_max_files, args.latency_ms, args.index_threads,
                                listing_max_files=args.listing_max_files,
                                writes_double_from=args.writes_double_from,
                                key_limit=args.key_limit))
            print_row(runs[-1], runs[0])
    if len(runs) > 1:
        print_fit(runs)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "goal_ratio": GOAL, "code_tree": str(code_tree), "code_commit": _commit(code_tree),
        "load_average_1m": os.getloadavg()[0], "runs": runs}, indent=2) + "\n")
    return 0


def print_row(run: dict[str, Any], base: dict[str, Any]) -> None:
    s, v, i = run["first_start"], run["verify"], run["image_start"]
    print(f"{run['files']:>9,} files ({run['inodes']:,} inodes): NameNode up in "
          f"{run['namenode_start_s']:.1f} s (image {run['image']['seconds']} s to build"
          f"{', cached' if run['image']['cached'] else ''}); " + (
              f"first start {s['seconds']:.1f} s, {s['events_per_s']:,} events/s, peak RSS "
              f"{s['peak_rss_kb'] / 1024:.0f} MiB "
              + (f"({s['peak_rss_kb'] / base['first_start']['peak_rss_kb']:.2f}x); "
                 if base["first_start"] else "; ")
              + (f"index {run['index']['seconds']:.0f} s" if run["index"] else "index left empty")
              + f"; verify {v['seconds']:.1f} s, peak RSS {v['peak_rss_kb'] / 1024:.0f} MiB"
              + (f" ({v['peak_rss_kb'] / base['verify']['peak_rss_kb']:.2f}x)"
                 if base["verify"] else "")
              + f", {v['differ']} differ" if s else "no listing start at this size"),
          flush=True)
    c, a, written = i["compared"], i["apply"], i["indexed"]
    doubled = i["writes_latency_ms"] is not None
    print(f"{'':>9} fsimage start {i['seconds']:.1f} s (goal <= {FIRST_START_GOAL_S} s at 10M "
          f"inodes; fetch, the inventory job on local[2] "
          f"{i['job_seconds']:.1f} s, {written['entries']:,} entries written in "
          f"{written['seconds']:.1f} s by {written['write_tasks']} tasks"
          + (f" at {i['writes_latency_ms']:g} ms per BatchWriteItem (the latency double)"
             if doubled else " into moto")
          + f", {written['sharded_directories']} directories sharded), peak RSS "
          f"{i['peak_rss_kb'] / 1024:.0f} MiB (goal {RSS_GOAL_MIB:,})"
          + (f" against the listing start's {s['peak_rss_kb'] / 1024:.0f} MiB ({s['seconds']:.1f} "
             "s)" if s else "")
          + f", {i['listing_rpcs']} listing RPCs; index "
          + (f"equal to the listing start's entry for entry ({c['entries']:,})" if c and
             not c["differ"] else "not stored (the double)" if doubled else
             "not compared (left empty)"), flush=True)
    print(f"{'':>9} " + apply_line(a, " (the image start's own writes)"
                                     if a.get("in_the_image_start") else "") + ")", flush=True)
    if run.get("gap_repair"):
        print(f"{'':>9} " + repair_line(run["gap_repair"], s, run["index"]), flush=True)


def repair_line(g: dict[str, Any], listed: dict[str, Any] | None,
                applied: dict[str, Any] | None) -> str:
    """Step 8's line: the repair (its index written) beside the listing start of the same
    tree (until SQS acknowledged it) and the consumer's apply of that listing."""
    job, checked = g["indexed"], g["verify"]
    return (f"gap repair from the fsimage {g['seconds']:.1f} s ("
            + (f"the listing start: {listed['seconds']:.1f} s, "
               f"{g['seconds'] / listed['seconds']:.2f}x"
               + (f", then its apply {applied['seconds']:.0f} s" if applied else "")
               + "; " if listed else "")
            + f"the inventory job on local[2] {g['job_seconds']:.1f} s, {job['entries']:,} "
            f"entries written in {job['seconds']:.1f} s"
            + (f" at {g['writes_latency_ms']:g} ms per BatchWriteItem (the latency double)"
               if g["writes_latency_ms"] is not None else " into moto")
            + f"), peak RSS {g['peak_rss_kb'] / 1024:.0f} MiB"
            + (f" (the listing start's {listed['peak_rss_kb'] / 1024:.0f})" if listed else "")
            + f", {job['removed']:,} removed ({g['paths_away']:,} paths deleted or renamed away "
            f"by {g['changes']} changes), {g['listing_rpcs']} listing RPCs; "
            + (f"verify {checked['differ']} differ ({checked['in_index']:,} entries)"
               if checked else "not verified (the double stores nothing)"))


def apply_line(a: dict[str, Any], whose: str = "") -> str:
    """A SNAPSHOT apply rate (snapshot_apply_rate's dict), its parenthesis left open."""
    return (f"SNAPSHOT apply at {a['latency_ms']:g} ms per DynamoDB call{whose}: "
            f"{a['records_per_s']:,} records/s ({a['records_per_s'] / APPLY_GOAL:.2f}x the goal "
            f"{APPLY_GOAL:,}; {a['write_tasks']} tasks x {a['threads_per_task']} calls in flight, "
            f"{a['entries']:,} records in {a['seconds']:.1f} s, of which walk order and numbers "
            f"{a['numbering_seconds']:.1f} s; {a['batch_calls']:,} calls, "
            f"{a['unprocessed_resends']:,} of them resends of unprocessed items"
            + (f", {PARTITION_KEY_WCU:,} writes/s a key modelled" if a["key_limit"] else ""))


def print_fit(runs: list[dict[str, Any]]) -> None:
    """The issue's 100M figure: the image start's seconds fitted as a + b x inodes over this
    run's sizes (least squares), with the agent's peak RSS beside: it should stay flat, as the
    agent only fetches the image and waits for the job."""
    a, b = fit([(r["inodes"], r["image_start"]["seconds"]) for r in runs])
    rss = [r["image_start"]["peak_rss_kb"] / 1024 for r in runs]
    print(f"{'':>9} fsimage start fitted over {len(runs)} sizes: {a:.1f} s + {b * 1e6:.2f} s per "
          f"1M inodes; at 100M files ({FILES_100M_INODES / 1e6:.1f}M inodes, the kit's shape) "
          f"{a + b * FILES_100M_INODES:,.0f} s on local[2]; agent peak RSS "
          f"{min(rss):.0f}-{max(rss):.0f} MiB", flush=True)


def _commit(tree: Path) -> str:
    done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tree, capture_output=True,
                          text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 else "not a git tree"


if __name__ == "__main__":
    raise SystemExit(main())
