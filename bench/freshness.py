"""Freshness: how long from an HDFS edit to its event in a lake object, at a fixed offered load.

    python -m bench.freshness [--rates 200,1000] [--seconds 20] [--out bench-out/freshness.json]

The chain, all real parts on one machine: moto server (tests.kit.local_chain.local_aws), the CDK
`local` environment deployed into moto's CloudFormation (Chain.deploy), the agent's live
pipeline (onprem_agent.pipeline.Pipeline + SqsSender, `[packing] linger_ms` = 200 ms, the live
linger, not replay's), and the consumer Lambda handler behind tests.kit.sqs_lambda: on the event
queue in `--consumers` processes (default 1, batch size 10; more pollers on 2 cores only slow
moto down, and an invocation slower than the runner's 5 s visibility timeout is then
redelivered to another poller: duplicates in raw/, as SQS would deliver them), and on the apply
queue in one process of its own beside them, as Lambda runs the function's second mapping
concurrently: its invocations apply the index's ranges, so the event invocations timed here
only store and send a continue request.

The source is paced in-process: every 10 ms it hands the pipeline the TxBatches due by then
(CREATE, CLOSE, RENAME, UNLINK over top-level directories: one message group each), each
event stamped with the current wall clock as its NameNode timestamp, as HDFS stamps an edit
when it is logged.

Phases: the freshness phases (default 200 and 1000 events/s, log mode all, two message groups)
keep every path outside the deployed function's INDEX_PREFIXES: through moto,
each DynamoDB call takes ~10-40 ms and grows with the table, which caps the local consumer near
200 events/s at a 20% index share and would make the freshness figure moto's. A short index
phase (50 events/s over five groups, 20% of the events under the first prefix) then counts the
index's DynamoDB calls per indexed event, and a short summary phase (log mode summary) measures
that mode's log bytes; their latencies are printed but are not the freshness figures.

What is measured, per event: the consumer process notes the wall clock when the handler
returned success for a record (the lake object is written by then: the handler puts it before
it returns), decodes the record's body and takes `done - event.timestamp` (edit -> lake) and
`SentTimestamp - event.timestamp` (edit -> accepted by SQS: packing linger + send). Same
machine, same clock. p50/p99 over all events of a load phase.

Baseline: the theoretical floor of the hdfs-inotify-example design is the same path minus the
packing linger (one event per message goes out at once). Measuring that design through moto at
these loads would measure moto instead (1000 events/s as single-event messages is 100
SendMessageBatch calls/s and 1000 PutObjects/s; moto carries ~25-30 batch calls/s), so the
baseline reported is the measured sent -> lake part alone: what a zero-linger design would see
on this same chain, at best. Our design's cost over it is the edit -> sent part.

The consumer's log (its stdout: the function's CloudWatch stream), its S3 PutObject and DynamoDB
write counts (botocore hooks), and the raw lake bytes give the cost model measured bytes and
requests per event. The index is fed in txid order (lambdas/ingest/sequencer.py): the agent's
pipeline sends its manifests (`<cluster>:#manifest`), and with the index enabled the consumer
writes beside the entries an arrival per event message, each manifest, and the position and its
lease per invocation of the apply queue (each applies ranges), whatever share of the events is
indexed. So DynamoDB calls are counted by what they touch (bench.ingest_throughput.ddb_purpose):
"index writes per indexed event" counts the entries' writes alone, and the sequencer's calls are
reported per message and per apply invocation. The index phase must add entries to the index
(counted in the table before and after), or the run fails. Writes bench-out/freshness.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench import OUT_DIR

REPO = Path(__file__).resolve().parent.parent
OUT = OUT_DIR / "freshness.json"
# Top-level directories outside the index prefixes of the deployed function are picked from
# these (the `local` environment's index_prefixes in cdk.json change as the demo evolves).
CANDIDATE_DIRS = ("/data/ads", "/data/logs", "/tmp/staging", "/apps/hive", "/data/raw",
                  "/warehouse/sales")


def directories(index_prefixes: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(index phase: one indexed directory + four others = 20% indexed; freshness phases: two
    directories, none indexed). The local consumer is bound by messages per second (one
    PutObject to moto each, ~20 ms), and with a 200 ms linger every message group seals ~5
    messages/s at any load: two groups stay within what one local poller carries."""
    from lambdas.ingest.settings import is_under

    prefixes = tuple(p for p in index_prefixes.split(",") if p)
    plain = tuple(d for d in CANDIDATE_DIRS if not is_under(d, prefixes)
                  and not any(is_under(p, (d,)) for p in prefixes))
    if len(plain) < 4 or not prefixes:
        raise SystemExit(f"bench.freshness: index prefixes {index_prefixes!r} leave too few "
                         f"unindexed directories among {CANDIDATE_DIRS}")
    return (prefixes[0].rstrip("/") or "/index", *plain[:4]), plain[:2]
TICK_S = 0.01


# --- the paced source ----------------------------------------------------------------------------

def paced_source(rate: float, seconds: float, cluster: str, first_txid: int,
                 dirs: tuple[str, ...]) -> Iterator[Any]:
    """TxBatches at `rate` events/s for `seconds`, one event per txid, timestamped now; the
    batches due at each tick are one chunk, as a drain of the live source is."""
    from hdfs_events.event import EventType, HdfsEvent, INodeType
    from onprem_agent.source import TxBatch

    start = time.monotonic()
    txid, sent = first_txid, 0
    total = int(rate * seconds)
    while sent < total:
        due = min(total, int((time.monotonic() - start) * rate) + 1)
        chunk = []
        while sent < due:
            now_ms = int(time.time() * 1000)
            path = f"{dirs[sent % len(dirs)]}/d{sent // 1000 % 100}/part-{sent:08d}"
            kind = sent // len(dirs) % 4
            if kind == 0:
                event = HdfsEvent(cluster, txid, 0, EventType.CREATE, path, timestamp=now_ms,
                                  inode_type=INodeType.FILE, ctime=now_ms, replication=3,
                                  owner="etl", group="hadoop", perms="0644", overwrite=False,
                                  block_size=134_217_728, erasure_coded=False)
            elif kind == 1:
                event = HdfsEvent(cluster, txid, 0, EventType.CLOSE, path, size=sent * 1000,
                                  timestamp=now_ms)
            elif kind == 2:
                event = HdfsEvent(cluster, txid, 0, EventType.RENAME, path,
                                  dst_path=path + ".done", timestamp=now_ms)
            else:
                event = HdfsEvent(cluster, txid, 0, EventType.UNLINK, path + ".done",
                                  timestamp=now_ms)
            chunk.append(TxBatch(txid=txid, events=(event,)))
            txid += 1
            sent += 1
        yield chunk
        time.sleep(TICK_S)


class _MemoryCheckpoint:
    def load(self) -> int | None:
        return None

    def save(self, txid: int) -> None:
        return None


def run_agent(queue_url: str, cluster: str, rate: float, seconds: float, first_txid: int,
              dirs: tuple[str, ...]) -> dict[str, Any]:
    from bench.ship import agent_config
    from onprem_agent.config import parse_config
    from onprem_agent.pipeline import Pipeline
    from onprem_agent.sender import SqsSender

    config = parse_config({"cluster": cluster, "sqs": {"queue_url": queue_url},
                           "checkpoint": {"path": "unused.json"}}, Path("freshness.toml"))
    assert config.packing.linger_ms == agent_config().packing.linger_ms  # the live default
    sender = SqsSender.from_config(config)
    pipeline = Pipeline(config, sender=sender, checkpoint=_MemoryCheckpoint())
    cpu0, wall0 = time.process_time(), time.perf_counter()
    result = pipeline.run(paced_source(rate, seconds, cluster, first_txid, dirs))
    return {"events": result.events_sent, "messages": result.messages,
            "manifests": result.manifests,
            "send_message_batch_calls": sender.stats.batches,
            "billed_requests": sender.stats.billed_requests,
            "wall_s": round(time.perf_counter() - wall0, 2),
            "agent_cpu_s": round(time.process_time() - cpu0, 2),
            "linger_ms": config.packing.linger_ms}


# --- the consumer, in its own process ------------------------------------------------------------

def consumer_child(queue: str, queue_url: str, stop_file: Path, stats_file: Path,
                   ready_file: Path) -> int:
    """The real handler behind LocalSqsLambdaRunner on one of the function's queues ("events"
    or "apply"); per event edit->sent and edit->lake."""
    import boto3

    from bench.ingest_throughput import ddb_purpose
    from hdfs_events.envelope import decode_message
    from hdfs_events.names import KIND_ATTRIBUTE
    from tests.kit.sqs_lambda import LocalSqsLambdaRunner, load_handler

    calls: Counter[str] = Counter()
    ddb_calls: Counter[str] = Counter()

    def count(event_name: str, **_: Any) -> None:
        calls[event_name.rsplit(".", 1)[1]] += 1  # before-call.<service>.<Operation>

    def count_ddb(event_name: str, params: dict[str, Any], **_: Any) -> None:
        ddb_calls[f"{ddb_purpose(params)}.{event_name.rsplit('.', 1)[1]}"] += 1

    # The handler's clients come from boto3's default session: hook it before they exist.
    boto3.setup_default_session()
    boto3.DEFAULT_SESSION.events.register("before-call.s3", count)
    boto3.DEFAULT_SESSION.events.register("before-call.dynamodb", count)
    boto3.DEFAULT_SESSION.events.register("before-parameter-build.dynamodb", count_ddb)
    boto3.DEFAULT_SESSION.events.register("before-call.sqs.SendMessage", count)
    real = load_handler("lambdas.ingest.handler:handler")
    edit_to_lake: list[int] = []
    edit_to_sent: list[int] = []
    durations: list[float] = []
    events_total = manifests = continue_requests = 0

    def timed(event: dict[str, Any], context: Any) -> Any:
        nonlocal events_total, manifests, continue_requests
        start = time.perf_counter()
        response = real(event, context)
        done = int(time.time() * 1000)
        durations.append(time.perf_counter() - start)
        failed = {f["itemIdentifier"] for f in (response or {}).get("batchItemFailures", [])}
        for record in event["Records"]:
            if record["messageId"] in failed:
                continue
            kind = record["messageAttributes"].get(KIND_ATTRIBUTE, {}).get("stringValue")
            if kind == "manifest":
                manifests += 1  # the agent's statement of a txid range: no events in it
                continue
            if kind is not None:  # a continue request (the apply queue's): no events either
                continue_requests += 1
                continue
            sent = int(record["attributes"]["SentTimestamp"])
            for e in decode_message(record["body"], record["messageAttributes"]):
                events_total += 1
                if e.timestamp is not None:
                    edit_to_lake.append(done - e.timestamp)
                    edit_to_sent.append(sent - e.timestamp)
        return response

    runner = LocalSqsLambdaRunner(queue_url, timed)
    ready_file.touch()
    idle = 0
    while True:
        idle = idle + 1 if runner.poll_once() == 0 else 0
        if stop_file.exists() and idle >= 2:
            break
    stats_file.write_text(json.dumps({
        "queue": queue, "invocations": runner.invocations, "records": runner.records,
        "failures": runner.failures, "batch_errors": runner.batch_errors,
        "events": events_total, "manifests": manifests, "continue_requests": continue_requests,
        "calls": dict(calls), "ddb_calls": dict(ddb_calls), "invocation_s": durations,
        "edit_to_lake_ms": edit_to_lake, "edit_to_sent_ms": edit_to_sent}))
    return 0


# --- one load phase --------------------------------------------------------------------------------

def await_ready(proc: subprocess.Popen, ready: Path, log: Path, timeout_s: float = 300) -> None:
    """Until the consumer has imported the handler and reached the queue (it touches `ready`)."""
    deadline = time.monotonic() + timeout_s
    while not ready.exists():
        if proc.poll() is not None:
            raise RuntimeError(f"consumer exited {proc.returncode} before polling: "
                               f"{log.read_text()[-2000:]}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"consumer not polling after {timeout_s:.0f} s: "
                               f"{log.read_text()[-2000:]}")
        time.sleep(0.05)


def pct(values: list[int] | list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, int(q * len(ordered)))])


def lake_objects(s3: Any, bucket: str, prefix: str = "raw/") -> tuple[int, int]:
    count = size = 0
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for obj in page.get("Contents", []):
            count += 1
            size += obj["Size"]
    return count, size


def index_entries(chain: Any) -> int:
    """The cluster's namespace entries in the deployed index table."""
    from bench.ingest_throughput import index_entries as count
    from hdfs_events import names
    return count(chain.client("dynamodb"), chain.lambda_env[names.ENV_INDEX_TABLE],
                 chain.cluster)


DDB_WRITES = ("PutItem", "UpdateItem", "BatchWriteItem", "DeleteItem", "TransactWriteItems")
SEQUENCER = ("arrival", "manifest", "position")


def dynamodb_split(by_purpose: dict[str, int], *, indexed: int, messages: int,
                   manifests: int, invocations: int) -> dict[str, Any]:
    """The consumer's DynamoDB calls ("<purpose>.<Operation>" counts) split into the index's
    entries, whose writes follow the indexed events, and the sequencer's items, which follow
    the messages (an arrival each), the manifests and the apply queue's invocations (each
    applies ranges)."""
    def of(purposes: tuple[str, ...], writes: bool) -> int:
        return sum(n for key, n in by_purpose.items()
                   if key.split(".", 1)[0] in purposes
                   and (key.split(".", 1)[1] in DDB_WRITES) == writes)

    index_writes, index_reads = of(("index",), True), of(("index",), False)
    seq_writes, seq_reads = of(SEQUENCER, True), of(SEQUENCER, False)
    return {
        "dynamodb_by_purpose": dict(sorted(by_purpose.items())),
        "dynamodb_index_writes": index_writes, "dynamodb_index_reads": index_reads,
        "dynamodb_sequencer_writes": seq_writes, "dynamodb_sequencer_reads": seq_reads,
        "dynamodb_writes_per_indexed_event": index_writes / max(1, indexed),
        "dynamodb_reads_per_indexed_event": index_reads / max(1, indexed),
        "sequencer_arrival_writes_per_message": by_purpose.get("arrival.PutItem", 0)
        / max(1, messages),
        "sequencer_manifest_writes_per_manifest": by_purpose.get("manifest.PutItem", 0)
        / max(1, manifests),
        "sequencer_position_writes_per_invocation": of(("position",), True)
        / max(1, invocations),
        "sequencer_reads_per_invocation": seq_reads / max(1, invocations),
    }


def phase(chain: Any, rate: float, seconds: float, log_mode: str, index: bool,
          first_txid: int, work: Path, consumers: int) -> dict[str, Any]:
    from hdfs_events import names

    s3 = chain.client("s3")
    objects0, bytes0 = lake_objects(s3, chain.bucket)
    entries0 = index_entries(chain)
    tag = f"{int(rate)}-{log_mode}-{'index' if index else 'plain'}"
    indexed_dirs, plain_dirs = directories(chain.lambda_env.get(names.ENV_INDEX_PREFIXES, ""))
    dirs = indexed_dirs if index else plain_dirs
    env = {**os.environ, **chain.lambda_env, names.ENV_LOG_MODE: log_mode}
    # The event queue's consumers, and the apply queue's one (the function's two mappings).
    mappings = [*(("events", chain.queue_url, f"{tag}-{i}") for i in range(consumers)),
                ("apply", chain.outputs["ApplyQueueUrl"], f"{tag}-apply")]
    procs: list[tuple[str, subprocess.Popen, Path, Path]] = []
    try:
        for queue, url, name in mappings:
            stats, log = work / f"stats-{name}.json", work / f"ingest-{name}.log"
            with open(log, "w", encoding="utf-8") as out:
                procs.append((queue, subprocess.Popen(
                    [sys.executable, "-m", "bench.freshness", "--consumer", url,
                     "--queue", queue, "--stop-file", str(work / f"stop-{tag}-{queue}"),
                     "--stats", str(stats), "--ready-file", str(stats.with_suffix(".ready"))],
                    stdout=out, stderr=subprocess.STDOUT, cwd=REPO, env=env), stats, log))
        for _, proc, stats, log in procs:  # the handler's imports, before the clock starts
            await_ready(proc, stats.with_suffix(".ready"), log)
        agent = run_agent(chain.queue_url, chain.cluster, rate, seconds, first_txid, dirs)
        # The event queue's consumers first: the last continue requests come from them.
        for queue in ("events", "apply"):
            (work / f"stop-{tag}-{queue}").touch()
            for _, proc, _, log in (p for p in procs if p[0] == queue):
                if proc.wait(timeout=300) != 0:
                    raise RuntimeError(f"consumer exited {proc.returncode}: "
                                       f"{log.read_text()[-2000:]}")
    finally:
        for _, proc, _, _ in procs:
            if proc.poll() is None:
                proc.kill()
    got: dict[str, Any] = {"calls": Counter(), "ddb_calls": Counter()}
    applying: dict[str, Any] = {}  # the apply queue's consumer's own figures
    log_lines: list[str] = []
    for queue, _, stats, log in procs:
        one = json.loads(stats.read_text())
        if queue == "apply":
            applying = one
        for key, value in one.items():
            if key in ("calls", "ddb_calls"):
                got[key].update(value)
            elif key == "invocation_s" and queue == "apply":
                continue  # the event invocations' time alone: the freshness path
            elif key != "queue":
                got[key] = got.get(key, 0 if isinstance(value, int) else []) + value
        # The function's one log stream: both mappings' invocations write it.
        log_lines += log.read_text(encoding="utf-8", errors="replace").splitlines()
    objects1, bytes1 = lake_objects(s3, chain.bucket)
    entries1 = index_entries(chain)
    json_lines = [line for line in log_lines if line.startswith("{")]
    lake, to_sent = got["edit_to_lake_ms"], got["edit_to_sent_ms"]
    sent_to_lake = [a - b for a, b in zip(lake, to_sent, strict=True)]
    events = got["events"]
    event_invocations = got["invocations"] - applying["invocations"]
    event_messages = got["records"] - got["manifests"] - got["continue_requests"]
    indexed = sum(1 for i in range(agent["events"]) if index and i % len(dirs) == 0)
    ddb_writes = sum(n for op, n in got["calls"].items()
                     if op in ("PutItem", "UpdateItem", "BatchWriteItem", "DeleteItem",
                               "TransactWriteItems"))
    return {
        "rate_events_per_s": rate, "seconds": seconds, "log_mode": log_mode,
        "purpose": "index" if index else ("log bytes" if log_mode != "all" else "freshness"),
        "index_share": indexed / max(1, agent["events"]), "directories": list(dirs),
        "agent": agent, "consumer_invocations": event_invocations,
        "apply_invocations": applying["invocations"],
        "consumer_failures": got["failures"], "events_in_lake": events,
        "lost": agent["events"] - events,
        "edit_to_lake_ms": {"p50": pct(lake, 0.5), "p99": pct(lake, 0.99),
                            "max": max(lake, default=float("nan"))},
        "edit_to_sent_ms": {"p50": pct(to_sent, 0.5), "p99": pct(to_sent, 0.99)},
        "sent_to_lake_ms": {"p50": pct(sent_to_lake, 0.5), "p99": pct(sent_to_lake, 0.99)},
        "invocation_ms": {"p50": 1000 * statistics.median(got["invocation_s"]),
                          "mean": 1000 * statistics.fmean(got["invocation_s"])},
        "events_per_invocation": events / max(1, event_invocations),
        "events_per_message": events / max(1, agent["messages"]),
        "consumers": consumers, "aws_calls": dict(got["calls"]),
        "s3_put_objects": got["calls"].get("PutObject", 0),
        "raw_objects": objects1 - objects0, "raw_bytes": bytes1 - bytes0,
        "raw_bytes_per_event": (bytes1 - bytes0) / max(1, events),
        # Every DynamoDB write of the phase (what the table bills); per indexed event, the
        # index's own writes alone (the sequencer's follow messages, not indexed events).
        "indexed_events": indexed, "dynamodb_writes": ddb_writes,
        **dynamodb_split(dict(got["ddb_calls"]), indexed=indexed,
                         messages=event_messages, manifests=got["manifests"],
                         invocations=applying["invocations"]),
        "index_entries_added": entries1 - entries0,
        "log_lines": len(json_lines), "log_bytes": sum(len(x.encode()) + 1 for x in json_lines),
        "log_bytes_per_event": sum(len(x.encode()) + 1 for x in json_lines) / max(1, events),
        "log_bytes_per_message": (sum(len(x.encode()) + 1 for x in json_lines)
                                  / max(1, event_messages)),
        "manifests_received": got["manifests"], "continue_requests": got["continue_requests"],
        "continue_requests_sent": got["calls"].get("SendMessage", 0),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.freshness",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="200,1000", help="events/s, comma-separated")
    parser.add_argument("--seconds", type=float, default=20.0, help="per rate")
    parser.add_argument("--index-seconds", type=float, default=6.0,
                        help="phase at 100 events/s, 20%% indexed, for DynamoDB counts (0: skip)")
    parser.add_argument("--summary-seconds", type=float, default=3.0,
                        help="phase in log mode `summary` for its log bytes (0: skip)")
    parser.add_argument("--consumers", type=int, default=1,
                        help="consumer processes polling the queue (default %(default)s)")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--consumer", metavar="QUEUE_URL", help=argparse.SUPPRESS)
    parser.add_argument("--queue", choices=("events", "apply"), help=argparse.SUPPRESS)
    parser.add_argument("--stop-file", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--stats", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--ready-file", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.consumer:
        return consumer_child(args.queue, args.consumer, args.stop_file, args.stats,
                              args.ready_file)

    from tests.kit.local_chain import Chain, local_aws

    rates = [float(r) for r in args.rates.split(",") if r]
    plan = [(r, args.seconds, "all", False) for r in rates]
    if args.index_seconds > 0:
        plan.append((50.0, args.index_seconds, "all", True))
    if args.summary_seconds > 0:
        plan.append((rates[0], args.summary_seconds, "summary", False))
    phases = []
    with tempfile.TemporaryDirectory(prefix="freshness-") as tmp, local_aws() as endpoint:
        work = Path(tmp)
        t = time.perf_counter()
        chain = Chain.deploy(endpoint, work)
        deploy_s = time.perf_counter() - t
        txid = 1
        for rate, seconds, mode, index in plan:
            result = phase(chain, rate, seconds, mode, index, txid, work, args.consumers)
            txid += result["agent"]["events"] + 1
            phases.append(result)
    load = os.getloadavg()[0]
    print(f"freshness through moto server + local Lambda runner (deploy {deploy_s:.0f} s), "
          f"load average {load:.1f}")
    print(f"{'phase':>10} {'offered ev/s':>12} {'log':>8} {'events':>7} {'lost':>5} {'ev/msg':>7} "
          f"{'edit->lake p50':>15} {'p99':>7} {'edit->sent p50':>15} {'p99':>7} "
          f"{'sent->lake p50':>15} {'p99':>7}")
    unfed = [p for p in phases if p["purpose"] == "index" and p["index_entries_added"] <= 0]
    for p in phases:
        print(f"{p['purpose']:>10} {p['rate_events_per_s']:>12.0f} {p['log_mode']:>8} "
              f"{p['events_in_lake']:>7} "
              f"{p['lost']:>5} {p['events_per_message']:>7.1f} "
              f"{p['edit_to_lake_ms']['p50']:>13.0f}ms {p['edit_to_lake_ms']['p99']:>5.0f}ms "
              f"{p['edit_to_sent_ms']['p50']:>13.0f}ms {p['edit_to_sent_ms']['p99']:>5.0f}ms "
              f"{p['sent_to_lake_ms']['p50']:>13.0f}ms {p['sent_to_lake_ms']['p99']:>5.0f}ms")
    for p in phases:
        if p["purpose"] != "index":
            continue
        print(f"index phase: {p['indexed_events']} indexed events of {p['events_in_lake']}, "
              f"{p['manifests_received']} manifests, {p['index_entries_added']} entries added; "
              f"DynamoDB: index writes/indexed event "
              f"{p['dynamodb_writes_per_indexed_event']:.2f}, reads "
              f"{p['dynamodb_reads_per_indexed_event']:.2f}; sequencer: arrival writes/message "
              f"{p['sequencer_arrival_writes_per_message']:.2f}, position writes/apply "
              f"invocation {p['sequencer_position_writes_per_invocation']:.2f}, reads/apply "
              f"invocation {p['sequencer_reads_per_invocation']:.2f}; "
              f"{p['continue_requests_sent']} continue requests sent, "
              f"{p['apply_invocations']} apply invocations took {p['continue_requests']}")
    for p in unfed:
        print(f"FAILED: the index phase added no entry to the index (manifests received: "
              f"{p['manifests_received']}, calls {p['dynamodb_by_purpose']})")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"deploy_s": deploy_s, "load_average": load,
                                    "phases": phases},
                                   indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0 if all(p["lost"] == 0 for p in phases) and not unfed else 1


if __name__ == "__main__":
    raise SystemExit(main())
