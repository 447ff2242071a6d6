"""Consumer Lambda throughput: events/s per invocation at batch size 10, full packed messages
(~1000 events each), against moto server, with the time split by part.

    python -m bench.consumer [--invocations 3] [--events-per-message 1000] [--ops 60000]
                             [--ddb-latency-ms 0] [--no-serial]

Parts timed inside the real handler (powertools batch processor included): decode (envelope
decode + checks), logging (powertools Logger lines, to /dev/null), metrics (EMF aggregation and
flush), S3 (PutObject of the lake objects), DynamoDB (the index store's calls), and the rest
(index logic, batch processor, key derivation). Configurations: index off / on, log mode all
and summary. The baseline, measured in the same run, is decode alone: what any consumer must
spend to read the messages at all. "index on, serial" is the index's DynamoDB traffic as it
was before (SerialIndexView: one conditional PutItem at a time, and the writes so far flushed
before every partition a subtree walk reads), the baseline for the index's own figures.
DynamoDB requests are counted on the wire (API calls, retries not counted), per event.

Moto server runs in this process and answers in CPU time alone, so requests issued at once
barely overlap here. `--ddb-latency-ms` adds a sleep to every DynamoDB request, standing in
for real DynamoDB's round trip (single-digit milliseconds): that is what concurrent writes
hide. Writes bench-out/consumer.json.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import statistics
import threading
import time
import urllib.request
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lambdas.ingest.index_view import ConcurrentUpdate, IndexView

OUT = Path("bench-out/consumer.json")
PARTS = ("decode", "logging", "metrics", "s3", "dynamodb")


class SerialIndexView(IndexView):
    """The baseline: the view's DynamoDB traffic as it was before (commit d7eb32a): every
    changed entry one conditional PutItem after another; everything changed so far written
    before each page a walk reads, and every page read from the table; an entry missed read
    alone."""

    def get(self, path: str) -> Any:
        if path not in self._cache:
            self.prefetch([path])
        return self._cache[path]

    def flush(self) -> None:
        for path, base in list(self._dirty.items()):
            self.writes += 1
            if self.store.put_many([(self._cache[path], base)]):
                self.forget()
                raise ConcurrentUpdate(f"index entry {self.cluster}:{path} changed meanwhile")
            del self._dirty[path]
        self._dirty_names.clear()

    def children(self, parent: str, *, after: str | None, limit: int) -> list[Any]:
        self.flush()
        self.reads += 1
        page = self.store.children(self.cluster, parent, after=after, limit=limit)
        for entry in page:
            if entry.path not in self._dirty:
                self._cache[entry.path] = entry
        return page


class RoundTrips:
    """How many DynamoDB round trips the index waits for, one after another: a read is one, a
    flush one per WRITE_CONCURRENCY writes. Moto answers in CPU time shared with this process,
    so concurrency shows in this count rather than in moto's wall time."""

    def __init__(self, store: Any) -> None:
        self._store, self.waits = store, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def get_many(self, cluster: str, paths: Any) -> Any:
        paths = list(paths)
        self.waits += -(-len(paths) // 100)
        return self._store.get_many(cluster, paths)

    def children(self, *args: Any, **kwargs: Any) -> Any:
        self.waits += 1
        return self._store.children(*args, **kwargs)

    def put_many(self, writes: Any) -> Any:
        from lambdas.ingest.dal import WRITE_CONCURRENCY
        self.waits += -(-len(writes) // WRITE_CONCURRENCY)
        return self._store.put_many(writes)


class DynamoRequests:
    """Counts the index client's API calls by operation, and adds `latency_s` to each, as a
    stand-in for real DynamoDB's round trip (a sleep: concurrent requests overlap)."""

    def __init__(self, ddb: Any, latency_s: float) -> None:
        self.by_op: dict[str, int] = defaultdict(int)
        self.latency_s = latency_s
        self._lock = threading.Lock()
        ddb.meta.events.register("before-call.dynamodb", self._count)
        if latency_s:
            ddb.meta.events.register("before-send.dynamodb", self._wait)

    def _count(self, event_name: str, **_: Any) -> None:
        with self._lock:
            self.by_op[event_name.rsplit(".", 1)[1]] += 1

    def _wait(self, **_: Any) -> None:
        time.sleep(self.latency_s)

    def take(self) -> dict[str, int]:
        with self._lock:
            counts, self.by_op = dict(self.by_op), defaultdict(int)
        return counts


class Timer:
    def __init__(self) -> None:
        self.spent: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)

    def wrap(self, part: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            self.calls[part] += 1
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.spent[part] += time.perf_counter() - start
        return timed


class TimedProxy:
    """Every method call on `target` counts toward `part`."""

    def __init__(self, target: Any, part: str, timer: Timer) -> None:
        self._target, self._part, self._timer = target, part, timer

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        return self._timer.wrap(self._part, value) if callable(value) else value


def make_events(ops: int) -> list[Any]:
    from bench.workload import write_edit_log
    from onprem_agent.editlog import read_ops
    from onprem_agent.translate import translate_ops

    buf = io.StringIO()
    write_edit_log(buf, ops=ops, seed=1)
    return list(translate_ops(read_ops(io.BytesIO(buf.getvalue().encode())), "bench"))


def lambda_events(events: list[Any], per_message: int, batch: int = 10) -> list[dict]:
    from hdfs_events.envelope import encode_message
    from hdfs_events.ids import message_group_id

    records = []
    for i in range(0, len(events) - per_message + 1, per_message):
        chunk = events[i:i + per_message]
        wire = encode_message(chunk, group_id=message_group_id("bench", "/", "single"))
        records.append({
            "messageId": f"m-{i}", "receiptHandle": f"r-{i}", "body": wire.body,
            "attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": "1767225600000",
                           "SenderId": "AIDAEXAMPLE", "MessageGroupId": wire.group_id,
                           "MessageDeduplicationId": wire.dedup_id,
                           "ApproximateFirstReceiveTimestamp": "1767225600100",
                           "SequenceNumber": str(10**19 + i)},
            "messageAttributes": {"encoding": {"stringValue": "gzip+base64",
                                               "dataType": "String"}},
            "md5OfBody": "", "eventSource": "aws:sqs",
            "eventSourceARN": "arn:aws:sqs:eu-west-1:123456789012:bench.fifo",
            "awsRegion": "eu-west-1"})
    return [{"Records": records[i:i + batch]} for i in range(0, len(records), batch)
            if len(records[i:i + batch]) == batch]


def run_config(name: str, endpoint: str, batches: list[dict], *, index: bool,
               log_mode: str, serial: bool = False, latency_s: float = 0.0) -> dict[str, Any]:
    import boto3
    from aws_lambda_powertools import Logger

    from hdfs_events import names
    from lambdas.ingest import consumer as consumer_module
    from lambdas.ingest import handler
    from lambdas.ingest import index as index_module
    from tests.unit.ingest.conftest import BUCKET, TABLE, create_resources
    from tests.unit.ingest.lambda_events import Context

    urllib.request.urlopen(urllib.request.Request(f"{endpoint}/moto-api/reset",
                                                  method="POST"), timeout=30).read()
    url = create_resources(boto3.client("s3"), boto3.client("dynamodb"), boto3.client("sqs"))
    os.environ.update({names.ENV_LAKE_BUCKET: BUCKET, names.ENV_INDEX_TABLE: TABLE,
                       names.ENV_INDEX_PREFIXES: "/" if index else "",
                       names.ENV_LOG_MODE: log_mode, names.ENV_EVENT_QUEUE_URL: url})
    devnull = open(os.devnull, "w")  # noqa: SIM115 - lives for the run
    handler.logger = Logger(service=f"bench-{name}", stream=devnull)
    handler.consumer.cache_clear()
    consumer = handler.consumer()
    timer = Timer()
    consumer.lake = TimedProxy(consumer.lake, "s3", timer)
    consumer.logger = TimedProxy(consumer.logger, "logging", timer)
    consumer.telemetry = TimedProxy(consumer.telemetry, "metrics", timer)
    requests = trips = None
    if consumer.index is not None:
        requests = DynamoRequests(consumer.index.store.ddb, latency_s)
        trips = RoundTrips(consumer.index.store)
        consumer.index.store = TimedProxy(trips, "dynamodb", timer)
    decode, check = consumer_module.decode_message, consumer_module.check_events
    consumer_module.decode_message = timer.wrap("decode", decode)
    consumer_module.check_events = timer.wrap("decode", check)
    if serial:
        index_module.IndexView = SerialIndexView  # type: ignore[misc]
    rows = []
    try:
        for batch in batches:
            timer.spent.clear()
            timer.calls.clear()
            if requests is not None and trips is not None:
                requests.take()
                trips.waits = 0
            events = sum(json.loads(_plain(r["body"]))["events"].__len__()
                         for r in batch["Records"])
            start = time.perf_counter()
            with contextlib.redirect_stdout(devnull):
                response = handler.handler(batch, Context())
            total = time.perf_counter() - start
            assert response == {"batchItemFailures": []}, response
            by_op = requests.take() if requests is not None else {}
            rows.append({"events": events, "total_s": total, **dict(timer.spent),
                         "s3_calls": timer.calls["s3"], "ddb_calls": sum(by_op.values()),
                         "ddb_by_op": by_op, "ddb_waits": trips.waits if trips else 0})
    finally:
        consumer_module.decode_message, consumer_module.check_events = decode, check
        index_module.IndexView = IndexView  # type: ignore[misc]
        handler.consumer.cache_clear()
    return summarise(name, rows)


def _plain(body: str) -> str:
    import base64
    import gzip
    return gzip.decompress(base64.b64decode(body)).decode()


def summarise(name: str, rows: list[dict]) -> dict[str, Any]:
    total = statistics.median(r["total_s"] for r in rows)
    parts = {p: statistics.median(r.get(p, 0.0) for r in rows) for p in PARTS}
    events = rows[0]["events"]
    return {"config": name, "events_per_invocation": events, "invocations": len(rows),
            "total_ms": total * 1000, "events_per_s": events / total,
            "parts_ms": {p: v * 1000 for p, v in parts.items()},
            "other_ms": (total - sum(parts.values())) * 1000,
            "s3_calls": statistics.median(r.get("s3_calls", 0) for r in rows),
            "dynamodb_calls": statistics.median(r.get("ddb_calls", 0) for r in rows),
            "dynamodb_calls_per_event": statistics.median(
                r.get("ddb_calls", 0) / r["events"] for r in rows),
            "dynamodb_waits_per_event": statistics.median(
                r.get("ddb_waits", 0) / r["events"] for r in rows),
            "dynamodb_by_op": {op: statistics.median(r.get("ddb_by_op", {}).get(op, 0)
                                                     for r in rows)
                               for op in sorted({o for r in rows
                                                 for o in r.get("ddb_by_op", {})})}}


def baseline_decode(batches: list[dict]) -> dict[str, Any]:
    from hdfs_events.envelope import decode_message
    rows = []
    for batch in batches:
        start = time.perf_counter()
        n = sum(len(decode_message(r["body"], r["messageAttributes"])) for r in batch["Records"])
        rows.append({"events": n, "total_s": time.perf_counter() - start})
    return summarise("baseline: decode only", rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--invocations", type=int, default=3)
    parser.add_argument("--events-per-message", type=int, default=1000)
    parser.add_argument("--ops", type=int, default=0, help="edit-log records to generate")
    parser.add_argument("--ddb-latency-ms", type=float, default=0.0,
                        help="added to every DynamoDB request (real DynamoDB: ~5)")
    parser.add_argument("--no-serial", action="store_true",
                        help="skip the serial-index baseline (the slowest configuration)")
    args = parser.parse_args(argv)
    latency_s = args.ddb_latency_ms / 1000
    for key, value in {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
                       "AWS_DEFAULT_REGION": "eu-west-1", "AWS_REGION": "eu-west-1"}.items():
        os.environ.setdefault(key, value)
    needed = args.invocations * 10 * args.events_per_message
    events = make_events(args.ops or needed * 4)
    if len(events) < needed:
        raise SystemExit(f"{len(events)} events generated, {needed} needed: raise --ops")
    batches = lambda_events(events[:needed], args.events_per_message)

    from moto.server import ThreadedMotoServer
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    os.environ["AWS_ENDPOINT_URL"] = endpoint
    try:
        results = [baseline_decode(batches)]
        configs = [("index off, log all", False, "all", False),
                   ("index off, log summary", False, "summary", False),
                   ("index on, log all", True, "all", False),
                   ("index on, log summary", True, "summary", False)]
        if not args.no_serial:
            configs.append(("index on, summ., serial", True, "summary", True))
        for name, index, mode, serial in configs:
            results.append(run_config(name, endpoint, batches, index=index, log_mode=mode,
                                      serial=serial, latency_s=latency_s))
    finally:
        server.stop()
    base = results[0]["total_ms"]
    print(f"consumer: batch of 10 messages x {args.events_per_message} events, median of "
          f"{args.invocations} invocations, moto server on {endpoint}, DynamoDB latency "
          f"added {args.ddb_latency_ms:g} ms")
    head = f"{'config':<24}{'events/s':>10}{'total ms':>10}{'x decode':>9}"
    head += "".join(f"{p:>10}" for p in (*PARTS, "other")) + f"{'S3 req':>8}{'DDB req':>9}"
    head += f"{'DDB/ev':>8}{'waits/ev':>9}"
    print(head)
    for r in results:
        parts = r.get("parts_ms", {})
        line = (f"{r['config']:<24}{r['events_per_s']:>10.0f}{r['total_ms']:>10.1f}"
                f"{r['total_ms'] / base:>9.1f}")
        line += "".join(f"{parts.get(p, 0.0):>10.1f}" for p in PARTS)
        line += f"{r.get('other_ms', 0.0):>10.1f}"
        line += f"{r.get('s3_calls', 0):>8.0f}{r.get('dynamodb_calls', 0):>9.0f}"
        line += f"{r.get('dynamodb_calls_per_event', 0):>8.2f}"
        line += f"{r.get('dynamodb_waits_per_event', 0):>9.3f}"
        print(line)
    serial = next((r for r in results if r["config"].endswith("serial")), None)
    if serial is not None:
        now = next(r for r in results if r["config"] == "index on, log summary")
        print(f"index on, log summary vs serial: {now['events_per_s'] / serial['events_per_s']:.1f}x"
              f" events/s; DynamoDB requests {serial['dynamodb_by_op']} -> "
              f"{now['dynamodb_by_op']}")
        for r in (serial, now):  # what the round trips alone allow at DynamoDB's ~5 ms
            ceiling = 1 / (r["dynamodb_waits_per_event"] * 0.005)
            print(f"  {r['config']}: {r['dynamodb_waits_per_event']:.3f} round trips waited "
                  f"for per event: at most {ceiling:.0f} events/s at 5 ms a round trip")
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps({"batch_size": 10, "events_per_message": args.events_per_message,
                               "ddb_latency_ms": args.ddb_latency_ms, "results": results},
                              indent=2))
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
