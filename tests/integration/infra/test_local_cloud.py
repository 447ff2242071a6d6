"""The `local` environment's own templates deployed into moto server's CloudFormation, as the
demo does it: what moto creates must be usable through boto3 exactly as the outputs say."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from hdfs_events import lake_layout, names
from hdfs_events.continue_request import ContinueRequest
from lambdas.ingest.apply_queue import SqsContinueRequests
from tests.infra.synth import synthesized
from tests.kit.local_cloud import deploy_to_moto

pytestmark = pytest.mark.slow

EXPECTED_OUTPUTS = {
    "EventQueueUrl", "EventDlqUrl", "ApplyQueueUrl", "ApplyDlqUrl", "CopyRequestQueueUrlDemo",
    "CopyRequestDlqUrlDemo",
    "LakeBucketName", "StateTableName", "IndexTableName", "TransfersTableName",
    "IngestFunctionName", "IngestLogGroupName", "AlertTopicArn", "AgentUserNameDemo",
}


@pytest.fixture
def outputs(moto_endpoint: str) -> dict[str, str]:
    return deploy_to_moto(moto_endpoint, "local", assembly=synthesized()["local"])


def test_deploy_returns_every_output_and_no_secret(outputs: dict[str, str]) -> None:
    assert set(outputs) >= EXPECTED_OUTPUTS
    assert not any(k.startswith("ExportsOutput") for k in outputs)
    assert not any("Secret" in k and "Arn" not in k for k in outputs)
    assert outputs["LakeBucketName"] == "hdfs-events-local-lake-123456789012-eu-west-1"


def _queue_and_dlq(sqs: Any, outputs: dict[str, str], name: str) -> tuple[dict[str, str], str]:
    """The attributes of the deployed queue `<name>QueueUrl` and the ARN of `<name>DlqUrl`."""
    attrs = sqs.get_queue_attributes(QueueUrl=outputs[f"{name}QueueUrl"],
                                     AttributeNames=["All"])["Attributes"]
    dlq = sqs.get_queue_attributes(QueueUrl=outputs[f"{name}DlqUrl"],
                                   AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    return attrs, dlq


def test_event_queue_is_fifo_high_throughput_with_its_dlq(outputs: dict[str, str]) -> None:
    sqs = boto3.client("sqs")
    attrs, dlq_arn = _queue_and_dlq(sqs, outputs, "Event")
    assert attrs["FifoQueue"] == "true"
    assert attrs["DeduplicationScope"] == "messageGroup"
    assert attrs["FifoThroughputLimit"] == "perMessageGroupId"
    assert attrs["MaximumMessageSize"] == str(1024 * 1024)
    assert '"maxReceiveCount":5' in attrs["RedrivePolicy"].replace(" ", "")
    assert dlq_arn in attrs["RedrivePolicy"]
    # The agent's first send works against the deployed queue.
    sqs.send_message(QueueUrl=outputs["EventQueueUrl"], MessageBody="{}",
                     MessageGroupId="/user/alice", MessageDeduplicationId="demo-1-1-1")
    assert int(sqs.get_queue_attributes(
        QueueUrl=outputs["EventQueueUrl"], AttributeNames=["ApproximateNumberOfMessages"])[
        "Attributes"]["ApproximateNumberOfMessages"]) == 1


def test_apply_queue_is_fifo_with_its_dlq_and_takes_the_consumers_requests(
        outputs: dict[str, str]) -> None:
    sqs = boto3.client("sqs")
    attrs, dlq_arn = _queue_and_dlq(sqs, outputs, "Apply")
    assert attrs["FifoQueue"] == "true"
    assert attrs["ContentBasedDeduplication"] == "false"
    assert dlq_arn in attrs["RedrivePolicy"]
    # The consumer's continue request, as it sends one, lands on the deployed queue.
    SqsContinueRequests(outputs["ApplyQueueUrl"], sqs).send_continue(ContinueRequest("demo"), key="probe")
    (message,) = sqs.receive_message(QueueUrl=outputs["ApplyQueueUrl"],
                                     MessageAttributeNames=["All"])["Messages"]
    assert message["MessageAttributes"][names.KIND_ATTRIBUTE]["StringValue"] == \
        names.KIND_CONTINUE


def test_tables_have_the_contract_keys(outputs: dict[str, str]) -> None:
    ddb = boto3.client("dynamodb")
    expected = {"StateTableName": [names.STATE_PK, names.STATE_SK],
                "IndexTableName": [names.INDEX_PK, names.INDEX_SK],
                "TransfersTableName": [names.TRANSFERS_PK]}
    for output, keys in expected.items():
        table = ddb.describe_table(TableName=outputs[output])["Table"]
        assert [k["AttributeName"] for k in table["KeySchema"]] == keys
        assert table["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
    ddb.put_item(TableName=outputs["StateTableName"],
                 Item={names.STATE_PK: {"S": "demo"}, names.STATE_SK: {"S": "checkpoint"}})


def test_consumer_function_is_configured_and_its_mapping_disabled(
        outputs: dict[str, str]) -> None:
    lam = boto3.client("lambda")
    config = lam.get_function_configuration(FunctionName=outputs["IngestFunctionName"])
    env = config["Environment"]["Variables"]
    assert env[names.ENV_LAKE_BUCKET] == outputs["LakeBucketName"]
    assert env[names.ENV_INDEX_TABLE] == outputs["IndexTableName"]
    assert env[names.ENV_APPLY_QUEUE_URL] == outputs["ApplyQueueUrl"]
    assert config["Handler"] == "lambdas.ingest.handler.handler"
    assert config["Runtime"] == "python3.11"
    mappings = lam.list_event_source_mappings(
        FunctionName=outputs["IngestFunctionName"])["EventSourceMappings"]
    sqs = boto3.client("sqs")
    # One function, two event sources: the event queue and the apply queue.
    assert sorted(m["EventSourceArn"] for m in mappings) == sorted(
        sqs.get_queue_attributes(QueueUrl=outputs[url], AttributeNames=["QueueArn"])[
            "Attributes"]["QueueArn"] for url in ("EventQueueUrl", "ApplyQueueUrl"))
    assert [(m["State"], m["BatchSize"]) for m in mappings] == [("Disabled", 10)] * 2


def test_lake_bucket_and_agent_user_exist(outputs: dict[str, str]) -> None:
    s3 = boto3.client("s3")
    s3.put_object(Bucket=outputs["LakeBucketName"], Key=f"{lake_layout.RAW_PREFIX}probe", Body=b"x")
    assert s3.get_object(Bucket=outputs["LakeBucketName"],
                         Key=f"{lake_layout.RAW_PREFIX}probe")["Body"].read() == b"x"
    iam = boto3.client("iam")
    user = outputs["AgentUserNameDemo"]
    assert len(iam.list_access_keys(UserName=user)["AccessKeyMetadata"]) == 1
    # moto creates the managed policy but does not attach a CloudFormation user's
    # ManagedPolicyArns (moto 5.2); the template's attachment is asserted in tests/infra.
    local_policies = iam.list_policies(Scope="Local")["Policies"]
    assert "hdfs-events-local-onprem-demo" in {p["PolicyName"] for p in local_policies}
