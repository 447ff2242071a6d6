"""A hot directory (issue 32): creates into one directory at 10,000 a second, applied by the
consumer's index, against DynamoDB's 1,000 WCU/s per partition key; beside the same events with
sharding off (every child in the directory's one partition), measured in the same run.

    python -m bench.hot_directory [--creates 100000] [--rate 10000] [--latency-ms 0]

The events are applied as the sequencer applies a range (chunks of sequencer.CHUNK_EVENTS)
through the consumer's DynamoIndexStore on moto in-process (the kit's moto_fast_query and
moto_dynamodb_lock applied: a Query reads one partition; parallel writes all land). The
per-partition limit is modelled on a simulated clock: a chunk's writes happen when its last
event arrived (the consumer keeping up with `--rate`), and a `before-parameter-build` hook on
the store's client counts each item a BatchWriteItem or PutItem writes against its partition
key for that second (1 WCU an item: an index item is well under 1 KB); writes past 1,000 in
one partition-second are what DynamoDB would throttle. They are counted, not refused, so both
runs write everything and end equal to the in-order replay (checked: the bench fails
otherwise). Also measured: the Queries and seconds of `index ls` of the directory
(hdfs_events_cli.index_reader), the price of sharding.
Writes bench-out/hot_directory.json.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

import boto3
from moto import mock_aws

from hdfs_events import names
from hdfs_events_cli.index_reader import IndexReader
from lambdas.ingest import index_view
from lambdas.ingest.index import NamespaceIndex
from lambdas.ingest.index_table import DynamoIndexStore
from lambdas.ingest.sequencer import CHUNK_EVENTS
from tests.kit import moto_dynamodb_lock, moto_fast_query, moto_fast_scan
from tests.kit.index_builders import live, mkdir, mkfile
from tests.kit.ingest_aws import TABLE, create_resources
from tests.kit.memory_stores import PartitionLimit
from tests.kit.replay import in_order_state

OUT = Path("bench-out/hot_directory.json")
PARTITION_WCU_PER_S = 1000  # DynamoDB's per-partition write limit
HOT = "/data/hot"


class Writes:
    """The store client's item writes, by partition key per second of the simulated clock."""

    def __init__(self, client: Any, latency_s: float) -> None:
        self.limit = PartitionLimit(PARTITION_WCU_PER_S)
        self.per_partition_second: Counter[tuple[str, int]] = Counter()
        self.calls: Counter[str] = Counter()
        self.latency_s = latency_s
        client.meta.events.register("before-parameter-build.dynamodb", self._count)
        client.meta.events.register_first("before-send.dynamodb", self._send)

    def _count(self, params: dict, model: Any, **_: Any) -> None:
        self.calls[model.name] += 1
        items = ([r["PutRequest"]["Item"] for rs in params["RequestItems"].values() for r in rs
                  if "PutRequest" in r] if model.name == "BatchWriteItem"
                 else [params["Item"]] if model.name == "PutItem" else [])
        for item in items:
            partition = item[names.INDEX_PK]["S"]
            self.limit(partition)
            self.per_partition_second[(partition, int(self.limit.now_s))] += 1

    def _send(self, **_: Any) -> None:
        if self.latency_s:
            time.sleep(self.latency_s)


def run(creates: int, rate: int, latency_s: float, *, sharded: bool) -> dict[str, Any]:
    events = [mkdir(1, "/data"), mkdir(2, HOT),
              *(mkfile(10 + i, f"{HOT}/f{i:07d}") for i in range(creates))]
    index_view.SHARD_AFTER_WRITES = saved if sharded else 10**12
    with mock_aws():
        ddb = boto3.client("dynamodb")
        create_resources(boto3.client("s3"), ddb, boto3.client("sqs"))
        store = DynamoIndexStore(TABLE)
        writes = Writes(store.ddb, latency_s)
        index = NamespaceIndex(store, ["/data"])
        start = time.perf_counter()
        for at in range(0, len(events), CHUNK_EVENTS):
            chunk = events[at:at + CHUNK_EVENTS]
            writes.limit.now_s = (at + len(chunk)) / rate  # written once its last event came
            if index.apply_until_walk(chunk).taken != len(chunk):
                raise SystemExit("a chunk of creates stopped short")
        seconds = time.perf_counter() - start
        if live(ddb) != in_order_state(events, "/data"):
            raise SystemExit(f"the index differs from the in-order replay (sharded={sharded})")
        reader = IndexReader(TABLE, "prod", ddb)
        queries: list[int] = []
        ddb.meta.events.register("before-parameter-build.dynamodb.Query",
                                 lambda **_: queries.append(1))
        ls_start = time.perf_counter()
        listed = reader.ls(HOT)
        ls_seconds = time.perf_counter() - ls_start
        if len(listed) != creates:
            raise SystemExit(f"index ls listed {len(listed)} of {creates} children")
    hottest = max(writes.per_partition_second.values())
    return {"sharded": sharded, "creates": creates, "throttled_writes": writes.limit.throttled,
            "hottest_partition_wcu_per_s": hottest,
            "partitions_written": len({p for p, _ in writes.per_partition_second}),
            "events_per_s_on_moto": round(len(events) / seconds),
            "ls_queries": len(queries), "ls_seconds": round(ls_seconds, 3),
            "calls": dict(writes.calls)}


saved = index_view.SHARD_AFTER_WRITES


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--creates", type=int, default=100_000)
    parser.add_argument("--rate", type=int, default=10_000, help="creates a second")
    parser.add_argument("--latency-ms", type=float, default=0.0,
                        help="sleep per DynamoDB request (the throttling model needs none)")
    args = parser.parse_args(argv)
    # moto in-process: its own region and dummy credentials, never a real account's.
    for key, value in (("AWS_DEFAULT_REGION", "eu-west-1"), ("AWS_ACCESS_KEY_ID", "testing"),
                       ("AWS_SECRET_ACCESS_KEY", "testing")):
        os.environ[key] = value
    os.environ.pop("AWS_ENDPOINT_URL", None)
    moto_fast_query.apply()  # a Query reads its partition, not the whole table
    moto_fast_scan.apply()  # a Scan page reads its page, not the whole table
    moto_dynamodb_lock.apply()  # the store's parallel writes to new partitions all land
    current = run(args.creates, args.rate, args.latency_ms / 1000, sharded=True)
    baseline = run(args.creates, args.rate, args.latency_ms / 1000, sharded=False)
    result = {"creates": args.creates, "rate": args.rate,
              "partition_wcu_per_s": PARTITION_WCU_PER_S, "current": current,
              "baseline": baseline}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2))
    for r in (current, baseline):
        print(f"{'sharded  ' if r['sharded'] else 'unsharded'}: {r['creates']:,} creates at "
              f"{args.rate:,}/s: {r['throttled_writes']:,} throttled writes, hottest partition "
              f"{r['hottest_partition_wcu_per_s']:,} WCU/s over {r['partitions_written']} "
              f"partitions; ls {r['ls_queries']} Queries in {r['ls_seconds']} s; "
              f"{r['events_per_s_on_moto']:,} events/s on moto")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
