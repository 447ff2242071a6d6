"""Issue #32's must-show at production size: on one real NameNode holding the kit's namespace of
HDFS_EVENTS_SCALE_FILES files (`make test-scale`: 1,000,000, the kit's cached image), the fsimage
start equals the listing start path for path, and the inventory table equals a listing of the
NameNode, every field.

The route, and what stands in for what:
- The image start runs whole, as tests/integration/agent/test_first_start_fsimage.py runs it at
  2,000 files: the agent fetches the checkpoint into the moto server's S3, starts the inventory
  job (moto's Glue, run for real by tests/kit/glue_runs.py: the entry script on a local
  SparkSession), whose index writes go to the moto server's DynamoDB over HTTP; the agent makes
  no listing RPC (the NameNode's audit log) and its checkpoint is the image's txid T.
- The listing start (another cluster name, same NameNode) ships its SNAPSHOT records to the moto
  server's FIFO queue for real. The test receives every message from that queue over HTTP and
  hands each to the consumer's own code (MessageConsumer: the envelope's decode, the sender
  check, the raw objects, the sequencer, the index's rules, sharding), on in-memory stores
  (tests/kit/memory_consumer.py, tests/kit/memory_stores.py) instead of moto's DynamoDB: the
  consumer through moto applies ~250-400 entries/s (45-70 min at 1M, docs/bench.md), the
  in-memory index the same code's result in a minute or two.
- The image job's items are read back from the moto server's own table in this process (it
  serves from here), not through DynamoDB's API: moto's response serializer costs per item
  returned (a Scan pages over the whole table again per page; verify's 1M reads took ~40 min).
  They are the items the job's BatchWriteItem calls stored, each read as its wire JSON.
- The two indexes are compared entry for entry in every attribute but each start's own txid,
  where an entry is stored included: both shard a directory of more than 100 children from its
  own record on (the consumer from the SNAPSHOT record's children_num, the job from the image).
- The inventory: the NameNode's own listing of `/` (DFSClient.listPaths with block locations
  and getQuotaUsage per directory, written as JSON lines by the NameNode's process,
  tests/kit/hadoop/ops.py `tree_lines`), against the table the job published (Parquet in moto's
  S3 read by a local SparkSession through S3A), joined by path on every column of
  hdfs_events/inventory_schema.py. A listing gives a file no quota (the image stores 0) and the
  effective storage and erasure coding policies (the image the inode's own): the kit's namespace
  sets no policy, so both sides hold 0 and null there; tests/integration/glue/
  test_namespace_inventory.py holds policies set on a live NameNode.

Each step's seconds are printed (`pytest -rP`).
"""

from __future__ import annotations

import json
import logging
import os
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial, reduce
from operator import and_
from pathlib import Path
from typing import Any

import boto3
import pytest

from hdfs_events import lake_layout, names
from hdfs_events.dynamodb_json import from_wire
from hdfs_events.index_item import plain
from hdfs_events.inventory_schema import INVENTORY_FILE_COLUMNS
from hdfs_events.snapshot_index import SHARD_AFTER_WRITES
from hdfs_events_cli.index_status import read_status
from lambdas.ingest.consumer import MessageConsumer
from lambdas.ingest.index import NamespaceIndex
from lambdas.ingest.index_table import entry_to_item
from lambdas.ingest.records import QueueMessage
from lambdas.ingest.senders import ClusterSenders
from lambdas.ingest.sequencer import IndexSequencer
from tests.kit.glue_runs import LocalGlueRuns
from tests.kit.hadoop.cluster import HdfsCluster
from tests.kit.hadoop.namespace_image import NamespaceImage, namespace_image
from tests.kit.image_start import image_agent_config, listing_calls
from tests.kit.index_table import create_index_table
from tests.kit.lambda_events import MOTO_SENDER_ID
from tests.kit.live_agent import AgentProcess
from tests.kit.memory_consumer import MemoryLake
from tests.kit.memory_stores import MemoryIndexStore, MemorySequenceStore
from tests.kit.sqs_lambda import lambda_record

pytestmark = pytest.mark.scale

FILES = int(os.environ.get("HDFS_EVENTS_SCALE_FILES", "1000000"))
LAKE, TABLE, JOB = "lake", "hdfs-events-index", "hdfs-events-namespace-inventory"
LISTED, IMAGED = "listed", "imaged"
REGION, ACCOUNT = "eu-west-1", "123456789012"  # tests/conftest.py's region; moto's account
SHOWN = 5  # differing paths printed
# Where an item is stored, not what it says: each start's own txid, whether the entry is in its
# parent's shard partition, how many shard partitions a directory's children have.
STARTS_OWN = ("last_txid",)  # each start's txid T


@dataclass
class Starts:
    hdfs: HdfsCluster
    image: NamespaceImage
    image_txid: int
    listed_txid: int
    queues: dict[str, str]
    image_listing_rpcs: int
    seconds: dict[str, float] = field(default_factory=dict)

    def timed(self, step: str, call: Callable[[], Any]) -> Any:
        started = time.perf_counter()
        try:
            return call()
        finally:
            self.seconds[step] = round(time.perf_counter() - started, 1)
            print(f"{FILES:,} files: {step} {self.seconds[step]:.1f} s "
                  f"(load {os.getloadavg()[0]:.1f})", flush=True)


@pytest.fixture(scope="module")
def aws(moto_server: str) -> Iterator[str]:
    """The session's moto server, reset once: the module's fixtures outlive a test."""
    urllib.request.urlopen(urllib.request.Request(f"{moto_server}/moto-api/reset",
                                                  method="POST"), timeout=60).read()
    with pytest.MonkeyPatch.context() as env:
        env.setenv("AWS_ENDPOINT_URL", moto_server)
        yield moto_server


def agent_config(directory: Path, hdfs: HdfsCluster, cluster: str, queue_url: str,
                 first_start: str) -> Path:
    return image_agent_config(directory, hdfs, cluster=cluster, queue_url=queue_url,
                              first_start=first_start, bucket=LAKE, inventory_job=JOB,
                              fsimage_extra="index_wait_s = 3600\n")


@pytest.fixture(scope="module")
def starts(aws: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Starts]:
    """Both first starts on one NameNode: the image agent's to its checkpoint T (the index
    written by the job), then the listing agent's to its snapshot's txid (the records queued);
    both agents stopped, the NameNode left up for the listing."""
    work = tmp_path_factory.mktemp("scale")
    started = time.perf_counter()
    image = namespace_image(FILES)
    with HdfsCluster.start(work / "hdfs", image=image.name_dir, datanodes=0,
                           heap=image.heap) as hdfs:
        print(f"{FILES:,} files: NameNode up in {time.perf_counter() - started:.1f} s",
              flush=True)
        s3, sqs, glue = boto3.client("s3"), boto3.client("sqs"), boto3.client("glue")
        s3.create_bucket(Bucket=LAKE, CreateBucketConfiguration={"LocationConstraint": REGION})
        create_index_table(boto3.client("dynamodb"), TABLE)
        queues = {c: sqs.create_queue(QueueName=f"{c}.fifo", Attributes={
            "FifoQueue": "true"})["QueueUrl"] for c in (LISTED, IMAGED)}
        glue.create_job(Name=JOB, Role=f"arn:aws:iam::{ACCOUNT}:role/glue",
                        Command={"Name": "glueetl", "ScriptLocation": "s3://assets/x.py"},
                        DefaultArguments={"--target": f"s3://{LAKE}", "--index_table": TABLE,
                                          "--index_prefixes": "/"})
        out = Starts(hdfs, image, 0, 0, queues, 0)
        before = listing_calls(hdfs)
        out.image_txid = out.timed("fsimage start (fetch, inventory job, index writes)",
                                   lambda: image_start(hdfs, work / IMAGED, queues[IMAGED]))
        out.image_listing_rpcs = listing_calls(hdfs) - before
        written = json.loads(s3.get_object(Bucket=LAKE, Key=lake_layout.fsimage_indexed_key(
            IMAGED, out.image_txid))["Body"].read())
        print(f"{FILES:,} files: the job's index writes into moto server: {written}", flush=True)
        out.listed_txid = hdfs.txid()  # nothing writes: the listing's snapshot is at this txid
        listed = AgentProcess.start(agent_config(work / LISTED, hdfs, LISTED, queues[LISTED],
                                                 "listing"))
        try:
            out.timed("listing start (SNAPSHOT records acknowledged by SQS)",
                      lambda: listed.wait_for_checkpoint(out.listed_txid, timeout_s=3600))
        finally:
            assert listed.stop() == 0, listed.log_tail()
        yield out


def image_start(hdfs: HdfsCluster, directory: Path, queue_url: str) -> int:
    """The fsimage agent until its checkpoint is T (the job's index and position written)."""
    with LocalGlueRuns(JOB, "glue_jobs.namespace_inventory", os.environ) as runs:
        agent = AgentProcess.start(agent_config(directory, hdfs, IMAGED, queue_url, "fsimage"))
        try:
            agent.wait_for(lambda: agent.checkpoint() is not None or any(
                code for _, code, _ in runs.finished),
                lambda: f"{runs.finished} {agent.log_tail()}", timeout_s=3600, poll_s=0.5)
        finally:
            code = agent.stop()
    assert [rc for _, rc, _ in runs.finished] == [0], runs.finished
    print(f"{FILES:,} files: the inventory job's entry script {sum(runs.seconds.values()):.1f} s",
          flush=True)
    assert code == 0, agent.log_tail()
    txid = agent.checkpoint()
    assert txid is not None
    return txid


def consume_in_memory(queue_url: str) -> MemoryIndexStore:
    """Every message of the listing start's queue, received over HTTP as the event source
    mapping receives it, through the consumer's own code on in-memory stores; the index
    applied to the end."""
    lake, store = MemoryLake(), MemoryIndexStore()
    sequencer = IndexSequencer(MemorySequenceStore(), NamespaceIndex(store, ["/"]), lake)
    consumer = MessageConsumer(lake=lake, sequencer=sequencer, continue_requests=None,
                               log_mode="summary", logger=logging.getLogger("scale.consumer"),
                               senders=ClusterSenders({LISTED: frozenset({MOTO_SENDER_ID})}))
    sqs = boto3.client("sqs")
    arn = sqs.get_queue_attributes(QueueUrl=queue_url,
                                   AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    empty = 0
    while empty < 2:
        got = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=1,
                                  AttributeNames=["All"], MessageAttributeNames=["All"])
        messages = got.get("Messages", [])
        empty = 0 if messages else empty + 1
        for message in messages:
            outcome = consumer.process(QueueMessage.from_lambda_record(
                lambda_record(message, queue_arn=arn, region=REGION)))
            assert outcome.status in ("ingested", "manifest"), outcome
        if messages:
            sqs.delete_message_batch(QueueUrl=queue_url, Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]}
                for i, m in enumerate(messages)])
    report = sequencer.apply_ranges(LISTED, deadline_ms=2**62)
    assert not report.more and not report.skipped_events and not report.bridged, report
    return store


def comparable(item: dict[str, Any]) -> dict[str, Any]:
    """An index item without its key, cluster and TTL; in_shard says where it is stored."""
    entry = {k: v for k, v in item.items() if k not in (
        names.INDEX_PK, names.INDEX_SK, "cluster", names.TTL_ATTRIBUTE)}
    entry["in_shard"] = "//" in item[names.INDEX_PK]
    return entry


def listed_entries(store: MemoryIndexStore) -> dict[str, dict[str, Any]]:
    return {e.path: comparable(plain(entry_to_item(e, now_s=0))) for e in store.entries()
            if e.cluster == LISTED}


def imaged_items() -> Iterator[dict[str, Any]]:
    """The image job's items as the moto server in this process stored them (each its wire
    JSON, decoded as a DynamoDB read decodes it)."""
    from moto.dynamodb.models import dynamodb_backends

    table = dynamodb_backends[ACCOUNT][REGION].get_table(TABLE)
    for partition in list(table.items.values()):
        for stored in list(partition.values()):
            item = plain(from_wire(stored.to_json()["Attributes"]))
            if item.get("cluster") == IMAGED:
                yield comparable(item)


def test_the_fsimage_start_equals_the_listing_start_path_for_path(starts: Starts) -> None:
    inodes = starts.image.summary.files + starts.image.summary.dirs
    assert starts.image_listing_rpcs == 0, "the image start listed the namespace"
    status = read_status(boto3.client("dynamodb"), TABLE, IMAGED)
    assert (status.txid, status.index) == (starts.image_txid, None)  # applied through T

    store = starts.timed("consumer's code over the listing queue, in memory",
                         lambda: consume_in_memory(starts.queues[LISTED]))
    by_listing = starts.timed("listing side as items", partial(listed_entries, store))
    del store  # ~1M entries: only the comparable dicts are kept
    assert len(by_listing) == inodes - 1  # every inode but the root

    children = Counter(p.rsplit("/", 1)[0] or "/" for p in by_listing)
    crowded = {p for p, n in children.items() if n > SHARD_AFTER_WRITES}

    def compare() -> tuple[int, list[Any], set[str], set[str]]:
        seen, differ = 0, []
        hot_image, hot_listing = set(), {p for p, e in by_listing.items() if e.get("shards")}
        for got in imaged_items():
            seen += 1
            path = got["path"]
            if got.get("shards"):
                hot_image.add(path)
            want = by_listing.pop(path, None)
            if want is None:
                differ.append((path, None, got))
                continue
            assert (want["last_txid"], got["last_txid"]) == (
                starts.listed_txid, starts.image_txid), (path, want, got)
            want, got = ({k: v for k, v in e.items() if k not in STARTS_OWN}
                         for e in (want, got))
            if want != got:
                differ.append((path, want, got))
        differ += [(p, e, None) for p, e in by_listing.items()]
        return seen, differ, hot_image, hot_listing

    seen, differ, hot_image, hot_listing = starts.timed(
        "image items read from moto and compared", compare)
    assert seen == inodes - 1
    assert not differ, f"{len(differ):,} paths differ; the first (listing, image): " + "; ".join(
        f"{p}: {want} != {got}" for p, want, got in differ[:SHOWN])
    # Both shard exactly the directories of more than SHARD_AFTER_WRITES children, from their
    # own record on: the walk spreads such a directory's children over chunks (at 1M files
    # /data/clicks and 7 more never got 100 in one), so the consumer goes by the SNAPSHOT
    # record's children_num, the job by the image's count.
    assert hot_image == crowded == hot_listing, (
        sorted(hot_image ^ crowded), sorted(hot_listing ^ crowded))
    print(f"{FILES:,} files: directories sharded: {len(hot_image)} by the job, "
          f"{len(hot_listing)} by the consumer", flush=True)


def test_the_inventory_table_equals_a_listing_of_the_namenode_every_field(
        starts: Starts, tmp_path: Path) -> None:
    from pyspark.sql import functions as F

    from glue_jobs.runtime import local_session

    lines = tmp_path / "listing.jsonl"
    listed = starts.timed("the NameNode's listing of / (listPaths, getQuotaUsage)",
                          lambda: starts.hdfs.run([["tree_lines", "/", str(lines)]])[0])
    inodes = starts.image.summary.files + starts.image.summary.dirs
    assert listed == inodes
    columns = [(n, t) for n, t in INVENTORY_FILE_COLUMNS if n != "image_txid"]
    spark = local_session("scale-inventory", s3a=True)
    try:
        listing = spark.read.schema(", ".join(f"`{n}` {t}" for n, t in columns)).json(
            str(lines))
        # A listing gives files and symlinks no quota; the image stores 0 there.
        listing = listing.select(*(
            F.when(F.col("type") != "DIRECTORY", F.coalesce(F.col(n), F.lit(0)))
            .otherwise(F.col(n)).alias(n) if n in ("ns_quota", "ds_quota") else F.col(n)
            for n, _ in columns))
        table = spark.read.parquet(inventory_location(IMAGED))
        assert table.where(F.col("image_txid") != starts.image_txid).count() == 0
        ours = table.select(*(F.col(n) for n, _ in columns))
        joined = ours.alias("t").join(listing.alias("l"), "path", "full_outer")
        fields = [n for n, _ in columns if n != "path"]
        differ = joined.where(~reduce(and_, [
            F.col(f"t.`{n}`").eqNullSafe(F.col(f"l.`{n}`")) for n in fields])).select(
            "path", *(F.col(f"{side}.`{n}`").alias(f"{side}.{n}") for n in fields
                      for side in ("t", "l")))

        def count() -> tuple[int, int, list[Any]]:
            first = differ.orderBy("path").limit(SHOWN).collect()
            # Each shown path with the fields that differ: (the table's, the listing's).
            return ours.count(), differ.count(), [
                (r["path"], {n: (r[f"t.{n}"], r[f"l.{n}"]) for n in fields
                             if r[f"t.{n}"] != r[f"l.{n}"]}) for r in first]

        rows, n_differ, shown = starts.timed("inventory table against the listing (Spark)",
                                             count)
    finally:
        spark.stop()
    assert rows == inodes
    assert not n_differ, f"{n_differ:,} paths differ; the first, field: (table, listing): " + "; ".join(
        f"{p} {fields}" for p, fields in shown)


def inventory_location(cluster: str) -> str:
    """The run prefix the inventory job published for the cluster (its JSON catalog)."""
    from glue_jobs.catalog import JsonFileCatalog
    from glue_jobs.layout import INVENTORY_LOCAL_CATALOG_KEY, INVENTORY_TABLE
    from glue_jobs.storage import store_for

    catalog = JsonFileCatalog(store_for(f"s3://{LAKE}"), INVENTORY_LOCAL_CATALOG_KEY,
                              INVENTORY_TABLE)
    (location,) = [v for k, v in catalog.locations().items() if k[0] == cluster]
    return location.replace("s3://", "s3a://", 1)
