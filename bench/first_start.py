"""The agent's first start and `verify` on a real NameNode holding 100k, 300k and 1M files: the
agent process's peak memory at each size against the smallest, measured in the same run.

    .venv/bin/python -m bench.first_start [--sizes 100000,300000,1000000] [--code-tree DIR]

For each size:
1. The NameNode starts on the kit's cached name directory of that many files
   (tests/kit/hadoop/namespace_image.py: Hadoop's Offline Image Reconstructor, built once per
   size into .hadoop/namespaces/), no DataNode; its start time is recorded.
2. A fresh moto server state (one server on 127.0.0.1 for the run, reset per size): the FIFO
   queue, the lake bucket and the index table as the stacks make them.
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
   (tests/kit/sqs_lambda.py, its own process) applies the queue to the index, timed. moto
   answers the index's Query from its one partition (tests/kit/moto_fast_query.py, applied by
   demo.chain.local_aws): without it moto sorts the whole table on every Query and indexed ~40
   entries/s at 100k files. Above the limit the index stays empty.
5. `hdfs-events-agent verify --prefix /`: its peak RSS and wall time. It must count every entry
   the generator made in HDFS (namespace_shape's counts, not a listing) and, when indexed, the
   same in the index with 0 differ; against an empty index every entry is MISSING (the drift
   path at its largest). Compare memory only between sizes verified the same way.

The figures: first start and verify peak RSS at each size against the smallest size (goal:
flat within 20 %, at most 1.2x). `--code-tree` runs agent, consumer and verify from another copy
of the code (`git archive <commit> onprem_agent hdfs_events lambdas tests/__init__.py tests/kit`),
for a before/after of a design in one run's conditions. Writes bench-out/first_start.json.
"""

from __future__ import annotations

import argparse
import contextlib
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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import boto3

from bench import REPO
from demo.chain import local_aws
from hdfs_events import names
from hdfs_events.index_item import wire_keys
from tests.kit.hadoop.cluster import HdfsCluster
from tests.kit.hadoop.namespace_image import namespace_image
from tests.kit.ingest_aws import BUCKET, TABLE, create_resources
from tests.kit.lambda_events import MOTO_SENDER_ID, cluster_senders
from tests.kit.live_agent import AGENT, AgentProcess, write_agent_config

OUT = Path("bench-out/first_start.json")
CLUSTER = "bench"
GOAL = 1.2  # peak RSS at any size / at the smallest
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


def first_start(config: Path, txid: int, timeout_s: float) -> dict[str, Any]:
    agent = AgentProcess.start(config)
    watch = PeakWatch(agent.process.pid)
    started = time.perf_counter()
    try:
        agent.wait_for_checkpoint(txid, timeout_s=timeout_s)
    except BaseException:
        agent.kill()
        raise
    seconds = time.perf_counter() - started
    agent.process.send_signal(signal.SIGTERM)
    code = reap(agent.process, 120)
    hwm = watch.stop()
    if code != 0:
        raise RuntimeError(f"the agent exited {code} on SIGTERM: {agent.log_tail()}")
    return {"seconds": round(seconds, 2), "peak_rss_kb": hwm, "exit": code}


def consume(queue_url: str, code_tree: Path, log: Path) -> dict[str, Any]:
    """The consumer Lambda's handler over the whole queue, with the function's environment;
    its output kept in `log` (what it logged when the index comes out short)."""
    env = {**os.environ, names.ENV_LAKE_BUCKET: BUCKET, names.ENV_INDEX_TABLE: TABLE,
           names.ENV_INDEX_PREFIXES: "/", names.ENV_EVENT_QUEUE_URL: queue_url,
           names.ENV_LOG_MODE: "summary",
           names.ENV_CLUSTER_SENDERS: cluster_senders({CLUSTER: MOTO_SENDER_ID}),
           "POWERTOOLS_METRICS_NAMESPACE": names.METRICS_NAMESPACE,
           "POWERTOOLS_SERVICE_NAME": "hdfs-events-ingest", "POWERTOOLS_TRACE_DISABLED": "1"}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "tests.kit.sqs_lambda", queue_url,
                           "--idle-polls", "3"], env=env, capture_output=True, text=True,
                          timeout=4 * 3600, cwd=code_tree, check=False)
    log.write_text(done.stdout + done.stderr, encoding="utf-8")
    if done.returncode != 0:
        raise RuntimeError(f"consumer exited {done.returncode}: {done.stderr[-2000:]}")
    counts = dict(kv.split("=") for kv in done.stdout.split() if "=" in kv)
    if int(counts.get("failures", 0)):
        raise RuntimeError(f"the consumer failed messages: {done.stdout.strip()}")
    return {"seconds": round(time.perf_counter() - started, 2),
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


def measure(files: int, work: Path, endpoint: str, code_tree: Path, timeout_s: float,
            index_max_files: int) -> dict[str, Any]:
    image = namespace_image(files)
    urllib.request.urlopen(urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST"),
                           timeout=60).read()
    queue = create_resources(boto3.client("s3"), boto3.client("dynamodb"), boto3.client("sqs"))
    inodes = image.summary.files + image.summary.dirs
    with HdfsCluster.start(work / f"hdfs-{files}", image=image.name_dir, datanodes=0) as hdfs:
        config = write_agent_config(
            work / f"agent-{files}", cluster=CLUSTER, queue_url=queue, uri=hdfs.uri,
            conf_dir=hdfs.conf_dir, extra=f'[verify]\nindex_table = "{TABLE}"\n')
        txid = hdfs.txid()  # nothing writes: the snapshot is taken at this txid
        start = first_start(config, txid, timeout_s)
        start["events_per_s"] = round(inodes / start["seconds"])
        index: dict[str, Any] | None = None
        if files <= index_max_files:
            index = consume(queue, code_tree, work / f"consumer-{files}.log")
            index["records_per_s"] = round(inodes / index["seconds"])
        checked = verify(config, timeout_s)
        namenode_s = round(hdfs.started_s, 1)
    # Every inode but the root is an entry: what the generator made, counted without listing.
    # Without the consumer's pass the index is empty and every entry is MISSING.
    expected = inodes - 1
    indexed = expected if index else 0
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
    return {"files": files, "dirs": image.summary.dirs, "inodes": inodes,
            "bytes": image.summary.bytes, "image": image.build, "namenode_start_s": namenode_s,
            "first_start": start, "index": index, "verify": checked}


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
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--work", type=Path, default=None,
                        help="keep the NameNodes, agent configs and consumer logs here (default: "
                             "a temporary directory, removed at the end)")
    args = parser.parse_args(argv)
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
                                args.index_max_files))
            print_row(runs[-1], runs[0])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "goal_ratio": GOAL, "code_tree": str(code_tree), "code_commit": _commit(code_tree),
        "load_average_1m": os.getloadavg()[0], "runs": runs}, indent=2) + "\n")
    return 0


def print_row(run: dict[str, Any], base: dict[str, Any]) -> None:
    s, v = run["first_start"], run["verify"]
    print(f"{run['files']:>9,} files ({run['inodes']:,} inodes): NameNode up in "
          f"{run['namenode_start_s']:.1f} s (image {run['image']['seconds']} s to build"
          f"{', cached' if run['image']['cached'] else ''}); first start {s['seconds']:.1f} s, "
          f"{s['events_per_s']:,} events/s, peak RSS {s['peak_rss_kb'] / 1024:.0f} MiB "
          f"({s['peak_rss_kb'] / base['first_start']['peak_rss_kb']:.2f}x); "
          + (f"index {run['index']['seconds']:.0f} s" if run["index"] else "index left empty")
          + f"; verify {v['seconds']:.1f} s, peak RSS "
          f"{v['peak_rss_kb'] / 1024:.0f} MiB ({v['peak_rss_kb'] / base['verify']['peak_rss_kb']:.2f}x)"
          f", {v['differ']} differ", flush=True)


def _commit(tree: Path) -> str:
    done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tree, capture_output=True,
                          text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 else "not a git tree"


if __name__ == "__main__":
    raise SystemExit(main())
