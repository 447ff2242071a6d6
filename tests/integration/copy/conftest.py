"""The copy worker's world for integration tests: moto server (S3, SQS + DLQ, DynamoDB, SNS,
CloudWatch), a real HDFS (one NameNode + DataNode for the package, tests/kit/hadoop), and an edge
node's `hadoop` first on PATH whose `distcp` and `fs` run Hadoop's own DistCp (S3A source, local
job runner) and FsShell against that cluster (tests/kit/hadoop/edge.py)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest

from hdfs_events import names
from onprem_agent.config import load_config
from onprem_agent.copy_worker.distcp import DistcpRunner
from onprem_agent.copy_worker.listing import HadoopShellLister
from onprem_agent.copy_worker.outcome import OutcomePublisher
from onprem_agent.copy_worker.settings import COPY, CopySettings
from onprem_agent.copy_worker.transfers import TransfersTable
from onprem_agent.copy_worker.worker import CopyWorker
from tests.kit.hadoop.cluster import HdfsCluster
from tests.kit.hadoop.edge import QUICK_START, write_edge_conf, write_hadoop_launcher

REPO = Path(__file__).resolve().parents[3]
BUCKET = "lake-exports"
OTHER_BUCKET = "other-team"
TABLE = "hdfs-events-transfers"
CLUSTER = "test-cluster"


@dataclass
class CopyWorld:
    tmp: Path
    hdfs: HdfsCluster
    log: Path  # the `hadoop` launcher's record of each invocation (argv, pid)
    queue_url: str
    dlq_url: str
    topic_arn: str
    outcomes_url: str  # SQS queue subscribed to the topic
    s3: Any
    sqs: Any
    ddb: Any

    def put(self, key: str, data: bytes, bucket: str = BUCKET) -> None:
        self.s3.put_object(Bucket=bucket, Key=key, Body=data)

    def put_dataset(self, prefix: str, files: dict[str, bytes], success: bool = True) -> None:
        for name, data in files.items():
            self.put(prefix + name, data)
        if success:
            self.put(prefix + "_SUCCESS", b"")

    def invocations(self, command: str = "distcp") -> list[list[str]]:
        return [call["argv"] for call in self.calls(command)]

    def calls(self, command: str = "distcp") -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        calls = [json.loads(line) for line in self.log.read_text().splitlines()]
        return [call for call in calls if call["argv"][:1] == [command]]

    def listing(self, path: str) -> dict[str, int]:
        """Files below `path` in HDFS as the NameNode has them: {relative name: length}."""
        [found] = self.hdfs.run([["list", path]])
        return found

    def read(self, path: str) -> bytes:
        [text] = self.hdfs.run([["read", path]])
        return text.encode()

    def landed(self, path: str) -> dict[str, bytes]:
        """Every file below `path` with its bytes, read back from HDFS."""
        root = path.rstrip("/") + "/"
        return {name: self.read(root + name) for name in sorted(self.listing(path))}

    def item(self, key: str) -> dict[str, Any] | None:
        return TransfersTable(self.ddb, TABLE, cluster=CLUSTER, retention_days=1).get(key)

    def items(self) -> list[dict[str, Any]]:
        from boto3.dynamodb.types import TypeDeserializer

        d = TypeDeserializer()
        raw = self.ddb.scan(TableName=TABLE, ConsistentRead=True)["Items"]
        return [{k: d.deserialize(v) for k, v in item.items()} for item in raw]

    def send(self, body: str) -> str:
        return self.sqs.send_message(QueueUrl=self.queue_url, MessageBody=body)["MessageId"]

    def queue_depth(self, url: str) -> int:
        attrs = self.sqs.get_queue_attributes(
            QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages",
                                          "ApproximateNumberOfMessagesNotVisible"])["Attributes"]
        return sum(int(v) for v in attrs.values())

    def outcomes(self) -> list[dict[str, Any]]:
        found = []
        while True:
            got = self.sqs.receive_message(QueueUrl=self.outcomes_url,
                                           MaxNumberOfMessages=10).get("Messages", [])
            if not got:
                return found
            for m in got:
                found.append(json.loads(json.loads(m["Body"])["Message"]))
                self.sqs.delete_message(QueueUrl=self.outcomes_url,
                                        ReceiptHandle=m["ReceiptHandle"])

    def config(self, **overrides: Any) -> Path:
        copy = {
            "queue_url": self.queue_url,
            "transfers_table": TABLE,
            "notify_topic_arn": self.topic_arn,
            "allowed_sources": [f"s3://{BUCKET}/exports/"],
            "allowed_destinations": ["/data/imports/"],
            "max_concurrent": 2,
            "visibility_timeout_s": 6,
            "heartbeat_s": 2,
            "max_attempts": 3,
            "retry_base_s": 1,
            "retry_max_s": 2,
            "copy_timeout_s": 60,
            "poll_wait_s": 1,
            "retention_days": 1,
        }
        copy.update(overrides)
        lines = [f'cluster = "{CLUSTER}"', "", "[sqs]",
                 'queue_url = "https://sqs.eu-west-1.amazonaws.com/123456789012/events.fifo"',
                 "", "[checkpoint]", 'path = "state/checkpoint.json"', "", "[copy]"]
        lines += [f"{key} = {json.dumps(value)}" for key, value in copy.items()]
        path = self.tmp / "agent.toml"
        path.write_text("\n".join(lines) + "\n")
        return path

    def settings(self, **overrides: Any) -> CopySettings:
        return load_config(self.config(**overrides)).read(COPY)

    def worker(self, settings: CopySettings) -> CopyWorker:
        return CopyWorker(
            settings, sqs=self.sqs, s3=self.s3,
            transfers=TransfersTable(self.ddb, TABLE, cluster=settings.cluster, retention_days=1),
            publisher=OutcomePublisher(sns=boto3.client("sns"),
                                       cloudwatch=boto3.client("cloudwatch"),
                                       cluster=settings.cluster),
            lister=HadoopShellLister(settings.list_command,
                                     remove_command=settings.remove_command),
            run_distcp=DistcpRunner(timeout_s=settings.copy_timeout_s))

    def run_until_idle(self, **overrides: Any) -> int:
        return self.worker(self.settings(**overrides)).run(threading.Event(),
                                                           exit_when_idle=True)

    @contextlib.contextmanager
    def running_worker(self, **overrides: Any) -> Iterator[threading.Thread]:
        """A worker polling in a thread for the duration of the block."""
        stop = threading.Event()
        worker = self.worker(self.settings(**overrides))
        thread = threading.Thread(target=worker.run, args=(stop,), daemon=True)
        thread.start()
        try:
            yield thread
        finally:
            stop.set()
            thread.join(timeout=120)

    def run_until(self, done: Callable[[], bool], timeout_s: float = 60,
                  **overrides: Any) -> None:
        """Runs a worker in a thread until `done()` holds (checked every 0.1 s)."""
        with self.running_worker(**overrides) as thread:
            wait_for(done, timeout_s, thread)

    def start_worker_process(self, config: Path) -> subprocess.Popen[bytes]:
        """`hdfs-events-agent copy-worker` as a process of its own session (killable as a
        whole, like a host going down)."""
        return subprocess.Popen(
            [sys.executable, "-m", "onprem_agent.cli", "copy-worker", "--config", str(config)],
            cwd=REPO, stdout=subprocess.DEVNULL, stderr=open(self.tmp / "worker.log", "ab"),
            start_new_session=True)


def wait_for(condition: Callable[[], object], timeout_s: float = 60,
             thread: threading.Thread | None = None) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert thread is None or thread.is_alive(), "worker loop died"
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.1)


@dataclass(frozen=True)
class EdgeNode:
    hdfs: HdfsCluster
    bin_dir: Path
    log: Path


@pytest.fixture(scope="package")
def edge_node(moto_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[EdgeNode]:
    """One real HDFS for the copy tests (start-up ~6-8 s, 10-15 s on a loaded machine; no test
    restarts or reconfigures it, and `world` empties /data before each) and the `hadoop` an
    edge node has for it:
    the cluster's client conf plus S3A's settings for moto server (credentials from the AWS
    environment variables the session sets)."""
    base = tmp_path_factory.mktemp("copy-hdfs")
    hdfs = HdfsCluster.start(base / "cluster")
    try:
        conf = write_edge_conf(hdfs.conf_dir, base / "edge-conf", s3_endpoint=moto_server,
                               region=os.environ["AWS_DEFAULT_REGION"])
        log = base / "hadoop-calls.jsonl"
        write_hadoop_launcher(base / "bin", conf, log=log, java_options=QUICK_START)
        yield EdgeNode(hdfs=hdfs, bin_dir=base / "bin", log=log)
    finally:
        hdfs.stop()


@pytest.fixture
def world(moto_endpoint: str, edge_node: EdgeNode, tmp_path: Path,
          monkeypatch: pytest.MonkeyPatch) -> CopyWorld:
    monkeypatch.setenv("PATH", f"{edge_node.bin_dir}{os.pathsep}{os.environ['PATH']}")
    edge_node.log.unlink(missing_ok=True)
    edge_node.hdfs.run([["delete", "/data", True]])  # each test starts from an empty /data
    s3 = boto3.client("s3")
    sqs = boto3.client("sqs")
    ddb = boto3.client("dynamodb")
    sns = boto3.client("sns")
    for bucket in (BUCKET, OTHER_BUCKET):
        s3.create_bucket(Bucket=bucket,
                         CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    # Standard queues, as stacks/queues.py deploys them (the worker works on FIFO ones too).
    dlq_url = sqs.create_queue(QueueName="copy-requests-dlq")["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])[
        "Attributes"]["QueueArn"]
    queue_url = sqs.create_queue(QueueName="copy-requests", Attributes={
        "RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 3}),
    })["QueueUrl"]
    ddb.create_table(TableName=TABLE, BillingMode="PAY_PER_REQUEST",
                     KeySchema=[{"AttributeName": names.TRANSFERS_PK, "KeyType": "HASH"}],
                     AttributeDefinitions=[{"AttributeName": names.TRANSFERS_PK,
                                            "AttributeType": "S"}])
    topic_arn = sns.create_topic(Name="copy-outcomes")["TopicArn"]
    outcomes_url = sqs.create_queue(QueueName="copy-outcomes-test")["QueueUrl"]
    outcomes_arn = sqs.get_queue_attributes(QueueUrl=outcomes_url, AttributeNames=["QueueArn"])[
        "Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=topic_arn, Protocol="sqs", Endpoint=outcomes_arn)
    return CopyWorld(tmp=tmp_path, hdfs=edge_node.hdfs, log=edge_node.log, queue_url=queue_url,
                     dlq_url=dlq_url, topic_arn=topic_arn, outcomes_url=outcomes_url, s3=s3,
                     sqs=sqs, ddb=ddb)
