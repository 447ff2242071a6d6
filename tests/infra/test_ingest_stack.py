"""The queues and the consumer Lambda, as synthesized for dev, prod and local."""

from __future__ import annotations

import json

import pytest
from aws_cdk.assertions import Match

from hdfs_events import names
from stacks.queues import MAX_MESSAGE_BYTES
from tests.infra.conftest import Synthesized

pytestmark = pytest.mark.slow


def _queues(s: Synthesized) -> dict[str, dict]:
    return {r["Properties"]["QueueName"]: r for r in s.resources("Ingest", "AWS::SQS::Queue")
            .values()}


def _function(s: Synthesized) -> dict:
    (fn,) = s.resources("Ingest", "AWS::Lambda::Function").values()
    return fn["Properties"]


def test_event_queue_is_high_throughput_fifo_with_1_mib_messages(deployed_env: Synthesized) -> None:
    queue = _queues(deployed_env)[f"hdfs-events-{deployed_env.env}-events.fifo"]["Properties"]
    assert queue["FifoQueue"] is True
    assert queue["DeduplicationScope"] == "messageGroup"
    assert queue["FifoThroughputLimit"] == "perMessageGroupId"
    assert queue["MaximumMessageSize"] == MAX_MESSAGE_BYTES == 1024 * 1024
    assert "ContentBasedDeduplication" not in queue or queue["ContentBasedDeduplication"] is False


def test_every_queue_is_encrypted_and_refuses_plain_http(deployed_env: Synthesized) -> None:
    queues = deployed_env.resources("Ingest", "AWS::SQS::Queue")
    assert len(queues) == 4
    for queue in queues.values():
        assert queue["Properties"]["SqsManagedSseEnabled"] is True
    tls_protected = set()
    for policy in deployed_env.resources("Ingest", "AWS::SQS::QueuePolicy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            if statement.get("Condition") == {"Bool": {"aws:SecureTransport": "false"}}:
                assert statement["Effect"] == "Deny" and statement["Action"] == "sqs:*"
                tls_protected.add(statement["Resource"]["Fn::GetAtt"][0])
    assert tls_protected == set(queues)


def test_each_queue_redrives_to_its_own_dlq(deployed_env: Synthesized) -> None:
    by_id = deployed_env.resources("Ingest", "AWS::SQS::Queue")
    prefix = f"hdfs-events-{deployed_env.env}"
    expected = {f"{prefix}-events.fifo": f"{prefix}-events-dlq.fifo",
                f"{prefix}-copy-requests": f"{prefix}-copy-requests-dlq"}
    for name, dlq_name in expected.items():
        (queue,) = [q for q in by_id.values() if q["Properties"]["QueueName"] == name]
        redrive = queue["Properties"]["RedrivePolicy"]
        assert redrive["maxReceiveCount"] == 5  # the default in stacks/settings.py
        dlq_id = redrive["deadLetterTargetArn"]["Fn::GetAtt"][0]
        dlq = by_id[dlq_id]["Properties"]
        assert dlq["QueueName"] == dlq_name
        assert dlq.get("FifoQueue", False) == name.endswith(".fifo")
        assert dlq["MessageRetentionPeriod"] == 14 * 24 * 3600
        assert "RedrivePolicy" not in dlq


def test_visibility_timeout_is_six_times_the_consumer_timeout(deployed_env: Synthesized) -> None:
    queue = _queues(deployed_env)[f"hdfs-events-{deployed_env.env}-events.fifo"]["Properties"]
    assert queue["VisibilityTimeout"] >= 6 * _function(deployed_env)["Timeout"]


def test_consumer_runs_python_311_on_arm64_with_the_contract_environment(
        deployed_env: Synthesized) -> None:
    fn = _function(deployed_env)
    assert fn["Runtime"] == "python3.11"
    assert fn["Architectures"] == ["arm64"]
    assert fn["Handler"] == "lambdas.ingest.handler.handler"
    assert fn["TracingConfig"] == {"Mode": "Active"}
    env = fn["Environment"]["Variables"]
    assert set(env) == {names.ENV_LAKE_BUCKET, names.ENV_INDEX_TABLE, names.ENV_INDEX_PREFIXES,
                        names.ENV_LOG_MODE, names.ENV_EVENT_QUEUE_URL,
                        "POWERTOOLS_SERVICE_NAME", "POWERTOOLS_METRICS_NAMESPACE",
                        "POWERTOOLS_LOG_LEVEL", "POWERTOOLS_LOGGER_LOG_EVENT"}
    assert env["POWERTOOLS_SERVICE_NAME"] == "hdfs-events-ingest"
    assert env["POWERTOOLS_METRICS_NAMESPACE"] == names.METRICS_NAMESPACE
    assert env["POWERTOOLS_LOGGER_LOG_EVENT"] == "false"
    assert env[names.ENV_LOG_MODE] in names.LOG_MODES
    assert env[names.ENV_INDEX_PREFIXES] == "/"
    assert env[names.ENV_EVENT_QUEUE_URL] == {"Ref": Match.string_like_regexp("EventsQueue")} \
        or "Ref" in env[names.ENV_EVENT_QUEUE_URL]


def test_powertools_layer_is_the_public_arm64_python311_layer_of_the_region(
        dev: Synthesized, local: Synthesized) -> None:
    (layer,) = _function(dev)["Layers"]
    rendered = json.dumps(layer)
    assert "AWSLambdaPowertoolsPythonV3-python311-arm64" in rendered
    assert "017000801446" in rendered and '"AWS::Region"' in rendered
    # moto cannot resolve another account's layer; locally the handler runs in-process.
    assert "Layers" not in _function(local)


def test_sqs_event_source_reports_partial_batch_failures(deployed_env: Synthesized) -> None:
    deployed_env.template("Ingest").has_resource_properties("AWS::Lambda::EventSourceMapping", {
        "BatchSize": 10,
        "FunctionResponseTypes": ["ReportBatchItemFailures"],
        "ScalingConfig": {"MaximumConcurrency": 20 if deployed_env.env == "prod" else 5},
        "Enabled": True,
    })


def test_local_mapping_is_created_disabled(local: Synthesized) -> None:
    # moto would try to run the function in Docker on every send to the queue.
    local.template("Ingest").has_resource_properties("AWS::Lambda::EventSourceMapping", {
        "FunctionResponseTypes": ["ReportBatchItemFailures"], "Enabled": False})


def test_consumer_log_group_keeps_logs_for_the_configured_days(dev: Synthesized,
                                                               prod: Synthesized) -> None:
    dev.template("Ingest").has_resource_properties("AWS::Logs::LogGroup",
                                                   {"RetentionInDays": 30})
    prod.template("Ingest").has_resource_properties("AWS::Logs::LogGroup",
                                                    {"RetentionInDays": 90})
    log_group_id = next(iter(dev.resources("Ingest", "AWS::Logs::LogGroup")))
    assert _function(dev)["LoggingConfig"]["LogGroup"] == {"Ref": log_group_id}


def _consumer_statements(s: Synthesized) -> list[dict]:
    (policy,) = s.resources("Ingest", "AWS::IAM::Policy").values()
    return policy["Properties"]["PolicyDocument"]["Statement"]


def _actions(statement: dict) -> list[str]:
    action = statement["Action"]
    return [action] if isinstance(action, str) else action


def test_consumer_role_is_scoped_to_its_prefixes_table_and_queue(
        deployed_env: Synthesized) -> None:
    statements = _consumer_statements(deployed_env)
    wildcard = [s for s in statements if s["Resource"] == "*"]
    # X-Ray has no resource-level permissions; nothing else may name "*".
    assert {a for s in wildcard for a in _actions(s)} == {"xray:PutTraceSegments",
                                                         "xray:PutTelemetryRecords"}
    puts = [s for s in statements if "s3:PutObject" in _actions(s)]
    put_resources = json.dumps([s["Resource"] for s in puts])
    assert f"/{names.RAW_PREFIX}*" in put_resources
    assert f"/{names.QUARANTINE_PREFIX}*" in put_resources
    assert "curated/" not in put_resources
    for s in statements:
        assert not any(a.endswith(":*") or a == "*" for a in _actions(s)), s
    sends = [s for s in statements if "sqs:SendMessage" in _actions(s)]
    assert sends and all("EventsQueue" in json.dumps(s["Resource"]) for s in sends)
    logs = [s for s in statements if "logs:PutLogEvents" in _actions(s)]
    assert logs and "ConsumerLogs" in json.dumps(logs[0]["Resource"])


def test_consumer_role_has_no_managed_policies(deployed_env: Synthesized) -> None:
    roles = deployed_env.resources("Ingest", "AWS::IAM::Role")
    consumer = [r for r in roles.values() if "lambda.amazonaws.com" in json.dumps(
        r["Properties"]["AssumeRolePolicyDocument"])]
    assert len(consumer) == 1
    assert "ManagedPolicyArns" not in consumer[0]["Properties"]


OUTPUTS = ("EventQueueUrl", "EventDlqUrl", "CopyRequestQueueUrl", "CopyRequestDlqUrl",
           "IngestFunctionName", "IngestLogGroupName")


def test_ingest_outputs_are_named_for_their_use(deployed_env: Synthesized) -> None:
    outputs = deployed_env.templates["Ingest"]["Outputs"]
    for name in OUTPUTS:
        assert outputs[name]["Description"], name
    storage = deployed_env.templates["Storage"]["Outputs"]
    for name in ("LakeBucketName", "StateTableName", "IndexTableName", "TransfersTableName"):
        assert name in storage
    assert "AlertTopicArn" in deployed_env.templates["Monitoring"]["Outputs"]
