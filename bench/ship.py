"""Shipping cost: the agent's packing design against the hdfs-inotify-example design, same run.

    python -m bench.ship [--ops 300000] [--rounds 3] [--moto-events 20000] [--out bench-out]

Measures, on a generated edit log (tests/kit/workload.py):
- the agent alone (no network): events/s of translate (XML parse + op -> events), of the
  pipeline from translated batches (filter + pack + gzip + envelope, NoopSender; in chunks of
  256 batches, as the replay hands them, onprem_agent/source.py), and of both
  together, in CPU seconds of this process (one core; the GIL keeps it on one), the pipeline
  and the baseline as the best of `--rounds` rounds, each round running both back to back;
- billed SQS requests per 1,000 events (each 64 KiB chunk of a SendMessageBatch is one
  request) for the agent's messages (its manifests included, one request each) and for the
  baseline: one event per message as JSON,
  10 messages per SendMessageBatch, the bare txid as deduplication id;
- both designs against a local moto server over HTTP (events/s, SendMessageBatch calls),
  with a consumer draining the queue as it fills (moto slows down on a full FIFO queue).

Prints a table and writes bench-out/ship.json.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from bench import OUT_DIR
from hdfs_events.envelope import SQS_BILLING_CHUNK_BYTES
from onprem_agent.config import AgentConfig, parse_config
from onprem_agent.editlog import read_ops
from onprem_agent.pipeline import Pipeline
from onprem_agent.sender import NoopSender, SqsSender
from onprem_agent.source import TxBatch, chunked
from onprem_agent.translate import translate_batches
from tests.kit.workload import write_edit_log

CLUSTER = "bench"
# Agent variants measured side by side (defaults: prefix:2, 64 KiB, gzip level 3).
VARIANTS: dict[str, dict[str, Any]] = {
    "agent replay (2 s linger), gzip 3": {},
    "agent replay (2 s linger), gzip 6": {"compression_level": 6},
    "agent replay (2 s linger), gzip 1": {"compression_level": 1},
    "agent live-like (linger 200 ms), gzip 3": {"replay": False},
}


class _MemoryCheckpoint:
    def __init__(self) -> None:
        self.txid: int | None = None

    def load(self) -> int | None:
        return None

    def save(self, txid: int) -> None:
        self.txid = txid


def agent_config(queue_url: str = "https://sqs.invalid/000000000000/bench.fifo",
                 **packing: object) -> AgentConfig:
    # The example config's defaults unless told: prefix:2 groups, 64 KiB, 200 ms linger, gzip.
    return parse_config({
        "cluster": CLUSTER, "sqs": {"queue_url": queue_url},
        "checkpoint": {"path": "unused.json"},
        "filter": {"ignore_patterns": [r"\._COPYING_$"]},
        "packing": packing,
    }, Path("bench.toml"))


def cpu(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.process_time()
    result = fn()
    return result, time.process_time() - start


def translate(edits: Path) -> list[TxBatch]:
    return list(translate_batches(read_ops(edits), CLUSTER, source=str(edits)))


def agent_noop(batches: Iterable[TxBatch], *, replay: bool = True,
               **packing: object) -> dict[str, Any]:
    """replay=True: `replay_linger_ms` (2 s), as `replay` does; False: the 200 ms linger of
    live shipping, while the source runs flat out."""
    sender = NoopSender()
    config = agent_config(**packing)
    pipeline = Pipeline(config, sender=sender, checkpoint=_MemoryCheckpoint(),
                        linger_ms=config.packing.replay_linger_ms if replay else None)
    result = pipeline.run(chunked(batches))  # as the replay hands them
    stats = pipeline.packer.stats
    return {"events": result.events_sent, "messages": result.messages,
            "manifests": result.manifests,
            "billed_requests": _billed_in_batches(pipeline) + result.manifests,
            "bytes": stats.bytes, "resplits": stats.resplits}


def _billed_in_batches(pipeline: Pipeline) -> int:
    # Messages of ~64 KiB go 10 to a batch; a batch of n messages of s bytes costs ceil(n*s/64K)
    # requests, which for full messages is one per message: the per-message count is exact.
    # A manifest (a few KiB at most) is counted as one more request on top: an upper bound,
    # since it often shares a batch's last chunk.
    return pipeline.packer.stats.billed_requests


def baseline_entries(batches: Iterable[TxBatch]) -> list[list[dict[str, Any]]]:
    """hdfs-inotify-example: every event its own JSON message, 10 per batch, txid as dedup id
    (so the events of one OP_CONCAT_DELETE collide), the path as group id."""
    out: list[list[dict[str, Any]]] = []
    batch: list[dict[str, Any]] = []
    for tx in batches:
        for event in tx.events:
            batch.append({"Id": str(len(batch)), "MessageBody": event.to_json(),
                          "MessageGroupId": event.path[:128] or "/",
                          "MessageDeduplicationId": str(event.txid)})
            if len(batch) == 10:
                out.append(batch)
                batch = []
    if batch:
        out.append(batch)
    return out


def billed(entries: list[dict[str, Any]]) -> int:
    size = sum(len(e["MessageBody"].encode()) for e in entries)
    return -(-size // SQS_BILLING_CHUNK_BYTES)


# --- against moto server ----------------------------------------------------------------------


def start_moto() -> tuple[Any, str]:
    from moto.server import ThreadedMotoServer

    from tests.kit import moto_fixes

    moto_fixes.apply()  # the drain deletes while the agent sends (tests/kit/moto_fast_sqs.py)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    # Only ever the local moto server, with fake credentials.
    os.environ.update({"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "bench",
                       "AWS_SECRET_ACCESS_KEY": "bench", "AWS_DEFAULT_REGION": "eu-west-1"})
    os.environ.pop("AWS_PROFILE", None)
    os.environ.pop("AWS_SESSION_TOKEN", None)
    return server, endpoint


class Drain:
    def __init__(self, client: Any, url: str) -> None:
        self.client, self.url, self.messages = client, url, 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        while not self.stop.is_set():
            got = self.client.receive_message(QueueUrl=self.url, MaxNumberOfMessages=10,
                                              WaitTimeSeconds=1).get("Messages", [])
            if got:
                self.messages += len(got)
                self.client.delete_message_batch(QueueUrl=self.url, Entries=[
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]}
                    for i, m in enumerate(got)])

    def close(self) -> None:
        self.stop.set()
        self.thread.join(30)


def take_events(batches: list[TxBatch], n: int) -> list[TxBatch]:
    out, count = [], 0
    for tx in batches:
        if count >= n:
            break
        out.append(tx)
        count += len(tx.events)
    return out


def moto_runs(batches: list[TxBatch], agent_events: int, baseline_events: int
              ) -> dict[str, Any]:
    import boto3

    server, _ = start_moto()
    try:
        client = boto3.client("sqs")
        results: dict[str, Any] = {}

        url = client.create_queue(QueueName="agent.fifo",
                                  Attributes={"FifoQueue": "true"})["QueueUrl"]
        drain = Drain(boto3.client("sqs"), url)
        subset = take_events(batches, agent_events)
        sender = SqsSender.from_config(agent_config(url))
        started = time.perf_counter()
        result = Pipeline(agent_config(url), sender=sender,
                          checkpoint=_MemoryCheckpoint()).run(chunked(subset))
        took = time.perf_counter() - started
        drain.close()
        results["agent"] = {"events": result.events_sent, "seconds": round(took, 2),
                            "manifests": result.manifests,
                            "events_per_s": round(result.events_sent / took),
                            "send_message_batch_calls": sender.stats.batches,
                            "billed_requests": sender.stats.billed_requests}

        url = client.create_queue(QueueName="baseline.fifo",
                                  Attributes={"FifoQueue": "true"})["QueueUrl"]
        drain = Drain(boto3.client("sqs"), url)
        entries = baseline_entries(take_events(batches, baseline_events))
        started = time.perf_counter()
        for batch in entries:
            client.send_message_batch(QueueUrl=url, Entries=batch)  # Failed ignored, as there
        took = time.perf_counter() - started
        drain.close()
        events = sum(len(b) for b in entries)
        results["baseline"] = {"events": events, "seconds": round(took, 2),
                               "events_per_s": round(events / took),
                               "send_message_batch_calls": len(entries),
                               "billed_requests": sum(billed(b) for b in entries)}
        return results
    finally:
        server.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ship", description=__doc__.split(
        "\n")[0])
    parser.add_argument("--ops", type=int, default=300_000, help="edit-log records")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--moto-events", type=int, default=20_000,
                        help="events the agent ships to moto server (0: skip moto)")
    parser.add_argument("--moto-baseline-events", type=int, default=2_000,
                        help="events the baseline ships to moto server (one per message)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="CPU-time rounds of every contender; the best of each counts")
    parser.add_argument("--out", type=Path, default=OUT_DIR)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    edits = args.out / "ship-edits.xml"
    summary = write_edit_log(edits, ops=args.ops, seed=args.seed)

    batches, t_translate = cpu(lambda: translate(edits))
    events = sum(len(b.events) for b in batches)
    # Each round runs every contender once, back to back; each keeps its least CPU time (the
    # machine is shared: other processes only ever add to a round's time).
    best: dict[str, float] = {}
    results: dict[str, Any] = {}
    for _ in range(args.rounds):
        for name, kwargs in VARIANTS.items():
            results[name], seconds = cpu(lambda kw=kwargs: agent_noop(batches, **kw))
            best[name] = min(best.get(name, seconds), seconds)
        entries, seconds = cpu(lambda: baseline_entries(batches))
        best["baseline"] = min(best.get("baseline", seconds), seconds)
    variants: dict[str, dict[str, Any]] = {}
    for name in VARIANTS:
        result = results[name]
        variants[name] = {**result, "events_per_cpu_s": round(events / best[name]),
                          "vs_baseline": round(best["baseline"] / best[name], 2),
                          "events_per_message": round(result["events"] / result["messages"], 1),
                          "billed_per_1000_events": round(1000 * result["billed_requests"]
                                                          / result["events"], 3)}
    _, t_both = cpu(lambda: agent_noop(translate_batches(read_ops(edits), CLUSTER)))
    t_baseline = best["baseline"]
    baseline_billed = sum(billed(b) for b in entries)

    report: dict[str, Any] = {
        "workload": {"ops": summary.ops, "events": events, "seed": args.seed,
                     "rounds": args.rounds},
        "translate_events_per_cpu_s": round(events / t_translate),
        "translate_and_replay_pipeline_events_per_cpu_s": round(events / t_both),
        "agent": variants,
        "baseline": {"events_per_cpu_s": round(events / t_baseline), "messages": events,
                     "events_per_message": 1, "batches": len(entries),
                     "billed_requests": baseline_billed,
                     "billed_per_1000_events": round(1000 * baseline_billed / events, 1)},
    }
    if args.moto_events:
        report["moto_server"] = moto_runs(batches, args.moto_events, args.moto_baseline_events)
    (args.out / "ship.json").write_text(json.dumps(report, indent=2) + "\n")
    print_table(report)
    return 0


def print_table(r: dict[str, Any]) -> None:
    w = r["workload"]
    print(f"workload: {w['ops']:,} edit-log ops -> {w['events']:,} events (seed {w['seed']})")
    print(f"translate only (XML parse + op -> events): {r['translate_events_per_cpu_s']:,} "
          f"events per CPU second")
    print(f"translate + replay pipeline, end to end:    "
          f"{r['translate_and_replay_pipeline_events_per_cpu_s']:,} events per CPU second")
    print()
    print(f"{'pipeline from translated batches':<44}{'ev/CPU s':>10}{'x base':>8}"
          f"{'messages':>10}{'manifests':>10}{'ev/msg':>8}{'billed':>8}{'per 1k ev':>10}")
    rows = [(name, v) for name, v in r["agent"].items()]
    rows.append(("hdfs-inotify-example (1 event/msg, 10/batch)", r["baseline"]))
    for name, v in rows:
        print(f"{name:<44}{v['events_per_cpu_s']:>10,}{v.get('vs_baseline', 1.0):>8}"
              f"{v['messages']:>10,}{v.get('manifests', 0):>10,}"
              f"{v['events_per_message']:>8}{v['billed_requests']:>8,}"
              f"{v['billed_per_1000_events']:>10}")
    print(f"(best of {w['rounds']} CPU-time rounds each; x base: the baseline's best CPU time "
          "over the row's)")
    moto = r.get("moto_server")
    if moto:
        print()
        print(f"{'moto server over HTTP':<44}{'events':>10}{'seconds':>9}{'events/s':>10}"
              f"{'batch calls':>13}")
        for name in ("agent", "baseline"):
            m = moto[name]
            print(f"{name:<44}{m['events']:>10,}{m['seconds']:>9}{m['events_per_s']:>10,}"
                  f"{m['send_message_batch_calls']:>13,}")


if __name__ == "__main__":
    raise SystemExit(main())
