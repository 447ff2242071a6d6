"""First start from the fsimage (`[inotify] first_start = "fsimage"`) against the listing start,
on one real NameNode holding the kit's cached 2,000-file namespace (no DataNode).

The image agent fetches the NameNode's checkpoint into the lake, starts the inventory job run
on the moto server's Glue (run here for real by tests/kit/glue_runs.py: the entry script with a
local SparkSession), which writes the index and the sequencer's position at the image's txid T,
then streams from T+1, making no listing RPC (the NameNode's audit log holds no listStatus
while it starts). The listing agent, another cluster name on the same NameNode, starts by
listing. After a few live edits and the consumer applying both queues, the two clusters' index
entries are equal path for path in every attribute but the snapshot's txid (each start's own T;
the index in walk order is the same), and the live edits' entries are equal whole.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from hdfs_events import names
from hdfs_events.dynamodb_json import from_wire
from hdfs_events.index_item import plain
from hdfs_events_cli.index_status import read_status
from tests.integration.hdfs.conftest import create_lake_and_index
from tests.kit.glue_runs import LocalGlueRuns
from tests.kit.hadoop.cluster import HdfsCluster
from tests.kit.hadoop.namespace_image import namespace_image
from tests.kit.image_start import image_agent_config, listing_calls
from tests.kit.ingest_aws import create_apply_queue
from tests.kit.lambda_events import MOTO_SENDER_ID, cluster_senders
from tests.kit.live_agent import AgentProcess

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[3]
LAKE, TABLE, JOB = "lake", "hdfs-events-index", "hdfs-events-namespace-inventory"
LISTED, IMAGED = "listed", "imaged"


@pytest.fixture(scope="module")
def hdfs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HdfsCluster]:
    image = namespace_image(2_000)
    with HdfsCluster.start(tmp_path_factory.mktemp("hdfs"), image=image.name_dir,
                           datanodes=0, heap=image.heap) as cluster:
        yield cluster


def consume(queue_url: str, cluster: str) -> None:
    """The consumer over the cluster's event queue and an apply queue of its own."""
    apply_url = create_apply_queue(boto3.client("sqs"), name=f"{cluster}-apply.fifo")
    env = {**os.environ, names.ENV_LAKE_BUCKET: LAKE, names.ENV_INDEX_TABLE: TABLE,
           names.ENV_INDEX_PREFIXES: "/", names.ENV_APPLY_QUEUE_URL: apply_url,
           names.ENV_LOG_MODE: "summary",
           names.ENV_CLUSTER_SENDERS: cluster_senders({cluster: MOTO_SENDER_ID}),
           "POWERTOOLS_METRICS_NAMESPACE": names.METRICS_NAMESPACE,
           "POWERTOOLS_SERVICE_NAME": "hdfs-events-ingest", "POWERTOOLS_TRACE_DISABLED": "1"}
    done = subprocess.run([sys.executable, "-m", "tests.kit.sqs_lambda", queue_url, apply_url,
                           "--idle-polls", "3"], env=env, capture_output=True, text=True,
                          timeout=600, cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]


def index_entries() -> dict[str, dict[str, dict[str, Any]]]:
    """Cluster -> path -> its entry (the newest item of the path, wherever it is stored),
    without the key, cluster and TTL attributes; `in_shard` says where it is stored."""
    ddb, clusters = boto3.client("dynamodb"), {}
    for page in ddb.get_paginator("scan").paginate(TableName=TABLE):
        for raw in page["Items"]:
            item = plain(from_wire(raw))
            if "cluster" not in item:  # the sequencer's items
                continue
            found = clusters.setdefault(item["cluster"], {})
            # expires_at: a delete marker's TTL counts from when it was written.
            entry = {k: v for k, v in item.items()
                     if k not in (names.INDEX_PK, "cluster", names.TTL_ATTRIBUTE)}
            entry["in_shard"] = "//" in item[names.INDEX_PK]
            held = found.get(item["path"])
            if held is None or (held["last_txid"], held["last_index"]) < (
                    entry["last_txid"], entry["last_index"]):
                found[item["path"]] = entry
    return clusters


def agent_config(directory: Path, hdfs: HdfsCluster, cluster: str, queue_url: str,
                 first_start: str) -> Path:
    return image_agent_config(directory, hdfs, cluster=cluster, queue_url=queue_url,
                              first_start=first_start, bucket=LAKE, inventory_job=JOB,
                              fsimage_extra="part_size_mb = 5\nindex_wait_s = 300\n")


def test_first_start_from_the_fsimage_equals_the_listing_start(hdfs, moto_endpoint, tmp_path):
    create_lake_and_index()
    sqs, glue = boto3.client("sqs"), boto3.client("glue")
    queues = {c: sqs.create_queue(QueueName=f"{c}.fifo", Attributes={
        "FifoQueue": "true"})["QueueUrl"] for c in (LISTED, IMAGED)}
    glue.create_job(Name=JOB, Role="arn:aws:iam::123456789012:role/glue",
                    Command={"Name": "glueetl", "ScriptLocation": "s3://assets/x.py"},
                    DefaultArguments={"--target": f"s3://{LAKE}", "--index_table": TABLE,
                                      "--index_prefixes": "/"})
    listed_before = listing_calls(hdfs)
    imaged_cfg = agent_config(tmp_path / IMAGED, hdfs, IMAGED, queues[IMAGED], "fsimage")
    with LocalGlueRuns(JOB, "glue_jobs.namespace_inventory", os.environ) as runs:
        agent = AgentProcess.start(imaged_cfg)
        try:
            agent.wait_for(lambda: agent.checkpoint() is not None or bool(runs.finished and
                                                                          runs.finished[0][1]),
                           lambda: f"{runs.finished} {agent.log_tail()}", timeout_s=600)
        except BaseException:
            agent.kill()
            raise
    assert [code for _, code, _ in runs.finished] == [0], runs.finished
    image_txid = agent.checkpoint()
    assert image_txid is not None
    assert listing_calls(hdfs) == listed_before, "the image start listed the namespace"
    status = read_status(boto3.client("dynamodb"), TABLE, IMAGED)
    assert (status.txid, status.index) == (image_txid, None)  # applied through T, all of it

    listed = AgentProcess.start(agent_config(tmp_path / LISTED, hdfs, LISTED, queues[LISTED],
                                             "listing"))
    try:
        listed_at = hdfs.txid()
        landing_file = "/user/etl/landing/" + sorted(hdfs.run([["list", "/user/etl/landing"]])[0])[7]
        listed.wait_for_checkpoint(listed_at, timeout_s=180)
        assert listing_calls(hdfs) > listed_before
        # No file data: the NameNode has no DataNode. /tmp/staging (120 children) and
        # /user/etl/landing (200) are hot directories: their children are in shards.
        hdfs.run([["mkdirs", "/live/new/a"], ["rename", "/live/new/a", "/live/new/b"],
                  ["chmod", "/live/new/b", "0700"], ["mkdirs", "/live/gone"],
                  ["delete", "/live/gone", True], ["symlink", "/live/new/b", "/live/ln"],
                  ["rename", "/tmp/staging", "/tmp/staged"],
                  ["chmod", landing_file, "0600"]])
        last = hdfs.txid()
        listed.wait_for_checkpoint(last - 2, timeout_s=120)
        agent.wait_for_checkpoint(last - 2, timeout_s=120)
    finally:
        assert listed.stop() == 0, listed.log_tail()
        assert agent.stop() == 0, agent.log_tail()
    consume(queues[LISTED], LISTED)
    consume(queues[IMAGED], IMAGED)

    entries = index_entries()
    by_listing, by_image = entries[LISTED], entries[IMAGED]
    assert len(by_listing) > 2_000
    # A path made and renamed away after T leaves a delete marker or nothing, as each agent's
    # packing happened to split those two events into chunks: to a reader both are "no such
    # path", so a path only one index holds must be deleted there.
    only = by_listing.keys() ^ by_image.keys()
    assert all((by_listing.get(p) or by_image[p])["deleted"] for p in only), sorted(only)
    snapshot_txid = {LISTED: None, IMAGED: image_txid}
    differ, placed = [], []
    for path, want in by_listing.items():
        if path in only:
            continue
        got = by_image[path]
        if want["last_txid"] <= listed_at:  # from the snapshot: each start's own T
            if (want.get("shards"), want["in_shard"]) != (got.get("shards"), got["in_shard"]):
                placed.append((path, want.get("shards"), want["in_shard"], got.get("shards"),
                               got["in_shard"]))
            snapshot_txid[LISTED] = want["last_txid"]
            assert got["last_txid"] == image_txid, (path, got)
            want, got = ({k: v for k, v in e.items() if k not in ("last_txid", "in_shard")}
                         for e in (want, got))
        if want != got:
            differ.append((path, want, got))
    assert differ == []
    # Where an entry is stored may differ, never what it is: the consumer shards a hot
    # directory from the chunk that first gives it over 100 child writes (children of earlier
    # chunks stay in its own partition), the image job shards it from the start.
    hot = {p for p, e in by_image.items() if e.get("shards")}
    assert hot == {p for p, e in by_listing.items() if e.get("shards")}
    assert {"/user/etl/landing", "/tmp/staging"} <= hot
    assert {p.rsplit("/", 1)[0] for p, *_ in placed} <= hot
    assert by_image["/live/new/b"]["perms"] == "0700"
    assert all(by_image.get(p, {"deleted": True})["deleted"] for p in ("/live/new/a",
                                                                       "/live/gone"))
    assert by_image[landing_file]["perms"] == "0600" and by_image[landing_file]["in_shard"]
    staged = [p for p, e in by_image.items() if p.startswith("/tmp/staged/")]
    assert len(staged) == 120 and not any(by_image[p]["deleted"] for p in staged)
    assert all(by_image[p]["deleted"] for p in by_image if p.startswith("/tmp/staging/"))
