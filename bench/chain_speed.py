"""The whole chain at the NameNode's own speed (issue 32 item 6): a real NameNode driven as fast
as it journals, and whether the live agent, the queue, the consumers and the index keep up.

    python -m bench.chain_speed [--seconds 600] [--threads 8] [--consumers N] [--latency-ms 5]
                                [--out bench-out/chain_speed.json]

Real: the NameNode (Hadoop's own, MiniDFSCluster in a process of its own, no DataNode: the
files are empty, so no block is written); the client driving it (tests/kit/hadoop/
namenode_load.py: `--threads` threads of one Hadoop client JVM, each creating, closing,
renaming and deleting files of its own directory for `--seconds`, four RPCs and four inotify
events a step); the agent (`hdfs-events-agent run`, its own process and JVM, the live defaults:
200 ms linger, messages grouped by `prefix:2`, one group per client thread); the FIFO queue
(moto server in a process of its own, the queue's attributes as deployed), the consumer's FIFO
apply queue beside it, and the lake bucket (moto server in this process); the consumer Lambda's
handler behind the local SQS event source mappings (tests/kit/sqs_lambda.py, one process each,
bench/chain_consumer.py): on the event queue `--consumers` processes side by side (default: one
per message group, up to 8), as the mapping invokes a FIFO queue's groups concurrently, each
storing lake objects and arrivals and sending a continue request; on the apply queue one, as
its mapping invokes the one cluster's continue requests one batch at a time, applying the index
(everything under the driven root) while the event queue's invocations go on.

Doubled: the consumers' DynamoDB (the index entries and the sequencer's items), one table set
shared by all of them: tests/kit/dynamodb_server.py, a process of its own speaking DynamoDB's
JSON protocol, each call waiting `--latency-ms` (calls in flight overlap, as on DynamoDB),
reached through botocore's `AWS_ENDPOINT_URL_DYNAMODB`. Through moto server each DynamoDB call
costs ~10-40 ms of moto's Python (bench/freshness.py), and moto in-process 1-10 ms of CPU a call
behind one lock (tried first: at ~700 events/s its calls took 34 ms on average and the figure
was moto's).

Measured: the NameNode's journal rate (the client's operations, one event each, over the
client's seconds on the JVM clock the NameNode stamps edits with); per event, NameNode commit
(the event's own NameNode timestamp) -> lake object (the handler returned: it puts the object
before) and -> index entry (the sequencer's position passed the event, in an invocation of the
apply queue: its entries are written before the position moves), and the stages between
(bench/chain_consumer.py STAGES: the agent to SQS's SentTimestamp, the queue to its first
receive, the handler to its lake objects and arrivals, the rest of the event invocation to its
return (its continue request sent), the lake to the event being ready to apply (its range's
manifest stored too), and ready to its index entry, split at the start of the apply invocation
that applied it: waiting for one (the continue request's trip, the invocation before it), then
its own work); the continue requests sent (by event invocations, and by apply invocations out of
time) and the apply invocations; the chain's rate: the driven events over the time from the
first operation to the last event's index entry (to its lake object for the lake's rate). A
chain falling behind ends later and its rate drops below the NameNode's. Goal: >= 0.9x the
journal rate, freshness p99 <= 2 s. The CPU each part took during the drive (/proc, each process
with its descendants), against the machine's cores. Then `hdfs-events-agent verify` (the real
command, the NameNode's listing against the index the consumers wrote, read from the double)
over the driven root: the run fails unless it reports 0 entries differ. Writes
bench-out/chain_speed.json.
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import itertools
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench import OUT_DIR
from bench.chain_consumer import CLUSTER, STAGES, VISIBILITY_S, merge_consumers
from bench.hadoop_jmx import beans, namenode_http
from bench.proc_cpu import CpuMeter

if TYPE_CHECKING:
    from tests.kit.ingest_aws import ConsumerQueues

REPO = Path(__file__).resolve().parent.parent
OUT = OUT_DIR / "chain_speed.json"
ROOT = "/bench"
BUCKET = "lake"
TABLE = "hdfs-events-index"
GOAL_RATIO, GOAL_P99_MS = 0.9, 2000
CPU_PARTS = {"this process": "moto server S3 (this process)",
             "children reaped": "Hadoop client JVM"}


def agent_config(work: Path, queue_url: str, hdfs: Any, after_txid: int,
                 linger_ms: int | None) -> Path:
    """agent.toml: the live defaults (grouping; the linger unless `linger_ms`), a file
    checkpoint at `after_txid` (the agent streams from the next txid), and the index table
    `verify` reads."""
    (work / "checkpoint.json").write_text(json.dumps({"txid": after_txid}))
    config = work / "agent.toml"
    config.write_text(
        f'cluster = "{CLUSTER}"\n[sqs]\nqueue_url = "{queue_url}"\n'
        f'[checkpoint]\npath = "{work / "checkpoint.json"}"\ninterval_ms = 200\n'
        f'[hdfs]\nuri = "{hdfs.uri}"\nconf_dir = "{hdfs.conf_dir}"\n'
        f'[metrics]\nprometheus_port = 0\nheartbeat_interval_s = 0\n'
        f'[verify]\nindex_table = "{TABLE}"\n'
        + ("" if linger_ms is None else f"[packing]\nlinger_ms = {linger_ms}\n"),
        encoding="utf-8")
    return config


APPLIER = "apply-consumer"  # the apply queue's consumer process (its files' stem)


def start_consumers(work: Path, queues: ConsumerQueues, count: int
                    ) -> dict[str, subprocess.Popen[bytes]]:
    """`count` consumers of the event queue ("consumer-<i>") and one of the apply queue
    (APPLIER), by their files' stem. Started before the NameNode: their imports overlap the
    NameNode's start."""
    from hdfs_events import names
    from tests.kit.lambda_events import MOTO_SENDER_ID, cluster_senders

    env = {**os.environ, names.ENV_LAKE_BUCKET: BUCKET, names.ENV_INDEX_TABLE: TABLE,
           names.ENV_INDEX_PREFIXES: ROOT, names.ENV_APPLY_QUEUE_URL: queues.apply,
           names.ENV_LOG_MODE: "summary",
           names.ENV_CLUSTER_SENDERS: cluster_senders({CLUSTER: MOTO_SENDER_ID}),
           "POWERTOOLS_METRICS_NAMESPACE": names.METRICS_NAMESPACE,
           "POWERTOOLS_SERVICE_NAME": "hdfs-events-ingest", "POWERTOOLS_TRACE_DISABLED": "1"}
    mappings = [*(("events", queues.events, f"consumer-{i}") for i in range(count)),
                ("apply", queues.apply, APPLIER)]
    processes = {}
    for queue, url, name in mappings:
        with (work / f"{name}.log").open("wb") as log:
            processes[name] = subprocess.Popen(
                [sys.executable, "-m", "bench.chain_consumer", queue, url, str(work), name],
                stdout=log, stderr=subprocess.STDOUT, cwd=REPO, env=env)
    return processes


def await_consumers(processes: dict[str, subprocess.Popen[bytes]], work: Path) -> None:
    deadline = time.monotonic() + 180
    for name, process in processes.items():
        while not (work / f"{name}.ready").exists():
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"{name} not polling: {tail(work / f'{name}.log')}")
            time.sleep(0.05)


def stop_consumers(processes: dict[str, subprocess.Popen[bytes]], work: Path, how: str
                   ) -> dict[str, int]:
    """The event queue's consumers first, then the apply queue's: the last continue requests
    are sent by the last event invocations. `how`: "drain" (each stops once its queue is
    empty) or "now". Returns their exit codes."""
    exits = {}
    for queue, names in (("events", [n for n in processes if n != APPLIER]),
                         ("apply", [APPLIER])):
        (work / f"{queue}.stop").write_text(how)
        exits |= {name: processes[name].wait(timeout=600) for name in names}
    return exits


def tail(log: Path, lines: int = 30) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


def pct(values: list[int], q: float) -> float:
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, int(q * len(ordered)))]) if ordered else float("nan")


def index_times(events: list[list[int]], advances: list[list[Any]]) -> list[int | None]:
    """Per event (sorted by key), when the sequencer's position first covered it (None: never).
    The position only moves forward, so each event's first covering advance is found by a
    binary search over the advances' keys (an unfinished walk leaves its own event out)."""
    marks: list[tuple[int, int]] = []
    stamps: list[int] = []
    for ms, txid, idx, walk in sorted(advances, key=lambda a: (a[1], a[2], a[0])):
        key = (txid, idx - 1) if walk else (txid, idx)
        if not marks or key > marks[-1]:
            marks.append(key)
            stamps.append(ms)
    # The first mark at or after the event's key; times made monotonic so an earlier-keyed
    # event never gets a later stamp than a later-keyed one already applied.
    for i in range(len(stamps) - 2, -1, -1):
        stamps[i] = min(stamps[i], stamps[i + 1])
    out: list[int | None] = []
    for txid, idx, *_ in events:
        at = bisect.bisect_left(marks, (txid, idx))
        out.append(stamps[at] if at < len(marks) else None)
    return out


def range_stored(events: list[list[int]], manifests: list[list[int]]) -> list[int | None]:
    """Per event (sorted by key), when the first manifest of the range holding its txid was
    stored (None: never seen): before then the index cannot apply it."""
    ends = [end for _, end, _ in manifests]
    out: list[int | None] = []
    for txid, *_ in events:
        at = bisect.bisect_left(ends, txid)
        stored = [ms for after, end, ms in manifests[at:at + 4] if after < txid <= end]
        out.append(min(stored) if stored else None)
    return out


def applying_from(ready: list[int | None], applied: list[int | None],
                  applying: list[list[int]]) -> list[int | None]:
    """Per event, when the apply invocation that applied it started applying it: the
    invocation's call (`applying`: (called, returned, ...) of each, one at a time), or when the
    event became ready if that invocation was already running then (None: not applied)."""
    called = sorted(a[0] for a in applying)
    out: list[int | None] = []
    for r, t in zip(ready, applied, strict=True):
        at = bisect.bisect_right(called, t) - 1 if t is not None else -1
        out.append(None if r is None or t is None or at < 0 else max(r, called[at]))
    return out


def verify(config: Path) -> dict[str, Any]:
    """`hdfs-events-agent verify` of the driven root against the index the consumers wrote (the
    double, through AWS_ENDPOINT_URL_DYNAMODB)."""
    from tests.kit.live_agent import AGENT

    done = subprocess.run([str(AGENT), "verify", "--config", str(config), "--prefix", ROOT],
                          capture_output=True, text=True, timeout=600, env=dict(os.environ))
    head = next((line for line in done.stdout.splitlines() if line.startswith("verify ")), "")
    differ = int(head.rsplit(";", 1)[1].split()[0]) if head else None
    return {"exit": done.returncode, "line": head, "differ": differ,
            "output": (done.stdout + done.stderr)[-2000:] if done.returncode else ""}


def run(args: argparse.Namespace) -> dict[str, Any]:
    from tests.kit.local_chain import local_aws
    from tests.kit.service_process import dynamodb_double, moto_service

    # S3 on the moto server local_aws starts in this process (which otherwise waits), SQS on
    # one of its own, DynamoDB on the double: three services, three processes, as on AWS.
    with (contextlib.nullcontext(str(args.keep)) if args.keep is not None
          else tempfile.TemporaryDirectory(prefix="chain-speed-")) as tmp, local_aws():
        work = Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        sqs_server = moto_service(work / "moto-sqs.log")
        double = dynamodb_double(work / "dynamodb.log", args.latency_ms)
        os.environ["AWS_ENDPOINT_URL_SQS"] = sqs_server.endpoint
        os.environ["AWS_ENDPOINT_URL_DYNAMODB"] = double.endpoint
        try:
            return drive_the_chain(args, work, sqs_server.pid, double.pid)
        finally:
            sqs_server.stop()
            double.stop()


def drive_the_chain(args: argparse.Namespace, work: Path, sqs_pid: int, double_pid: int
                    ) -> dict[str, Any]:
    import boto3

    from tests.kit.hadoop.cluster import HdfsCluster
    from tests.kit.ingest_aws import ConsumerQueues, create_apply_queue
    from tests.kit.live_agent import AgentProcess

    boto3.client("s3").create_bucket(
        Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    sqs = boto3.client("sqs")
    queues = ConsumerQueues(sqs.create_queue(QueueName="events.fifo", Attributes={
        # As stacks/queues.py deploys it (high-throughput FIFO, the agent's own dedup ids).
        "FifoQueue": "true", "DeduplicationScope": "messageGroup",
        "FifoThroughputLimit": "perMessageGroupId", "ContentBasedDeduplication": "false",
        "VisibilityTimeout": str(VISIBILITY_S)})["QueueUrl"],
        create_apply_queue(sqs, "apply.fifo"))
    consumers = start_consumers(work, queues, args.consumers)
    with HdfsCluster.start(work / "hdfs", datanodes=0) as hdfs:
        config = agent_config(work, queues.events, hdfs, hdfs.txid(), args.linger_ms)
        agent = AgentProcess.start(config)
        await_consumers(consumers, work)
        caught_up = False
        try:
            hdfs.run([["mkdirs", ROOT]])  # the agent is streaming once this is acknowledged
            first = hdfs.txid()
            agent.wait_for_checkpoint(first, timeout_s=180)
            load_json = work / "load.json"
            parts = {"NameNode": [hdfs.pid], "agent": [agent.process.pid],
                     "moto server SQS": [sqs_pid], "DynamoDB double": [double_pid],
                     **{name.replace("-", " "): [c.pid] for name, c in consumers.items()}}
            cpu = CpuMeter(parts)
            with InotifyRpcs(hdfs.conf_dir) as rpcs:
                drive = subprocess.run(
                    [sys.executable, "-m", "tests.kit.hadoop.namenode_load", hdfs.uri,
                     str(hdfs.conf_dir), ROOT, "--threads", str(args.threads),
                     "--seconds", str(args.seconds), "--out", str(load_json)],
                    capture_output=True, text=True, cwd=REPO, check=False)
            cpu_s = cpu.read()
            if drive.returncode != 0:
                raise SystemExit(f"the client failed: {drive.stderr[-2000:]}")
            last = hdfs.txid()
            # Then one event after the drive's, to wait for: the agent rolls the edit log every
            # roll_edits_every_txids it reads, and a roll's END/START_LOG_SEGMENT txids carry
            # no event for its checkpoint to reach (tests/integration/live/test_ha.py).
            hdfs.run([["chmod", ROOT, "0750"]])
            try:
                agent.wait_for_checkpoint(last + 1, timeout_s=args.drain_seconds)
                caught_up = True
            except AssertionError:
                caught_up = False  # the drain is cut short: the figures say how far it got
        finally:
            agent_exit = agent.stop()
            exits = stop_consumers(consumers, work, "drain" if caught_up else "now")
        for name, code in exits.items():
            if code != 0:
                raise SystemExit(f"{name} exited {code}: {tail(work / f'{name}.log')}")
        consumed = merge_consumers([json.loads((work / f"{name}.json").read_text())
                                    for name in consumers])
        checked = verify(config) if caught_up else None
    load = json.loads(load_json.read_text())
    return {**summarize(load, consumed, checked, first, last, agent_exit, args),
            "caught_up": caught_up, "cpu_s_during_the_drive": cpu_s,
            "inotify_rpcs_by_quarter": rpcs.by_quarter()}


class InotifyRpcs:
    """The NameNode's getEditsFromTxid calls during the drive, from its RPC metrics (/jmx) read
    every `every_s`: how many and how long each took, by quarter of the drive. Each call reads
    the in-progress edit segment from its first op up to the txid asked for
    (RedundantEditLogInputStream's skipUntil), so a call costs more as the segment grows, and
    the agent reads at most dfs.namenode.inotify.max.events.per.rpc (1,000) events a call.
    AvgTime is the mean over the metrics' last interval (a MutableRate), NumOps a running
    count: each sample weighs the interval's mean by the calls made in it."""

    def __init__(self, conf_dir: Path, every_s: float = 5.0) -> None:
        self._namenode = namenode_http(conf_dir)
        self._every_s = every_s
        self.samples: list[tuple[float, int, float]] = []  # (monotonic s, calls, mean ms)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> InotifyRpcs:
        self.samples.append(self._read())
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        self.samples.append(self._read())

    def _run(self) -> None:
        while not self._stop.wait(self._every_s):
            self.samples.append(self._read())

    def _read(self) -> tuple[float, int, float]:
        # One bean per RPC port; the agent's calls reach the client port's.
        busiest = max(beans(self._namenode,
                            "Hadoop:service=NameNode,name=RpcDetailedActivityForPort*"),
                      key=lambda b: int(b.get("GetEditsFromTxidNumOps", 0)))
        return (time.monotonic(), int(busiest.get("GetEditsFromTxidNumOps", 0)),
                float(busiest.get("GetEditsFromTxidAvgTime", 0.0)))

    def by_quarter(self) -> list[dict[str, float]]:
        first, last = self.samples[0][0], self.samples[-1][0]
        quarters = [{"calls": 0, "ms": 0.0} for _ in range(4)]
        for (_, calls_a, _), (at, calls_b, mean) in itertools.pairwise(self.samples):
            q = quarters[min(3, int(4 * (at - first) / max(1e-9, last - first)))]
            q["calls"] += calls_b - calls_a
            q["ms"] += (calls_b - calls_a) * mean
        return [{"calls": q["calls"], "ms_per_call": round(q["ms"] / max(1, q["calls"]), 1)}
                for q in quarters]


def summarize(load: dict[str, Any], consumed: dict[str, Any], checked: dict[str, Any] | None,
              first: int, last: int, agent_exit: int, args: argparse.Namespace
              ) -> dict[str, Any]:
    events = [e for e in consumed["events"] if first < e[0] <= last]
    applied = index_times(events, consumed["advances"])
    at = {stage: 2 + i for i, stage in enumerate(STAGES)}  # after txid, index
    nn, returned = at["namenode"], at["returned"]
    to_lake = [e[returned] - e[nn] for e in events]
    to_index = [t - e[nn] for e, t in zip(events, applied, strict=True) if t is not None]
    start = load["started_ms"]
    journal_rate = load["events"] / load["seconds"]

    def rate(count: int, end_ms: int) -> float:
        return count / max(0.001, (end_ms - start) / 1000)

    def spread(values: list[int]) -> dict[str, float]:
        return {"p50": pct(values, 0.5), "p99": pct(values, 0.99), "max": pct(values, 1.0)}

    # Each stage from the one before: where the freshness goes.
    stages = {f"{a} -> {b}": spread([e[at[b]] - e[at[a]] for e in events])
              for a, b in itertools.pairwise(STAGES)}
    # The index needs the message and its range's manifest: the later of the two is when the
    # event became ready to apply.
    ready = [None if m is None else max(m, e[at["written"]])
             for e, m in zip(events, range_stored(events, consumed["manifests"]), strict=True)]
    stages["written -> ready"] = spread([r - e[at["written"]] for e, r
                                         in zip(events, ready, strict=True) if r is not None])
    stages["ready -> index"] = spread([t - r for r, t in zip(ready, applied, strict=True)
                                       if t is not None and r is not None])
    # Ready -> index, split where the apply queue's invocation that applied the event started
    # on it: waiting for one (the continue request through the apply queue, behind the
    # invocation before), then its own work until the position passed the event.
    applying = consumed["applying"]  # (called, returned, requests taken, requests sent)
    began = applying_from(ready, applied, applying)
    index_stages = {
        "ready -> applying": spread([b - r for r, b in zip(ready, began, strict=True)
                                     if b is not None and r is not None]),
        "applying -> index": spread([t - b for b, t in zip(began, applied, strict=True)
                                     if b is not None and t is not None])}
    # The agent's stage by quarter of the drive (by NameNode time): a stage that grows as the
    # drive goes on is falling behind, one that is flat is paying a fixed cost.
    span = max(1, load["ended_ms"] - start)
    quarters: list[list[int]] = [[] for _ in range(4)]
    for e in events:
        quarters[min(3, max(0, 4 * (e[nn] - start) // span))].append(e[at["sent"]] - e[nn])
    # The events over the goal: bunched in a few seconds (a stall somewhere) or spread (a
    # stage too slow throughout), and in which stage their time went.
    late = [(e, r, t) for e, r, t in zip(events, ready, applied, strict=True)
            if t is not None and r is not None and t - e[nn] > GOAL_P99_MS]
    late_seconds = Counter((e[nn] - start) // 1000 for e, _, _ in late)
    over_goal = {
        "events": len(late), "seconds": len(late_seconds),
        "worst_seconds": [[s, n] for s, n in late_seconds.most_common(5)],
        "stages_p50_ms": {**{f"{a} -> {b}": pct([e[at[b]] - e[at[a]] for e, _, _ in late], 0.5)
                             for a, b in itertools.pairwise(STAGES)},
                          "written -> ready": pct([r - e[at["written"]] for e, r, _ in late], 0.5),
                          "ready -> index": pct([t - r for _, r, t in late], 0.5)}}
    saves = sorted(a[0] for a in consumed["advances"])
    lake_rate = rate(len(events), max((e[returned] for e in events), default=start))
    index_rate = rate(len(to_index), max((a for a in applied if a is not None), default=start))
    calls = {k: v for k, v in consumed["calls"].items() if k.startswith("dynamodb.")}
    return {
        "seconds": args.seconds, "threads": args.threads, "consumers": args.consumers,
        "linger_ms": args.linger_ms,
        "latency_ms": args.latency_ms,
        "load_average_1m": os.getloadavg()[0],
        "namenode": {**load, "events_per_s": round(journal_rate), "txids": [first + 1, last]},
        # Not in the lake / not indexed when the run ended: lost if the chain caught up.
        "events_in_lake": len(events), "lost": load["events"] - len(events),
        "not_indexed": load["events"] - len(to_index),
        "lake_events_per_s": round(lake_rate), "index_events_per_s": round(index_rate),
        "ratio": round(index_rate / journal_rate, 3),
        "lake_ratio": round(lake_rate / journal_rate, 3),
        "edit_to_lake_ms": spread(to_lake), "edit_to_index_ms": spread(to_index),
        "stages_ms": stages, "ready_to_index_ms": index_stages, "over_goal": over_goal,
        "namenode_to_sent_by_quarter_ms": [spread(q) for q in quarters],
        "position_saves": {"count": len(saves), "ms_apart_p50": pct(
            [b - a for a, b in itertools.pairwise(saves)], 0.5),
            "events_apart_mean": round(len(to_index) / max(1, len(saves)))},
        # The event queue's consumers; calls and DynamoDB calls of both queues' invocations.
        "consumer": {k: consumed[k] for k in ("invocations", "records", "failures",
                                              "batch_errors")}
        | {"invocation_s_p50": pct(consumed["invocation_s"], 0.5),
           "consumer_s": consumed["consumer_s"], "calls": consumed["calls"],
           "call_s": consumed["call_s"],
           "receive_ms": round(1000 * consumed["receive_s"]
                               / max(1, consumed["receive_calls"]), 1),
           "dynamodb_calls_per_event": round(sum(calls.values()) / max(1, len(events)), 3)},
        "continue_requests_sent": consumed["continue_sent"],
        "apply": {k: consumed["apply"][k] for k in ("invocations", "records", "failures",
                                                    "batch_errors")}
        | {"requests_taken": sum(a[2] for a in applying),
           "receive_s": round(consumed["apply"]["receive_s"], 2),
           "invocation_ms": spread([a[1] - a[0] for a in applying])},
        "agent_exit": agent_exit, "verify": checked,
        "goal": {"ratio": GOAL_RATIO, "p99_ms": GOAL_P99_MS},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.chain_speed",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=600)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--consumers", type=int,
                        help="event queue consumer processes side by side (default: --threads, "
                             "up to 8: one per message group); the apply queue has one")
    parser.add_argument("--latency-ms", type=float, default=5.0,
                        help="per DynamoDB call (the double the consumers share)")
    parser.add_argument("--linger-ms", type=int,
                        help="the agent's [packing] linger_ms (default: its live default, 200)")
    parser.add_argument("--drain-seconds", type=float, default=120,
                        help="after the drive, how long the chain may take to catch up")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--keep", type=Path,
                        help="work in this directory and keep it: the agent's, the consumers' "
                             "and the services' logs")
    args = parser.parse_args(argv)
    args.consumers = args.consumers or min(args.threads, 8)

    r = run(args)
    nn, lake, index = r["namenode"], r["edit_to_lake_ms"], r["edit_to_index_ms"]
    print(f"the whole chain at the NameNode's speed: {args.threads} client threads for "
          f"{nn['seconds']:.0f} s, {args.consumers} consumers, "
          + ("" if args.linger_ms is None else f"agent linger {args.linger_ms} ms, ")
          + f"DynamoDB {args.latency_ms:g} ms "
          f"a call (shared double), load average {r['load_average_1m']:.1f}")
    print(f"NameNode journalled {nn['events']:,} events, {nn['events_per_s']:,} events/s "
          f"(txids {nn['txids'][0]}..{nn['txids'][1]})")
    left = (f"lost {r['lost']}, not indexed {r['not_indexed']}" if r["caught_up"] else
            f"NOT CAUGHT UP {args.drain_seconds:.0f} s after the drive: {r['lost']:,} events "
            f"not in the lake, {r['not_indexed']:,} not indexed when it stopped")
    print(f"through the chain: lake {r['lake_events_per_s']:,} events/s ({r['lake_ratio']:.2f}x), "
          f"index {r['index_events_per_s']:,} events/s ({r['ratio']:.2f}x; goal "
          f">= {GOAL_RATIO}x); {left}")
    print(f"freshness NameNode commit -> lake p50 {lake['p50']:.0f} ms, p99 {lake['p99']:.0f} ms; "
          f"-> index p50 {index['p50']:.0f} ms, p99 {index['p99']:.0f} ms (goal p99 <= "
          f"{GOAL_P99_MS} ms)")
    print("stages p50/p99 ms: " + "; ".join(
        f"{name} {s['p50']:.0f}/{s['p99']:.0f}" for name, s in r["stages_ms"].items())
          + " (of it " + ", ".join(f"{name} {s['p50']:.0f}/{s['p99']:.0f}"
                                   for name, s in r["ready_to_index_ms"].items()) + ")")
    late = r["over_goal"]
    if late["events"]:
        print(f"indexed over the goal: {late['events']:,} events in {late['seconds']:,} seconds "
              "of the drive (the most: " + ", ".join(
                  f"{n:,} at {s} s" for s, n in late["worst_seconds"])
              + "); their stages p50 ms: " + "; ".join(
                  f"{k} {v:.0f}" for k, v in late["stages_p50_ms"].items()))
    print("NameNode -> sent p50/p99 ms by quarter of the drive: " + ", ".join(
        f"{q['p50']:.0f}/{q['p99']:.0f}" for q in r["namenode_to_sent_by_quarter_ms"])
          + "; the NameNode's inotify calls by quarter: " + ", ".join(
        f"{q['calls']:,} of {q['ms_per_call']:.0f} ms" for q in r["inotify_rpcs_by_quarter"]))
    saves = r["position_saves"]
    print(f"index position saves: {saves['count']:,}, {saves['events_apart_mean']:,} events "
          f"apart on average, p50 {saves['ms_apart_p50']:.0f} ms apart")
    cpu = r["cpu_s_during_the_drive"]
    parts = {k: v for k, v in cpu.items() if k not in ("wall_s", "cores")}
    each = [v for k, v in parts.items() if k.startswith("consumer ")]
    shown = {k: v for k, v in parts.items() if not k.startswith("consumer ")}
    print(f"CPU during the drive ({cpu['wall_s']:.0f} s, {cpu['cores']} cores = "
          f"{cpu['wall_s'] * cpu['cores']:.0f} core-s): "
          + ", ".join(f"{CPU_PARTS.get(k, k)} {v / cpu['wall_s']:.0%}" for k, v in shown.items())
          + f", consumers {sum(each) / cpu['wall_s']:.0%} (the busiest "
          f"{max(each) / cpu['wall_s']:.0%}) of a core; all {sum(parts.values()) / cpu['wall_s']:.0%}")
    c = r["consumer"]
    by_service: Counter[str] = Counter()
    for operation, seconds in c["call_s"].items():
        by_service[operation.split(".")[0]] += seconds
    a, sent = r["apply"], r["continue_requests_sent"]
    by_service["sqs"] -= a["receive_s"]  # the apply queue's long polls wait, not work
    print(f"event queue consumers: {c['invocations']:,} invocations, {c['records']:,} records, "
          f"{c['failures']} failed, {c['dynamodb_calls_per_event']:.2f} DynamoDB calls/event "
          f"(both queues); {c['consumer_s']:.0f} s polling, of it in calls (summed over "
          f"consumers of both queues and calls in flight, the apply queue's long polls left "
          f"out): "
          + ", ".join(f"{k} {v:.0f} s" for k, v in by_service.most_common())
          + f"; SQS ReceiveMessage {c['receive_ms']:.0f} ms a call")
    print(f"apply queue consumer: {a['invocations']:,} invocations of {a['requests_taken']:,} "
          f"continue requests ({a['failures']} failed), p50/p99 "
          f"{a['invocation_ms']['p50']:.0f}/{a['invocation_ms']['p99']:.0f} ms each; continue "
          f"requests sent: {sent['events']:,} by event invocations, {sent['apply']:,} by apply "
          f"invocations out of time")
    v = r["verify"]
    if v is None:
        print("verify: not run (the index had not caught up with the NameNode)")
    else:
        print(f"verify: {v['line'] or v['output']} (exit {v['exit']})")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(r, indent=1) + "\n")
    print(f"wrote {args.out}")
    # A chain too slow to catch up is a figure (the ratio says how far behind), not a failure;
    # one that caught up must have every event in the lake and the index, and 0 drift.
    if v is None:
        return 0 if r["index_events_per_s"] > 0 else 1
    return 0 if (r["lost"] == 0 and r["not_indexed"] == 0 and v["differ"] == 0
                 and v["exit"] == 0) else 1


if __name__ == "__main__":
    raise SystemExit(main())
