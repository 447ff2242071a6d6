"""The live source plugged into the shipping pipeline unchanged: NameNode double -> real Hadoop
EventBatch objects -> conversion -> filter/packer -> SQS FIFO (moto server) -> DynamoDB
checkpoint, including purged edits: a GAP record, then SNAPSHOT records or (policy stop) a
non-zero exit."""

from __future__ import annotations

import base64
import gzip
import json
import threading
from itertools import pairwise
from pathlib import Path

import boto3
import pytest

from hdfs_events.event import HdfsEvent, INodeType
from hdfs_events.manifest import Manifest, decode_manifest, is_manifest
from hdfs_events.schema import validator
from onprem_agent.checkpoint import DynamoCheckpointStore
from onprem_agent.cli import main
from onprem_agent.config import parse_config
from onprem_agent.live.agent import AgentState, gap_reporter, readings, run_term
from onprem_agent.live.convert import JavaBatchConverter
from onprem_agent.live.settings import load_live_settings
from onprem_agent.live.stream import InotifyGapError, LiveStats, StreamSource
from onprem_agent.opsmetrics import Alerts
from onprem_agent.sender import SqsSender
from tests.integration.live.conftest import STATE_TABLE
from tests.unit.live.doubles import ListingDouble, NameNodeDouble, dir_entry, file_entry, unlink

CLUSTER = "prod"


def config_for(queue_url: str, filter: tuple[str, ...] = (), **inotify):
    doc = {"cluster": CLUSTER, "sqs": {"queue_url": queue_url},
           "filter": {"cover_dirs": list(filter)},
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


def receive_all(queue_url: str) -> tuple[list[dict], list[Manifest]]:
    """Every event (as the JSON the consumer reads) and every manifest in the queue."""
    sqs, events, manifests = boto3.client("sqs"), [], []
    while True:
        msgs = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10,
                                   MessageAttributeNames=["All"]).get("Messages", [])
        if not msgs:
            return sorted(events, key=lambda e: (e["txid"], e["index"])), manifests
        for m in msgs:
            if is_manifest(m.get("MessageAttributes")):
                manifests.append(decode_manifest(m["Body"]))
            else:
                events += json.loads(gzip.decompress(base64.b64decode(m["Body"])))["events"]
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=m["ReceiptHandle"])


def received_events(queue_url: str) -> list[dict]:
    return receive_all(queue_url)[0]


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
    events, manifests = receive_all(queue)
    assert [(e["txid"], e["index"], e["path"]) for e in events] == [
        (t, 0, f"/data/{t - 1:02d}") for t in range(11, 31)]
    # The manifests' ranges run from the checkpoint it resumed from to the one it saved.
    assert manifests[0].after == 10 and manifests[-1].end == 30
    assert all(b.after == a.end for a, b in pairwise(manifests))
    assert DynamoCheckpointStore(STATE_TABLE, CLUSTER).load() == 30
    r = readings(state)
    assert r.events_read() == 20 and r.txid_lag() == 0 and r.leader() == 0.0


def test_purged_edits_reach_the_queue_as_a_gap_then_a_snapshot_then_the_stream(queue, jvm):
    nn = NameNodeDouble()
    for i in range(10):
        nn.log(unlink(f"/data/{i}"))
    nn.purge_before(8)
    DynamoCheckpointStore(STATE_TABLE, CLUSTER).save(2)
    listing = ListingDouble([dir_entry("/data"), file_entry("/data/kept", size=9),
                             dir_entry("/other")])
    config, settings = config_for(queue, gap_policy="snapshot", filter=["/data"])
    sns = boto3.client("sns")
    topic = sns.create_topic(Name="alerts")["TopicArn"]
    state, result = run_until(
        nn, config, settings, listing=listing, alerts=Alerts(topic),
        until=lambda s: s.pipeline is not None and s.pipeline.snapshot().checkpoint_txid == 10)
    events = received_events(queue)
    check = validator("event")
    assert all(not list(check.iter_errors(e)) for e in events)
    # The GAP passes the [filter] cover_dirs although its path is "/".
    assert [(e["txid"], e["index"], e["type"], e["path"]) for e in events] == [
        (3, 0, "GAP", "/"), (10, 0, "SNAPSHOT", "/data"), (10, 1, "SNAPSHOT", "/data/kept")]
    gap, data, kept = (HdfsEvent.from_dict(e) for e in events)
    assert gap.gap_end_txid == 8 and gap.cluster == CLUSTER
    assert (data.inode_type, data.size, kept.inode_type, kept.size) == (
        INodeType.DIRECTORY, None, INodeType.FILE, 9)
    assert data.timestamp == kept.timestamp >= gap.timestamp
    assert result.checkpoint_txid == 10 and len(state.stats.gaps) == 1
    assert readings(state).gaps() == 1


def test_purged_edits_with_policy_stop_ship_the_gap_and_end_the_run(queue, jvm):
    nn = NameNodeDouble()
    for i in range(10):
        nn.log(unlink(f"/data/{i}"))
    nn.purge_before(8)
    DynamoCheckpointStore(STATE_TABLE, CLUSTER).save(2)
    config, settings = config_for(queue, gap_policy="stop")
    with pytest.raises(InotifyGapError):
        run_until(nn, config, settings, until=lambda s: False)
    assert [(e["txid"], e["type"], e["gap_end_txid"]) for e in received_events(queue)] == [
        (3, "GAP", 8)]
    # Below the gap, not on it: a restart meets the same gap and writes the same GAP key.
    assert DynamoCheckpointStore(STATE_TABLE, CLUSTER).load() == 2


def test_the_run_command_with_policy_stop_sends_the_gap_and_exits_3(
        queue, jvm, tmp_path, monkeypatch, capsys):
    nn = NameNodeDouble()
    for i in range(6):
        nn.log(unlink(f"/data/{i}"))
    nn.skip(3)  # txids 7..9 yield no event

    class PurgedWhileIdle:
        """Once the agent has read everything (up to txid 9), the NameNode purges 10..11."""

        def __init__(self, stream) -> None:
            self._stream = stream

        def poll(self, *timeout):
            batch = self._stream.poll(*timeout)
            if batch is None and nn.first_available == 1:
                nn.skip(2)
                nn.purge_before(12)
                nn.log(unlink("/data/late"))
            return batch

        def getTxidsBehindEstimate(self) -> int:
            return self._stream.getTxidsBehindEstimate()

    class NameNodeClient:  # the one part of `run` that needs a real NameNode
        def __init__(self, uri: str, conf: object) -> None:
            pass

        def stream_source(self):
            return StreamSource(open_stream=lambda after: PurgedWhileIdle(nn.open_stream(after)),
                                current_txid=lambda: nn.last_txid)

        def lister(self):
            return ListingDouble([])

    monkeypatch.setattr("onprem_agent.live.hadoop.HadoopClient", NameNodeClient)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # pyspark's Hadoop jars, as the jvm fixture
    monkeypatch.delenv("HADOOP_CLASSPATH", raising=False)
    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    path = tmp_path / "agent.toml"
    path.write_text(
        f'cluster = "{CLUSTER}"\n[sqs]\nqueue_url = "{queue}"\n'
        f'[checkpoint]\nstore = "dynamodb"\ntable = "{STATE_TABLE}"\ninterval_ms = 10\n'
        '[packing]\nlinger_ms = 20\n[hdfs]\nuri = "hdfs://nameservice1"\n'
        '[inotify]\npoll_timeout_ms = 20\ngap_policy = "stop"\n'
        '[metrics]\nprometheus_port = 0\nheartbeat_interval_s = 0\n')
    DynamoCheckpointStore(STATE_TABLE, CLUSTER).save(4)
    assert main(["run", "--config", str(path)]) == 3
    assert "needed txid 10" in capsys.readouterr().err
    events = received_events(queue)
    assert [(e["txid"], e["index"], e["type"]) for e in events] == [
        (5, 0, "UNLINK"), (6, 0, "UNLINK"), (10, 0, "GAP")]
    assert events[-1]["gap_end_txid"] == 12
    # Everything below the gap is in, the txids without events included; the gap itself is
    # not passed, so a restart reads after txid 9 and meets the same gap: GAP key (prod, 10, 0).
    assert DynamoCheckpointStore(STATE_TABLE, CLUSTER).load() == 9
