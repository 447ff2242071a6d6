"""The kit's IAM-enforcing moto server (tests/kit/iam_cloud.py) with the `local` environment
deployed: each principal acts under exactly the policies the templates shipped, and the event
queue's resource policy lets the agents and the cdk.json `extra_senders` send, nobody else.

One server, one synth, one deploy for the module. The synth carries an `extra_senders` entry
naming a role made here, as a site would list its own role, passed the way the CDK CLI passes
`-c` context (CDK_CONTEXT_JSON): the role's unique id exists only once the server made it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from hdfs_events import names
from tests.kit.iam_cloud import IamCloud, Principal
from tests.kit.local_cloud import synth

pytestmark = pytest.mark.slow

CDK_JSON = Path(__file__).resolve().parents[3] / "cdk.json"
AGENT = "OnPremdemoUser"
CONSUMER = "ConsumerRole"
STATE_KEY = {names.STATE_PK: {"S": "demo"}, names.STATE_SK: {"S": "checkpoint"}}


class Site:
    """Two roles of the site's own account, each allowed by its own (the customer's) policy
    to send to the event queue; only `listed` is in cdk.json's extra_senders."""

    def __init__(self, cloud: IamCloud) -> None:
        self.cloud = cloud
        iam = cloud.client("iam")
        trust = json.dumps({"Version": "2012-10-17", "Statement": [{
            "Effect": "Allow", "Action": "sts:AssumeRole",
            "Principal": {"AWS": cloud.admin.arn}}]})
        self.role_ids = {name: iam.create_role(RoleName=name, AssumeRolePolicyDocument=trust)[
            "Role"]["RoleId"] for name in ("site-listed", "site-unlisted")}

    def allow_sending(self, queue_arn: str) -> None:
        for name in self.role_ids:
            self.cloud.client("iam").put_role_policy(
                RoleName=name, PolicyName="send-hdfs-events", PolicyDocument=json.dumps({
                    "Version": "2012-10-17", "Statement": [{
                        "Effect": "Allow", "Action": "sqs:SendMessage",
                        "Resource": queue_arn}]}))

    def session_of(self, name: str) -> Principal:
        iam, sts = self.cloud.client("iam"), self.cloud.client("sts")
        arn = iam.get_role(RoleName=name)["Role"]["Arn"]
        creds = sts.assume_role(RoleArn=arn, RoleSessionName="site-agent")["Credentials"]
        return Principal(name, name, arn, creds["AccessKeyId"], creds["SecretAccessKey"],
                         creds["SessionToken"])


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[IamCloud, Site]]:
    work = tmp_path_factory.mktemp("iam")
    with IamCloud.start(work / "moto.log") as cloud:
        site = Site(cloud)
        context = json.loads(CDK_JSON.read_text())["context"]
        environments = context["environments"]
        local = environments["local"]
        local["extra_senders"] = [*local.get("extra_senders", []),
                                  f"demo={site.role_ids['site-listed']}"]
        cloud.deploy(synth("local", work / "cdk.out", {"environments": environments}))
        site.allow_sending(cloud.outputs["EventQueueArn"])
        yield cloud, site


@pytest.fixture
def cloud(deployed: tuple[IamCloud, Site]) -> IamCloud:
    return deployed[0]


@pytest.fixture
def site(deployed: tuple[IamCloud, Site]) -> Site:
    return deployed[1]


def _denied(call: object) -> str:
    with pytest.raises(ClientError) as caught:
        call()  # type: ignore[operator]
    assert caught.value.response["Error"]["Code"] in ("AccessDenied", "AccessDeniedException",
                                                     "403"), caught.value.response
    return str(caught.value)


def _send(cloud: IamCloud, principal: Principal, queue_url: str, dedup: str) -> None:
    cloud.client("sqs", principal).send_message(
        QueueUrl=queue_url, MessageBody="{}", MessageGroupId="/user/alice",
        MessageDeduplicationId=dedup)


def test_requests_are_authenticated(cloud: IamCloud) -> None:
    stranger = Principal("x", "x", "x", "AKIAIOSFODNN7EXAMPLE", "not-a-key")
    with pytest.raises(ClientError) as caught:
        cloud.client("sqs", stranger).list_queues()
    # moto answers a JSON-protocol call with an XML error: botocore keeps only the status
    assert "InvalidClientTokenId" in str(caught.value)


def test_agent_sends_events_but_not_to_the_dead_letter_queue(cloud: IamCloud) -> None:
    agent = cloud.principal(AGENT)
    _send(cloud, agent, cloud.outputs["EventQueueUrl"], "enforcement-1")
    message = _denied(lambda: _send(cloud, agent, cloud.outputs["EventDlqUrl"], "enforcement-2"))
    assert "sqs:SendMessage" in message and agent.arn in message


def test_agent_sends_batches_under_its_sendmessage_grant(cloud: IamCloud) -> None:
    # AWS authorizes SendMessageBatch as sqs:SendMessage; moto alone would deny it.
    done = cloud.client("sqs", cloud.principal(AGENT)).send_message_batch(
        QueueUrl=cloud.outputs["EventQueueUrl"], Entries=[
            {"Id": "1", "MessageBody": "{}", "MessageGroupId": "/user/bob",
             "MessageDeduplicationId": "enforcement-batch-1"}])
    assert [s["Id"] for s in done["Successful"]] == ["1"]


def test_agent_cannot_delete_its_tables(cloud: IamCloud) -> None:
    ddb = cloud.client("dynamodb", cloud.principal(AGENT))
    assert "dynamodb:DeleteTable" in _denied(
        lambda: ddb.delete_table(TableName=cloud.outputs["StateTableName"]))
    assert cloud.client("dynamodb").describe_table(
        TableName=cloud.outputs["StateTableName"])["Table"]["TableStatus"] == "ACTIVE"


def test_a_table_grant_covers_that_table_only(cloud: IamCloud) -> None:
    admin_ddb = cloud.client("dynamodb")
    admin_ddb.create_table(
        TableName="someone-elses-table", BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                              {"AttributeName": "sk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                   {"AttributeName": "sk", "KeyType": "RANGE"}])
    ddb = cloud.client("dynamodb", cloud.principal(AGENT))
    assert "Item" not in ddb.get_item(TableName=cloud.outputs["StateTableName"], Key=STATE_KEY)
    message = _denied(lambda: ddb.get_item(
        TableName="someone-elses-table", Key={"pk": {"S": "demo"}, "sk": {"S": "checkpoint"}}))
    assert "dynamodb:GetItem" in message


def test_every_table_of_a_batch_must_be_allowed(cloud: IamCloud) -> None:
    consumer = cloud.principal(CONSUMER)
    ddb = cloud.client("dynamodb", consumer)
    index = cloud.outputs["IndexTableName"]
    key = {names.INDEX_PK: {"S": "demo#/user"}, names.INDEX_SK: {"S": "alice"}}
    assert ddb.batch_get_item(RequestItems={index: {"Keys": [key]}})["Responses"] == {index: []}
    # The consumer's policy names the index table, not the agents' state table.
    message = _denied(lambda: ddb.batch_get_item(RequestItems={
        index: {"Keys": [key]}, cloud.outputs["StateTableName"]: {"Keys": [STATE_KEY]}}))
    assert "dynamodb:BatchGetItem" in message


def test_the_consumer_acts_as_its_role(cloud: IamCloud) -> None:
    consumer = cloud.principal(CONSUMER)
    identity = cloud.client("sts", consumer).get_caller_identity()
    assert f":assumed-role/{consumer.name}/" in identity["Arn"]
    # Its continue requests go on the apply queue, which its policy allows; the event queue
    # is the agents' alone.
    _send(cloud, consumer, cloud.outputs["ApplyQueueUrl"], "enforcement-continue")
    message = _denied(lambda: _send(cloud, consumer, cloud.outputs["EventQueueUrl"],
                                    "enforcement-consumer-event"))
    assert "sqs:SendMessage" in message and consumer.name in message


def test_an_agent_cannot_ask_the_consumer_to_apply_ranges(cloud: IamCloud) -> None:
    agent = cloud.principal(AGENT)
    message = _denied(lambda: _send(cloud, agent, cloud.outputs["ApplyQueueUrl"],
                                    "enforcement-agent-continue"))
    assert "sqs:SendMessage" in message and agent.arn in message


def test_an_extra_sender_passes_the_event_queue_deny(cloud: IamCloud, site: Site) -> None:
    _send(cloud, site.session_of("site-listed"), cloud.outputs["EventQueueUrl"],
          "enforcement-site")


def test_a_principal_not_listed_is_denied_by_the_event_queue_policy(
        cloud: IamCloud, site: Site) -> None:
    unlisted = site.session_of("site-unlisted")
    message = _denied(lambda: _send(cloud, unlisted, cloud.outputs["EventQueueUrl"],
                                    "enforcement-stranger"))
    assert "OnlyAgentsSendEvents" in message
    # Its own policy allows the send: the queue policy's explicit Deny is what stopped it.
    assert any("OnlyAgentsSendEvents" in d and "site-unlisted" in d for d in cloud.denials())
    # The administrator is no agent either.
    assert "OnlyAgentsSendEvents" in _denied(lambda: _send(
        cloud, cloud.admin, cloud.outputs["EventQueueUrl"], "enforcement-admin"))


def test_the_agent_reads_and_writes_only_its_own_clusters_items(cloud: IamCloud) -> None:
    # dynamodb:LeadingKeys: the partition key of the item, the batch's keys, the Query's.
    ddb = cloud.client("dynamodb", cloud.principal(AGENT))
    state = cloud.outputs["StateTableName"]
    other = {names.STATE_PK: {"S": "prod"}, names.STATE_SK: {"S": "checkpoint"}}
    assert "dynamodb:LeadingKeys=['prod']" in _denied(
        lambda: ddb.get_item(TableName=state, Key=other))
    _denied(lambda: ddb.put_item(TableName=state, Item=other | {"txid": {"N": "1"}}))
    index = cloud.outputs["IndexTableName"]

    def children(partition: str) -> object:
        return ddb.query(TableName=index, KeyConditionExpression="#p = :p",
                         ExpressionAttributeNames={"#p": names.INDEX_PK},
                         ExpressionAttributeValues={":p": {"S": partition}})

    assert children(names.index_partition("demo", "/data"))["Items"] == []
    _denied(lambda: children(names.index_partition("prod", "/data")))
    # A hot directory's shard partitions (verify reads them) fall under the same grant.
    assert children(names.index_shard_partition("demo", "/data", 15))["Items"] == []
    _denied(lambda: children(names.index_shard_partition("prod", "/data", 15)))


def test_the_agent_publishes_metrics_only_in_its_namespace(cloud: IamCloud) -> None:
    cw = cloud.client("cloudwatch", cloud.principal(AGENT))
    datum = [{"MetricName": "Heartbeat", "Value": 1.0}]
    cw.put_metric_data(Namespace=names.METRICS_NAMESPACE, MetricData=datum)
    assert "cloudwatch:namespace=Other" in _denied(
        lambda: cw.put_metric_data(Namespace="Other", MetricData=datum))


def test_the_agent_lists_only_the_lakes_export_prefix(cloud: IamCloud) -> None:
    s3 = cloud.client("s3", cloud.principal(AGENT))
    bucket = cloud.outputs["LakeBucketName"]
    assert s3.list_objects_v2(Bucket=bucket, Prefix="exports/")["KeyCount"] == 0
    _denied(lambda: s3.list_objects_v2(Bucket=bucket, Prefix="raw/"))
    _denied(lambda: s3.list_objects_v2(Bucket=bucket))
