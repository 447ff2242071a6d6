"""The live source plugged into the shipping pipeline unchanged: NameNode double -> real Hadoop
EventBatch objects -> conversion -> filter/packer -> SQS FIFO (moto server) -> DynamoDB
checkpoint, including a purged-edits gap recovered by a snapshot."""

from __future__ import annotations

import base64
import gzip
import json
import threading
from pathlib import Path

import boto3
import pytest

from onprem_agent.checkpoint import DynamoCheckpointStore
from onprem_agent.config import parse_config
from onprem_agent.live.agent import AgentState, gap_reporter, readings, run_term
from onprem_agent.live.convert import JavaBatchConverter
from onprem_agent.live.settings import load_live_settings
from onprem_agent.live.stream import InotifyGapError, LiveStats
from onprem_agent.opsmetrics import Alerts
from onprem_agent.sender import SqsSender
from tests.integration.live.conftest import STATE_TABLE
from tests.unit.live.doubles import ListingDouble, NameNodeDouble, dir_entry, file_entry, unlink

CLUSTER = "prod"


def config_for(queue_url: str, **inotify):
    doc = {"cluster": CLUSTER, "sqs": {"queue_url": queue_url},
           "checkpoint": {"store": "dynamodb", "table": STATE_TABLE, "interval_ms": 10},
           "packing": {"linger_ms": 20},
           "hdfs": {"uri": "hdfs://nameservice1"},
           "inotify": {"poll_timeout_ms": 20, **inotify},
           "metrics": {"heartbeat_interval_s": 0, "prometheus_port": 0}}
    config = parse_config(doc, Path("agent.toml"))
    return config, load_live_settings(config)


@pytest.fixture
def queue(state_table) -> str:
    return boto3.client("sqs").create_queue(
        QueueName="events.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]


def received_paths(queue_url: str) -> list[tuple[int, int, str]]:
    sqs, out = boto3.client("sqs"), []
    while True:
        msgs = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10,
                                   MessageAttributeNames=["All"]).get("Messages", [])
        if not msgs:
            return sorted(out)
        for m in msgs:
            body = json.loads(gzip.decompress(base64.b64decode(m["Body"])))
            out += [(e["txid"], e["index"], e["path"]) for e in body["events"]]
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=m["ReceiptHandle"])


def run_until(nn, config, settings, *, listing=None, until, alerts=None):
    stop, state = threading.Event(), AgentState(stats=LiveStats())

    def watch() -> None:
        while not until(state) and not stop.wait(0.02):
            pass
        stop.set()

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        return state, run_term(
            config, settings, state, stream_source=nn.source(),
            converter=JavaBatchConverter(CLUSTER), lister=listing or ListingDouble([]),
            sender=SqsSender.from_config(config), checkpoint=DynamoCheckpointStore(
                STATE_TABLE, CLUSTER), stop=stop,
            on_gap=gap_reporter(CLUSTER, alerts or Alerts(None), cloudwatch=False))
    finally:
        stop.set()
        watcher.join()


def test_live_events_reach_the_queue_and_the_checkpoint_follows(queue, jvm):
    nn = NameNodeDouble()
    for i in range(30):
        nn.log(unlink(f"/data/{i:02d}"))
    config, settings = config_for(queue)
    DynamoCheckpointStore(STATE_TABLE, CLUSTER).save(10)
    state, result = run_until(nn, config, settings,
                              until=lambda s: s.stats.last_txid == 30 and s.pipeline is not None
                              and s.pipeline.snapshot().checkpoint_txid == 30)
    assert result.events_sent == 20 and result.checkpoint_txid == 30
    assert received_paths(queue) == [(t, 0, f"/data/{t - 1:02d}") for t in range(11, 31)]
    assert DynamoCheckpointStore(STATE_TABLE, CLUSTER).load() == 30
    r = readings(state)
    assert r.events_read() == 20 and r.txid_lag() == 0 and r.leader() == 0.0


def test_purged_edits_are_recovered_by_a_snapshot_then_the_stream(queue, jvm):
    nn = NameNodeDouble()
    for i in range(10):
        nn.log(unlink(f"/data/{i}"))
    nn.purge_before(8)
    DynamoCheckpointStore(STATE_TABLE, CLUSTER).save(2)
    listing = ListingDouble([dir_entry("/data"), file_entry("/data/kept", size=9)])
    config, settings = config_for(queue, gap_policy="snapshot", snapshot_paths=["/data"])
    sns = boto3.client("sns")
    topic = sns.create_topic(Name="alerts")["TopicArn"]
    state, result = run_until(
        nn, config, settings, listing=listing, alerts=Alerts(topic),
        until=lambda s: s.pipeline is not None and s.pipeline.snapshot().checkpoint_txid == 10)
    assert received_paths(queue) == [(10, 0, "/data"), (10, 1, "/data/kept"),
                                     (10, 2, "/data/kept")]
    assert result.checkpoint_txid == 10 and len(state.stats.gaps) == 1


def test_purged_edits_with_policy_stop_end_the_run(queue, jvm):
    nn = NameNodeDouble()
    for i in range(10):
        nn.log(unlink(f"/data/{i}"))
    nn.purge_before(8)
    DynamoCheckpointStore(STATE_TABLE, CLUSTER).save(2)
    config, settings = config_for(queue, gap_policy="stop")
    with pytest.raises(InotifyGapError):
        run_until(nn, config, settings, until=lambda s: False)
    assert DynamoCheckpointStore(STATE_TABLE, CLUSTER).load() == 2
