"""verify: a real HDFS listing (the agent's Hadoop client against a real NameNode) against the
namespace index table in moto with planted drift -> report, IndexDrift metric in CloudWatch, an
SNS alert above the threshold."""

from __future__ import annotations

import io
import json

import boto3
import pytest

from hdfs_events import names
from onprem_agent.commands.verify import check
from onprem_agent.live.hadoop import HadoopClient
from onprem_agent.verify import DynamoIndexReader
from tests.kit.index_table import create_index_table

CLUSTER = "prod"
TABLE = "hdfs-events-index"


@pytest.fixture
def index_table(moto_endpoint: str) -> str:
    ddb = boto3.client("dynamodb")
    create_index_table(ddb, TABLE)

    def put(path: str, type_: str, size: int | None, mtime: int, txid: int,
            deleted: bool = False) -> None:
        parent, name = names.split_path(path)
        item = {names.INDEX_PK: {"S": names.index_partition(CLUSTER, parent)},
                names.INDEX_SK: {"S": name}, "type": {"S": type_},
                "mtime": {"N": str(mtime)}, "last_txid": {"N": str(txid)}}
        if size is not None:
            item["size"] = {"N": str(size)}
        if deleted:
            item |= {"deleted": {"BOOL": True}, names.TTL_ATTRIBUTE: {"N": "1900000000"}}
        ddb.put_item(TableName=TABLE, Item=item)

    put("/d", "DIRECTORY", None, 5, 10)
    put("/d/a", "FILE", 10, 5, 11)
    put("/d/b", "FILE", 99, 5, 12)  # size drift
    put("/d/gone", "FILE", 1, 5, 13, deleted=True)  # a delete marker is not an entry
    put("/d/ghost", "FILE", 1, 5, 14)  # extra
    return TABLE


def alert_queue(topic_arn: str) -> str:
    sqs, sns = boto3.client("sqs"), boto3.client("sns")
    url = sqs.create_queue(QueueName="ops-alerts")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"]
    sns.subscribe(TopicArn=topic_arn, Protocol="sqs", Endpoint=arn)
    return url


@pytest.fixture(scope="module")
def listing(hdfs, jvm):
    """/d/a (10 bytes), /d/b (12 bytes), /d/new (10 bytes), every file at mtime 5."""
    hdfs.run([["mkdirs", "/d"], ["write", "/d/a", "x" * 10], ["write", "/d/b", "x" * 12],
              ["write", "/d/new", "x" * 10]])
    hdfs.run([["set_times", f"/d/{name}", 5, 5] for name in ("a", "b", "new")])
    client = HadoopClient(hdfs.uri)
    yield client.lister()
    client.close()


def test_drift_above_threshold_is_reported_measured_and_alerted(index_table, listing):
    topic = boto3.client("sns").create_topic(Name="drift")["TopicArn"]
    queue = alert_queue(topic)
    out = io.StringIO()
    code = check(CLUSTER, ["/d"], lister=listing, reader=DynamoIndexReader(TABLE), threshold=2,
                 topic_arn=topic, out=out)
    assert code == 1
    text = out.getvalue()
    assert "3 differ" in text and "index reached txid 14" in text
    assert "EXTRA in index (not in HDFS): /d/ghost (index at txid 14)" in text
    assert "MISSING in index: /d/new" in text and "/d/gone" not in text
    stats = boto3.client("cloudwatch").get_metric_statistics(
        Namespace=names.METRICS_NAMESPACE, MetricName=names.METRIC_INDEX_DRIFT,
        Dimensions=[{"Name": names.DIMENSION_CLUSTER, "Value": CLUSTER}],
        StartTime="2000-01-01T00:00:00Z", EndTime="2100-01-01T00:00:00Z", Period=60,
        Statistics=["Maximum"])
    assert [p["Maximum"] for p in stats["Datapoints"]] == [3.0]
    [message] = boto3.client("sqs").receive_message(QueueUrl=queue, WaitTimeSeconds=1)[
        "Messages"]
    assert "index drift 3" in json.loads(message["Body"])["Subject"]


def test_drift_within_threshold_only_reports(index_table, listing):
    out = io.StringIO()
    assert check(CLUSTER, ["/d"], lister=listing, reader=DynamoIndexReader(TABLE), threshold=3,
                 topic_arn=None, out=out) == 0
    assert "3 differ" in out.getvalue() and "ALERT" not in out.getvalue()
