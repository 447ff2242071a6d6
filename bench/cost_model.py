"""The AWS bill per billion HDFS events, itemised, for our design and the hdfs-inotify-example
design (one event per SQS message, 10 per SendMessageBatch), from the benchmarks' counts.

    python -m bench.cost_model [--bench-out bench-out] [--coverage 0.2] [--log-mode all]
                               [--events-per-s-per-cluster 2000]
    python -m bench.cost_model --measure-lake   # raw gzip and Parquet bytes/event -> lake.json

Every count comes from a bench-out/*.json file written by `make bench` and is printed with the
file and key it came from; a count no bench measures is labelled ASSUMED with its reason.
Our design's apply queue (continue requests, apply invocations, their looks) is billed per
cluster-second of event flow, at an ASSUMED steady rate per cluster (--events-per-s-per-cluster).
Prices are named inputs (PRICES) from the AWS public price list for us-east-1 as of 2025, as
remembered: this machine has no network to check them; edit PRICES for another region or date.
The arithmetic is pure (`bill`), tested on hand-computed inputs in tests/unit/bench.
"""

from __future__ import annotations

import argparse
import glob
import gzip
import json
import math
import subprocess
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench import OUT_DIR

REPO = Path(__file__).resolve().parent.parent
BILLION = 1_000_000_000
SQS_CHUNK = 65_536  # SQS bills every 64 KiB of a request (send, receive) as one request
LAMBDA_BATCH = 10  # the event source mapping's batch size (stacks/ingest_function.py BATCH_SIZE)
GIB = 1024 ** 3
# One look of an apply invocation (lambdas/ingest/consumer.py, sequence_store.py): one
# `manifests` Query, ConsistentRead, of at most the small manifest ending at the position (1 RRU:
# a strongly consistent read of up to 4 KB); a look that finds a range then acquires and
# releases the position's lease, two UpdateItems of a small item (1 WRU each). An idle look
# takes no lease (IndexSequencer.ready): billing the lease for every look is an upper bound, met
# where ranges complete ten times a second or more (at the agent's 200 ms linger, a busy
# cluster's do).
LOOK_WRITES = 2
LOOK_READS = 1


@dataclass(frozen=True, slots=True)
class Prices:
    """USD. us-east-1, AWS public price list as of 2025 (from memory; no network here)."""

    region: str = "us-east-1"
    as_of: str = "AWS public price list, 2025 (remembered, not fetched: no network)"
    sqs_fifo_per_million: float = 0.50  # FIFO requests, beyond the free tier
    lambda_per_million: float = 0.20  # invocations
    lambda_gb_second_arm: float = 0.0000133334  # arm64 (the consumer is ARM_64)
    s3_put_per_thousand: float = 0.005  # S3 Standard PUT/COPY/POST/LIST
    s3_get_per_thousand: float = 0.0004
    s3_gb_month: float = 0.023  # S3 Standard, first 50 TB
    ddb_write_per_million: float = 0.625  # on-demand write request units (after Nov 2024 cut)
    ddb_read_per_million: float = 0.125  # on-demand read request units
    glue_dpu_hour: float = 0.44
    logs_ingest_gb: float = 0.50  # CloudWatch Logs standard ingestion
    metric_month: float = 0.30  # custom metric, first 10k


PRICES = Prices()


@dataclass(frozen=True, slots=True)
class Q:
    """A count with where it came from: `bench-out/x.json: key` or `ASSUMED: why`."""

    value: float
    source: str

    @property
    def assumed(self) -> bool:
        return self.source.startswith("ASSUMED")


@dataclass(frozen=True, slots=True)
class Design:
    """Per-event counts of one design (everything the bill needs)."""

    name: str
    events_per_message: Q
    send_requests_per_event: Q  # billed 64 KiB chunks of SendMessageBatch calls
    message_bytes: Q  # encoded size of one SQS message
    lambda_ms_per_event: Q  # consumer's own time per event (no AWS call in flight), the log mode's
    index_ms_per_indexed_event: Q  # index logic CPU time per event under an indexed prefix
    ddb_calls_per_indexed_event: Q  # DynamoDB calls (reads and writes) per indexed event
    puts_per_message: Q  # lake objects per message (one per message-hour)
    raw_bytes_per_event: Q  # gzip JSON lines in raw/
    parquet_bytes_per_event: Q  # curated zstd Parquet
    ddb_writes_per_indexed_event: Q
    ddb_reads_per_indexed_event: Q
    # The sequencer, whatever share is indexed (index enabled): an arrival per message, the
    # position's lease and progress per invocation, a manifest per second (negligible here).
    ddb_sequencer_writes_per_message: Q
    ddb_sequencer_reads_per_message: Q
    log_bytes_per_event: Q  # CloudWatch Logs bytes per event in the chosen log mode
    glue_rows_per_worker_s: Q
    # The apply queue (zero for a design without one): continue requests sent per invocation of
    # event messages; per cluster-second of event flow, apply invocations, their billed seconds
    # (the windows they look through) and their looks for complete ranges.
    continue_requests_per_event_invocation: Q
    apply_invocations_per_cluster_second: Q
    apply_s_per_cluster_second: Q
    looks_per_cluster_second: Q


@dataclass(frozen=True, slots=True)
class Setting:
    coverage: float = 0.2  # share of events under indexed prefixes
    lambda_memory_gb: float = 1.0  # stacks/settings.py consumer_memory_mb = 1024
    # Network waits inside the function, per call. moto's latencies are not AWS's (its
    # DynamoDB slows down as a table grows), so calls are counted and timed at these
    # ASSUMED in-region latencies; the moto-timed bill is printed beside it. `bill` prices
    # them one after another, which is an upper bound: see there how concurrency enters.
    s3_put_ms: float = 25.0
    ddb_call_ms: float = 5.0
    glue_dpu_per_worker: float = 1.0  # G.1X
    storage_months: float = 1.0  # each byte billed for one month (raw and curated)
    metrics: int = 24  # custom metrics (5 per cluster + 7 per type, two dimension sets each)
    events_per_month: float = BILLION  # to spread the monthly metric charge per event
    # ASSUMED: no bench measures a cluster's steady event rate. About what bench.chain_speed's
    # NameNode journals (1,250-1,960 events/s, docs/bench.md), one cluster. The apply queue is
    # billed per cluster-second of event flow: a billion events last 1e9 / this of them.
    events_per_s_per_cluster: float = 2_000.0


@dataclass(frozen=True, slots=True)
class Line:
    service: str
    item: str
    quantity: float
    unit: str
    usd: float


def bill(d: Design, s: Setting = Setting(), p: Prices = PRICES, events: float = BILLION
         ) -> list[Line]:
    """Itemised USD for `events` events (default one billion)."""
    messages = events / d.events_per_message.value
    sends = events * d.send_requests_per_event.value
    # A ReceiveMessage of 10 messages is billed per 64 KiB of the whole response.
    receives = messages / LAMBDA_BATCH * math.ceil(LAMBDA_BATCH * d.message_bytes.value
                                                   / SQS_CHUNK)
    deletes = messages / LAMBDA_BATCH  # one DeleteMessageBatch per invocation, small
    invocations = messages / LAMBDA_BATCH
    indexed = events * s.coverage
    # Lambda time per indexed event: the index's own time (its work in both invocations, the
    # apply queue's included) and its DynamoDB calls' waits.
    index_ms = d.index_ms_per_indexed_event.value + d.ddb_calls_per_indexed_event.value * s.ddb_call_ms
    # Lambda bills wall-clock time: the function's own time (measured with no AWS call in
    # flight) plus the time it waits on calls. Waits are priced here as calls x latency, one
    # after another, an upper bound for both designs alike: the consumer makes a batch's
    # PutObjects at once (consumer.AHEAD_WORKERS = 10 threads, one per message) and the index
    # its BatchWriteItems (index_table.WRITE_CONCURRENCY), and calls in flight together are
    # waited for once. So an invocation waits about one PutObject, not one per message (ten
    # for the baseline's ten one-event messages), and the index its round trips
    # (bench.ingest_throughput's dynamodb_waits_per_event) rather than its calls.
    lambda_s = (events * d.lambda_ms_per_event.value + indexed * index_ms
                + messages * d.puts_per_message.value * s.s3_put_ms) / 1000
    gb_s = lambda_s * s.lambda_memory_gb
    # The apply queue (hdfs_events/continue_request.py). Every invocation of event messages
    # sends a continue request per cluster it touched (billed, also when SQS drops it as a
    # duplicate); SQS FIFO queues one a cluster and window, so while events flow an apply
    # invocation takes one each cluster-second, applies, and looks again every
    # LOOK_INTERVAL_MS until the window has ended. With the index disabled (coverage 0) the
    # consumer has no sequencer and sends none.
    applying = s.coverage > 0
    cluster_s = events / s.events_per_s_per_cluster if applying else 0.0
    continues = invocations * d.continue_requests_per_event_invocation.value if applying else 0.0
    apply_invocations = cluster_s * d.apply_invocations_per_cluster_second.value
    looks = cluster_s * d.looks_per_cluster_second.value
    # An apply invocation is billed the larger of its work and the window it looks through. Its
    # work is already in `lambda_s` (index_ms: bench.ingest_throughput runs the apply queue after
    # the window has ended, so its own_ms holds no looking), so only the window's remainder is
    # added. index_ms also holds the event invocations' share of the index's time, so the work
    # is overstated and the remainder understated: the sum is still an upper bound, as above.
    apply_work_s = s.events_per_s_per_cluster * s.coverage * index_ms / 1000
    looking_gb_s = (cluster_s * max(0.0, d.apply_s_per_cluster_second.value - apply_work_s)
                    * s.lambda_memory_gb)
    puts = messages * d.puts_per_message.value
    raw_gb = events * d.raw_bytes_per_event.value / GIB
    parquet_gb = events * d.parquet_bytes_per_event.value / GIB
    sequenced = messages if s.coverage > 0 else 0.0
    writes = (indexed * d.ddb_writes_per_indexed_event.value
              + sequenced * d.ddb_sequencer_writes_per_message.value)
    reads = (indexed * d.ddb_reads_per_indexed_event.value
             + sequenced * d.ddb_sequencer_reads_per_message.value)
    dpu_hours = events / d.glue_rows_per_worker_s.value / 3600 * s.glue_dpu_per_worker
    log_gb = events * d.log_bytes_per_event.value / GIB
    metric_months = s.metrics * events / s.events_per_month
    per_m, per_k = 1e-6, 1e-3

    def sqs(what: str, requests: float) -> Line:
        return Line("SQS", what, requests, "requests", requests * per_m * p.sqs_fifo_per_million)

    return [
        sqs("SendMessageBatch (64 KiB chunks)", sends),
        sqs("ReceiveMessage (64 KiB chunks)", receives),
        sqs("DeleteMessageBatch", deletes),
        sqs("SendMessage continue requests", continues),
        # A request's body is ~60 bytes: one billed request per receive and per delete.
        sqs("ReceiveMessage apply queue", apply_invocations),
        sqs("DeleteMessageBatch apply queue", apply_invocations),
        Line("Lambda", "invocations", invocations, "requests",
             invocations * per_m * p.lambda_per_million),
        Line("Lambda", "duration", gb_s, "GB-s", gb_s * p.lambda_gb_second_arm),
        Line("Lambda", "apply invocations", apply_invocations, "requests",
             apply_invocations * per_m * p.lambda_per_million),
        Line("Lambda", "apply looking (window - index work)", looking_gb_s, "GB-s",
             looking_gb_s * p.lambda_gb_second_arm),
        Line("S3", "PutObject raw/ (one per message-hour)", puts, "requests",
             puts * per_k * p.s3_put_per_thousand),
        Line("S3", "GetObject raw/ by compaction", puts, "requests",
             puts * per_k * p.s3_get_per_thousand),
        Line("S3", f"storage raw gzip, {s.storage_months:g} month", raw_gb, "GB",
             raw_gb * s.storage_months * p.s3_gb_month),
        Line("S3", f"storage curated Parquet, {s.storage_months:g} month", parquet_gb, "GB",
             parquet_gb * s.storage_months * p.s3_gb_month),
        Line("DynamoDB", f"index writes ({s.coverage:.0%} indexed)", writes, "WRU",
             writes * per_m * p.ddb_write_per_million),
        Line("DynamoDB", f"index reads ({s.coverage:.0%} indexed)", reads, "RRU",
             reads * per_m * p.ddb_read_per_million),
        Line("DynamoDB", "apply looks' lease UpdateItems", looks * LOOK_WRITES, "WRU",
             looks * LOOK_WRITES * per_m * p.ddb_write_per_million),
        Line("DynamoDB", "apply looks' manifests Query", looks * LOOK_READS, "RRU",
             looks * LOOK_READS * per_m * p.ddb_read_per_million),
        Line("Glue", "compaction", dpu_hours, "DPU-h", dpu_hours * p.glue_dpu_hour),
        Line("CloudWatch", "Logs ingestion", log_gb, "GB", log_gb * p.logs_ingest_gb),
        Line("CloudWatch", "custom metrics", metric_months, "metric-months",
             metric_months * p.metric_month),
    ]


def total(lines: list[Line]) -> float:
    return sum(line.usd for line in lines)


# --- counts from the benches' JSON ---------------------------------------------------------------

NO_APPLIER = "hdfs-inotify-example: no index applier, no apply queue"


def _read(bench_out: Path, name: str) -> dict[str, Any]:
    path = bench_out / name
    if not path.exists():
        raise SystemExit(f"cost_model: {path} is missing: run `make bench` (or "
                         f"python -m bench.{name.removesuffix('.json')}) first")
    return json.loads(path.read_text())


def designs(bench_out: Path, log_mode: str = "all"
            ) -> tuple[Design, Design, dict[str, float]]:
    """(ours, hdfs-inotify-example, moto's measured call latencies) from the bench JSON files
    under `bench_out`."""
    from hdfs_events.continue_request import CLOCK_SKEW_MS, WINDOW_MS
    from lambdas.ingest.consumer import LOOK_INTERVAL_MS

    ship, consumer = _read(bench_out, "ship.json"), _read(bench_out, "ingest_throughput.json")
    fresh, compact = _read(bench_out, "freshness.json"), _read(bench_out, "compact.json")
    lake = _read(bench_out, "lake.json")

    live = ship["agent"]["agent live-like (linger 200 ms), gzip 3"]
    src_live = "ship.json: agent live-like (linger 200 ms)"
    by_config = {r["config"]: r for r in consumer["results"]}
    mode = "summary" if log_mode == "summary" else "all"
    off, on = by_config[f"index off, log {mode}"], by_config[f"index on, log {mode}"]

    # The function's own time: its invocations' wall-clock with no S3, DynamoDB or SQS call in
    # flight (own_ms = total - AWS wait). Not total minus the calls' durations: the consumer
    # makes its calls on several threads at once, and their durations summed exceed the time
    # it waited (they made this figure negative).
    ms_event = off["own_ms"] / off["events_per_invocation"]
    # bench.ingest_throughput indexes every event (prefix "/") when the index is on: the index's
    # own time (sequencer, index logic, the apply queue's invocation) is on minus off.
    ms_indexed = max(0.0, (on["own_ms"] - off["own_ms"]) / on["events_per_invocation"])
    # Per call: the calls' durations summed over threads, over their number.
    moto_s3_ms = off["parts_summed_ms"]["s3"] / max(1, off["s3_calls"])
    moto_ddb_ms = on["parts_summed_ms"]["dynamodb"] / max(1, on["dynamodb_calls"])
    src_c = (f"ingest_throughput.json: index off, log {mode}, own time (total - time any "
             "AWS call was in flight)")

    phases = fresh["phases"]
    all_phases = [p for p in phases if p["log_mode"] == "all"]
    messages = sum(p["agent"]["messages"] for p in phases)
    puts = sum(p["s3_put_objects"] for p in phases)
    indexed = sum(p["indexed_events"] for p in phases)
    # The index's own calls per indexed event; the sequencer's per message (every phase runs
    # with the index enabled, most with nothing under its prefixes).
    writes = sum(p["dynamodb_index_writes"] for p in phases)
    reads = sum(p["dynamodb_index_reads"] for p in phases)
    # The calls every look makes (LOOK_WRITES, LOOK_READS: the lease's UpdateItems, the manifests
    # Query) follow time, not messages: they are billed per look at the ASSUMED rate, so
    # freshness's, made at its own rates and lengths, are left out here. A look that applies a
    # range makes one more of each (the position's advance, the next range's Query), kept: one
    # per manifest stored.
    by_op = [p["dynamodb_by_purpose"] for p in phases]
    manifests = sum(b.get("manifest.PutItem", 0) for b in by_op)
    seq_writes = (sum(p["dynamodb_sequencer_writes"] for p in phases)
                  - sum(b.get("position.UpdateItem", 0) for b in by_op) + manifests)
    seq_reads = (sum(p["dynamodb_sequencer_reads"] for p in phases)
                 - sum(b.get("manifest.Query", 0) for b in by_op) + manifests)
    log_all = (sum(p["log_bytes"] for p in all_phases)
               / sum(p["events_in_lake"] for p in all_phases))
    summary = [p for p in phases if p["log_mode"] == "summary"]
    log_summary_per_msg = (sum(p["log_bytes"] for p in summary)
                           / max(1, sum(p["agent"]["messages"] for p in summary)))

    ev_per_msg = live["events_per_message"]
    msg_bytes = live["bytes"] / live["messages"]

    def log_bytes(per_msg_events: float) -> Q:
        if log_mode == "summary":
            return Q(log_summary_per_msg / per_msg_events,
                     "freshness.json: summary phase log bytes per message / events per message")
        if log_mode == "mutations":
            return Q(log_all, "freshness.json: log all bytes/event; ASSUMED: no METADATA TIMES "
                              "in the workload, so mutations = all")
        return Q(log_all, "freshness.json: log bytes/event (JSON lines incl. EMF), mode all")

    rows_s = compact["results"]["spark"]["rows_per_s"]
    glue = Q(rows_s, f"compact.json: Spark local[2] rows/s on {compact['events']:,} events; "
                     "ASSUMED: one G.1X worker does what local[2] did here")
    ours = Design(
        name="ours (packed, gzip, 64 KiB)",
        events_per_message=Q(ev_per_msg, src_live),
        send_requests_per_event=Q(live["billed_per_1000_events"] / 1000, src_live),
        message_bytes=Q(msg_bytes, src_live),
        lambda_ms_per_event=Q(ms_event, src_c),
        index_ms_per_indexed_event=Q(ms_indexed, "ingest_throughput.json: own_ms, index on - off "
                                                 "(index on = every event)"),
        ddb_calls_per_indexed_event=Q((writes + reads) / max(1, indexed),
                                      "freshness.json: DynamoDB calls/indexed event"),
        puts_per_message=Q(puts / max(1, messages), "freshness.json: PutObject calls/message"),
        raw_bytes_per_event=Q(lake["raw_bytes_per_event"], "lake.json: raw gzip objects"),
        parquet_bytes_per_event=Q(lake["parquet_bytes_per_event"], "lake.json: zstd Parquet"),
        ddb_writes_per_indexed_event=Q(writes / max(1, indexed),
                                       "freshness.json: PutItem calls/indexed event"),
        ddb_reads_per_indexed_event=Q(reads / max(1, indexed),
                                      "freshness.json: Query+BatchGetItem calls/indexed "
                                      "event; ASSUMED 1 RRU per call"),
        ddb_sequencer_writes_per_message=Q(
            seq_writes / max(1, messages),
            "freshness.json: arrival and manifest writes/event message, + a position "
            "advance per manifest (the looks' lease writes: apply lines)"),
        ddb_sequencer_reads_per_message=Q(
            seq_reads / max(1, messages),
            "freshness.json: arrival BatchGetItem calls/event message, + a manifests Query "
            "per manifest (the looks' Queries: apply lines)"),
        log_bytes_per_event=log_bytes(ev_per_msg),
        glue_rows_per_worker_s=glue,
        continue_requests_per_event_invocation=Q(
            1, "ASSUMED: one cluster; consumer.finish sends one per cluster an invocation touched"),
        apply_invocations_per_cluster_second=Q(
            1000 / WINDOW_MS, "ASSUMED: events in every window; hdfs_events/continue_request.py "
                              "queues one request a cluster and window (WINDOW_MS)"),
        # Not the window plus CLOCK_SKEW_MS each: a cluster's apply invocations run one at a
        # time (its FIFO group is locked while one is in flight) and the next starts after the
        # last has looked past its window's end + skew, so in a steady flow they run back to
        # back, a window each; the skew is billed once a burst, not once a window.
        apply_s_per_cluster_second=Q(
            WINDOW_MS / 1000, f"ASSUMED: steady flow; WINDOW_MS (hdfs_events/continue_request.py) "
                              f"looked through back to back, CLOCK_SKEW_MS ({CLOCK_SKEW_MS}) once "
                              "a burst"),
        looks_per_cluster_second=Q(
            1000 / LOOK_INTERVAL_MS, "ASSUMED: idle looks; lambdas/ingest/consumer.py looks every "
                                     "LOOK_INTERVAL_MS while a window lasts"),
    )
    base_ship = ship["baseline"]
    baseline = Design(
        name="hdfs-inotify-example (1 event/message)",
        events_per_message=Q(1, "ship.json: baseline, 1 event per message"),
        send_requests_per_event=Q(base_ship["billed_per_1000_events"] / 1000,
                                  "ship.json: baseline billed per 1,000 events"),
        message_bytes=Q(lake["event_json_bytes"], "lake.json: one event's JSON"),
        lambda_ms_per_event=Q(ms_event, src_c + "; ASSUMED same consumer per event"),
        index_ms_per_indexed_event=Q(ms_indexed, "ASSUMED same index code as ours"),
        ddb_calls_per_indexed_event=Q((writes + reads) / max(1, indexed),
                                      "ASSUMED as ours (favours the baseline)"),
        puts_per_message=Q(1, "ASSUMED: the same consumer writes one object per message"),
        raw_bytes_per_event=Q(lake["raw_bytes_per_single_event_object"],
                              "lake.json: one event gzipped alone"),
        parquet_bytes_per_event=ours.parquet_bytes_per_event,
        ddb_writes_per_indexed_event=Q(writes / max(1, indexed),
                                       "ASSUMED as ours (ours coalesces per message: "
                                       "favours the baseline)"),
        ddb_reads_per_indexed_event=ours.ddb_reads_per_indexed_event,
        ddb_sequencer_writes_per_message=Q(ours.ddb_sequencer_writes_per_message.value,
                                           "ASSUMED as ours, per message"),
        ddb_sequencer_reads_per_message=Q(ours.ddb_sequencer_reads_per_message.value,
                                          "ASSUMED as ours, per message"),
        log_bytes_per_event=log_bytes(1),
        glue_rows_per_worker_s=Q(rows_s, glue.source + "; ASSUMED tiny objects read as fast"),
        continue_requests_per_event_invocation=Q(0, NO_APPLIER),
        apply_invocations_per_cluster_second=Q(0, NO_APPLIER),
        apply_s_per_cluster_second=Q(0, NO_APPLIER),
        looks_per_cluster_second=Q(0, NO_APPLIER),
    )
    return ours, baseline, {"moto_s3_put_ms": moto_s3_ms, "moto_ddb_call_ms": moto_ddb_ms}


# --- the lake's bytes per event (run by `make bench` after the compaction bench) -----------------

def measure_lake(bench_out: Path) -> dict[str, Any]:
    """Raw gzip bytes/event of the compaction bench's cached input lake (the consumer's raw
    layout), one event gzipped alone (a one-event object), and zstd Parquet bytes/event of the
    same events written by the compaction bench's pyarrow contender (bench.compact keeps no
    Spark output; both write zstd Parquet of the same schema, sorted by key)."""
    from bench import compact

    meta = _read(bench_out, "compact.json")
    source = compact.input_lake(meta["events"], meta["duplicates"])
    raws = sorted(glob.glob(str(source / "raw" / "**" / "*.jsonl.gz"), recursive=True))
    raw_bytes = sum(Path(f).stat().st_size for f in raws)
    rows_in = meta["results"]["spark"]["rows_in"]
    sample = gzip.decompress(Path(raws[0]).read_bytes()).decode().splitlines()
    single = sum(len(gzip.compress(line.encode(), mtime=0)) for line in sample) / len(sample)
    line_bytes = sum(len(line.encode()) for line in sample) / len(sample)
    with tempfile.TemporaryDirectory(prefix="lake-") as tmp:
        subprocess.run([sys.executable, "-m", "bench.compact", "--child", "baseline",
                        "--lake", str(source), "--to", tmp], check=True, cwd=REPO,
                       capture_output=True)
        parquet = sum(Path(f).stat().st_size
                      for f in glob.glob(f"{tmp}/**/*.parquet", recursive=True))
    result = {"events": meta["events"], "rows_in": rows_in, "raw_objects": len(raws),
              "raw_bytes_per_event": raw_bytes / rows_in,
              "events_per_raw_object": rows_in / len(raws),
              "raw_bytes_per_single_event_object": single, "event_json_bytes": line_bytes,
              "parquet_bytes_per_event": parquet / meta["events"],
              "parquet_writer": "pyarrow zstd (bench.compact baseline)"}
    (bench_out / "lake.json").write_text(json.dumps(result, indent=1) + "\n")
    return result


# --- printing --------------------------------------------------------------------------------------

def format_bill(ours: list[Line], base: list[Line], names: tuple[str, str]) -> str:
    out = [f"{'service':<11}{'item':<40}{'ours qty':>14}{'USD':>11}"
           f"{'baseline qty':>16}{'USD':>11}  unit"]
    for a, b in zip(ours, base, strict=True):
        out.append(f"{a.service:<11}{a.item:<40}{a.quantity:>14,.1f}{a.usd:>11,.2f}"
                   f"{b.quantity:>16,.1f}{b.usd:>11,.2f}  {a.unit}")
    out.append(f"{'TOTAL':<51}{'':>4}{total(ours):>11,.2f}{'':>16}{total(base):>11,.2f}"
               f"  USD per billion events")
    out.append(f"{'':<51}({names[0]}){'':>4}({names[1]})")
    return "\n".join(out)


def format_inputs(d: Design) -> str:
    lines = [f"inputs of {d.name}:"]
    for name in Design.__dataclass_fields__:
        if name == "name":
            continue
        q: Q = getattr(d, name)
        lines.append(f"  {name:<40}{q.value:>14,.4g}  {q.source}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cost_model",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--bench-out", type=Path, default=OUT_DIR)
    parser.add_argument("--coverage", type=float, default=0.2,
                        help="share of events under indexed prefixes (default 0.2)")
    parser.add_argument("--log-mode", choices=("all", "mutations", "summary"), default="all")
    parser.add_argument("--events-per-s-per-cluster", type=float,
                        default=Setting().events_per_s_per_cluster,
                        help="a cluster's steady event rate, which sets the apply queue's lines "
                             "(default %(default)g: ASSUMED, about bench.chain_speed's)")
    parser.add_argument("--measure-lake", action="store_true",
                        help="measure raw and Parquet bytes/event into bench-out/lake.json")
    parser.add_argument("--json", type=Path, help="also write the bill as JSON here")
    args = parser.parse_args(argv)
    if args.measure_lake:
        print(json.dumps(measure_lake(args.bench_out), indent=1))
        return 0
    setting = Setting(coverage=args.coverage,
                      events_per_s_per_cluster=args.events_per_s_per_cluster)
    ours, base, moto = designs(args.bench_out, args.log_mode)
    a, b = bill(ours, setting), bill(base, setting)
    print(f"AWS bill per billion HDFS events, {PRICES.region}, prices: {PRICES.as_of}; "
          f"index coverage {setting.coverage:.0%}, log mode {args.log_mode}, Lambda "
          f"{setting.lambda_memory_gb:g} GB arm64, storage {setting.storage_months:g} month; "
          f"apply queue at {setting.events_per_s_per_cluster:,.0f} events/s per cluster "
          f"(ASSUMED: about bench.chain_speed's rate, one cluster)\n")
    print(format_bill(a, b, (ours.name, base.name)))
    print()
    print(format_inputs(ours))
    print(format_inputs(base))
    timed = replace(setting, s3_put_ms=moto["moto_s3_put_ms"],
                    ddb_call_ms=moto["moto_ddb_call_ms"])
    print(f"\nS3 PutObject and DynamoDB calls timed at {setting.s3_put_ms:g} / "
          f"{setting.ddb_call_ms:g} ms (ASSUMED AWS in-region); at moto's measured "
          f"{moto['moto_s3_put_ms']:.1f} / {moto['moto_ddb_call_ms']:.1f} ms the totals are "
          f"{total(bill(ours, timed)):,.2f} (ours) and {total(bill(base, timed)):,.2f} (baseline)")
    print("\nlevers (ours, USD per billion events):")
    for mode in ("all", "mutations", "summary"):
        o, _, _ = designs(args.bench_out, mode)
        print(f"  log mode {mode:<10}{total(bill(o, setting)):>12,.2f}")
    for cov in (0.0, 0.2, 1.0):
        print(f"  index coverage {cov:>4.0%}{total(bill(ours, replace(setting, coverage=cov))):>12,.2f}")
    for rate in (100.0, 500.0, setting.events_per_s_per_cluster, 10_000.0):
        at = replace(setting, events_per_s_per_cluster=rate)
        print(f"  {rate:>6,.0f} events/s per cluster{total(bill(ours, at)):>12,.2f}")
    for per_msg in (20.0, 100.0, ours.events_per_message.value):
        scaled = replace(ours, events_per_message=Q(per_msg, "lever"),
                         send_requests_per_event=Q(1 / per_msg * max(
                             1, ours.send_requests_per_event.value * ours.events_per_message.value),
                             "lever"),
                         message_bytes=Q(ours.message_bytes.value * per_msg
                                         / ours.events_per_message.value, "lever"))
        print(f"  {per_msg:>6.0f} events/message{total(bill(scaled, setting)):>12,.2f}")
    if args.json:
        args.json.write_text(json.dumps({
            "prices": {k: getattr(PRICES, k) for k in Prices.__dataclass_fields__},
            "setting": {k: getattr(setting, k) for k in Setting.__dataclass_fields__},
            "log_mode": args.log_mode,
            "designs": {d.name: {"total_usd": total(lines),
                                 "lines": [vars_of(x) for x in lines],
                                 "inputs": {k: {"value": getattr(d, k).value,
                                                "source": getattr(d, k).source}
                                            for k in Design.__dataclass_fields__ if k != "name"}}
                        for d, lines in ((ours, a), (base, b))}}, indent=1) + "\n")
    return 0


def vars_of(line: Line) -> dict[str, Any]:
    return {k: getattr(line, k) for k in Line.__dataclass_fields__}


if __name__ == "__main__":
    raise SystemExit(main())
