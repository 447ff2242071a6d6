"""The queues and the consumer Lambda, as synthesized for dev, prod and local."""

from __future__ import annotations

import importlib.metadata
import json

import pytest

from hdfs_events import lake_layout, names
from stacks.assets import MissingAssetError
from stacks.ingest_function import INDEX_ACTIONS, pinned_version
from stacks.queues import MAX_MESSAGE_BYTES
from stacks.settings import SettingsError, load_settings
from tests.infra import aws_calls
from tests.infra.conftest import Synthesized
from tests.infra.synth import REPO

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
    assert len(queues) == 7  # events, apply, a cluster's copy requests (each with a DLQ), drift
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
                f"{prefix}-apply.fifo": f"{prefix}-apply-dlq.fifo",
                # a copy-request queue per cluster (cdk.json: dev -> dev, prod -> prod)
                f"{prefix}-copy-requests-{deployed_env.env}":
                    f"{prefix}-copy-requests-{deployed_env.env}-dlq"}
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


def test_drift_alert_queue_is_standard_keeps_14_days_and_only_verify_and_operators_use_it(
        deployed_env: Synthesized) -> None:
    by_id = deployed_env.resources("Ingest", "AWS::SQS::Queue")
    (queue_id,) = [k for k, q in by_id.items() if q["Properties"]["QueueName"]
                   == f"hdfs-events-{deployed_env.env}-drift-alerts"]
    queue = by_id[queue_id]["Properties"]
    assert "FifoQueue" not in queue and "RedrivePolicy" not in queue
    assert queue["MessageRetentionPeriod"] == 1_209_600  # SQS's maximum
    assert not any(q["Properties"].get("RedrivePolicy", {}).get("deadLetterTargetArn")
                   == {"Fn::GetAtt": [queue_id, "Arn"]} for q in by_id.values())
    arn = {"Fn::GetAtt": [queue_id, "Arn"]}
    granted = {}
    for policy in deployed_env.resources("Ingest", "AWS::IAM::ManagedPolicy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            if statement["Resource"] == arn:
                name = policy["Properties"]["ManagedPolicyName"]
                granted[name] = statement["Action"]
    env = deployed_env.env
    assert granted == {f"hdfs-events-{env}-onprem-{env}": "sqs:SendMessage",
                       f"hdfs-events-{env}-operator-read": ["sqs:ReceiveMessage",
                                                           "sqs:DeleteMessage"]}
    url = deployed_env.templates["Ingest"]["Outputs"]["DriftAlertQueueUrl"]
    assert url["Value"] == {"Ref": queue_id}


def test_visibility_timeout_is_six_times_the_consumer_timeout(deployed_env: Synthesized) -> None:
    queue = _queues(deployed_env)[f"hdfs-events-{deployed_env.env}-events.fifo"]["Properties"]
    assert queue["VisibilityTimeout"] >= 6 * _function(deployed_env)["Timeout"]


def test_consumer_asset_holds_the_consumer_and_the_contract_only(dev: Synthesized) -> None:
    """Not the cloud CLI (hdfs_events_cli) nor the agent: the function ships what it runs."""
    manifest = json.loads((dev.directory / "HdfsEvents-dev-Ingest.assets.json").read_text())
    asset_hash = _function(dev)["Code"]["S3Key"].removesuffix(".zip")
    asset = dev.directory / manifest["files"][asset_hash]["source"]["path"]
    assert sorted(p.name for p in asset.iterdir()) == ["hdfs_events", "lambdas"]


def test_consumer_runs_python_311_on_arm64_with_the_contract_environment(
        deployed_env: Synthesized) -> None:
    fn = _function(deployed_env)
    assert fn["Runtime"] == "python3.11"
    assert fn["Architectures"] == ["arm64"]
    assert fn["Handler"] == "lambdas.ingest.handler.handler"
    assert fn["TracingConfig"] == {"Mode": "Active"}
    env = fn["Environment"]["Variables"]
    assert set(env) == {names.ENV_LAKE_BUCKET, names.ENV_INDEX_TABLE, names.ENV_INDEX_PREFIXES,
                        names.ENV_LOG_MODE, names.ENV_APPLY_QUEUE_URL, names.ENV_CLUSTER_SENDERS,
                        "POWERTOOLS_SERVICE_NAME", "POWERTOOLS_METRICS_NAMESPACE",
                        "POWERTOOLS_LOG_LEVEL", "POWERTOOLS_LOGGER_LOG_EVENT"}
    assert env["POWERTOOLS_SERVICE_NAME"] == "hdfs-events-ingest"
    assert env["POWERTOOLS_METRICS_NAMESPACE"] == names.METRICS_NAMESPACE
    assert env["POWERTOOLS_LOGGER_LOG_EVENT"] == "false"
    assert env[names.ENV_LOG_MODE] in names.LOG_MODES
    assert env[names.ENV_INDEX_PREFIXES] == "/"
    assert env[names.ENV_APPLY_QUEUE_URL] == {"Ref": _queue_id(deployed_env, "apply")}


def test_powertools_layer_is_resolved_at_deploy_by_the_version_the_tests_run(
        deployed_env: Synthesized) -> None:
    (layer,) = _function(deployed_env)["Layers"]
    parameter = deployed_env.templates["Ingest"]["Parameters"][layer["Ref"]]
    # CloudFormation reads the public parameter when it deploys; synth looked nothing up.
    assert parameter["Type"] == "AWS::SSM::Parameter::Value<String>"
    running = importlib.metadata.version("aws-lambda-powertools")
    assert parameter["Default"] == f"/aws/service/powertools/python/arm64/python3.11/{running}"
    assert _function(deployed_env)["Architectures"] == ["arm64"]
    assert _function(deployed_env)["Runtime"] == "python3.11"


def test_local_has_no_layer_nor_public_parameter(local: Synthesized) -> None:
    # moto resolves neither another account's layer nor AWS's public parameters; locally the
    # handler runs in-process.
    assert "Layers" not in _function(local)
    assert not any("powertools" in p for p in local.templates["Ingest"].get("Parameters", {}))


def test_a_layer_number_in_cdk_json_is_refused_naming_the_key() -> None:
    context = {"environments": {"dev": {"powertools_layer_version": 27}}}
    with pytest.raises(SettingsError, match=r"environments\.dev: unknown setting\(s\) "
                       r"\['powertools_layer_version'\]"):
        load_settings(context, "dev")


def test_powertools_version_comes_from_the_constraints_pin(tmp_path) -> None:
    constraints = tmp_path / "constraints.txt"
    constraints.write_text("aws-xray-sdk==2.15.0\naws_lambda_powertools==3.99.1  # pinned\n")
    assert pinned_version("aws-lambda-powertools", constraints) == "3.99.1"
    constraints.write_text("aws-xray-sdk==2.15.0\n")
    with pytest.raises(MissingAssetError, match="pins no version of aws-lambda-powertools"):
        pinned_version("aws-lambda-powertools", constraints)


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
    assert f"/{lake_layout.RAW_PREFIX}*" in put_resources
    assert f"/{lake_layout.QUARANTINE_PREFIX}*" in put_resources
    assert "curated/" not in put_resources
    for s in statements:
        assert not any(a.endswith(":*") or a == "*" for a in _actions(s)), s
    sends = [s for s in statements if "sqs:SendMessage" in _actions(s)]
    assert sends and all("ApplyQueue" in json.dumps(s["Resource"]) for s in sends)
    logs = [s for s in statements if "logs:PutLogEvents" in _actions(s)]
    assert logs and "ConsumerLogs" in json.dumps(logs[0]["Resource"])


def test_consumer_role_has_no_managed_policies(deployed_env: Synthesized) -> None:
    roles = deployed_env.resources("Ingest", "AWS::IAM::Role")
    consumer = [r for r in roles.values() if "lambda.amazonaws.com" in json.dumps(
        r["Properties"]["AssumeRolePolicyDocument"])]
    assert len(consumer) == 1
    assert "ManagedPolicyArns" not in consumer[0]["Properties"]


OUTPUTS = ("EventQueueUrl", "EventDlqUrl", "IngestFunctionName", "IngestLogGroupName",
           "DriftAlertQueueUrl")


def test_ingest_outputs_are_named_for_their_use(deployed_env: Synthesized) -> None:
    outputs = deployed_env.templates["Ingest"]["Outputs"]
    cluster = deployed_env.env.capitalize()  # its one cluster's output suffix
    for name in (*OUTPUTS, f"CopyRequestQueueUrl{cluster}", f"CopyRequestDlqUrl{cluster}"):
        assert outputs[name]["Description"], name
    storage = deployed_env.templates["Storage"]["Outputs"]
    for name in ("LakeBucketName", "StateTableName", "IndexTableName", "TransfersTableName"):
        assert name in storage
    assert "AlertTopicArn" in deployed_env.templates["Monitoring"]["Outputs"]


# --- what the consumer may do, against what its code calls ------------------------------------

def _consumer_actions(service: str) -> set[str]:
    """IAM actions of the consumer's calls of `service`, as tests/infra/aws_calls.py reads
    them from lambdas/ingest (test_grants_cover_calls.py guards that scan)."""
    return {a for c in aws_calls.calls_of("consumer") if c.service == service
            for a in aws_calls.actions_of(c.service, c.operation)}


def _by_action(s: Synthesized, prefix: str) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = {}
    for statement in _consumer_statements(s):
        for action in _actions(statement):
            if action.startswith(prefix):
                found.setdefault(action, []).append(statement)
    return found


def test_consumer_may_make_exactly_the_index_table_calls_its_code_makes(
        deployed_env: Synthesized) -> None:
    granted = _by_action(deployed_env, "dynamodb:")
    # Sequencer lease and position: conditional UpdateItem; entries: BatchGetItem,
    # BatchWriteItem, Query (PutItem when a batch is refused); arrivals and manifests: PutItem.
    # Nothing deletes (a delete leaves a marker with a TTL).
    assert set(granted) == _consumer_actions("dynamodb") == set(INDEX_ACTIONS)
    for statements in granted.values():
        for statement in statements:
            assert "IndexTable" in json.dumps(statement["Resource"]), statement
            for table in ("StateTable", "TransfersTable", "/index/"):
                assert table not in json.dumps(statement["Resource"]), statement


def test_consumer_reads_back_only_raw_objects_and_its_quarantine_records(
        deployed_env: Synthesized) -> None:
    reads = [s for s in _consumer_statements(deployed_env)
             if any(a.startswith("s3:Get") or a.startswith("s3:List") for a in _actions(s))]
    # Applying ranges reads the events of messages other invocations received: it reads their raw/
    # objects by key. A redrive reads its own quarantine records by key and deletes each it
    # moved. Nothing is listed; nothing else is read.
    assert [_actions(s) for s in reads] == [["s3:GetObject"],
                                            ["s3:GetObject", "s3:DeleteObject"]]
    for statement, prefix in zip(reads, (lake_layout.RAW_PREFIX, "quarantine/ingest/"), strict=True):
        assert statement["Resource"] == {"Fn::Join": ["", [
            "arn:", {"Ref": "AWS::Partition"}, f":s3:::hdfs-events-{deployed_env.env}-lake-",
            {"Ref": "AWS::AccountId"}, "-", {"Ref": "AWS::Region"}, f"/{prefix}*"]]}
    called = _consumer_actions("s3")
    assert called <= set(_by_action(deployed_env, "s3:")), called


def test_consumer_may_decrypt_the_kms_lake_it_reads(prod: Synthesized, dev: Synthesized) -> None:
    decrypt = _by_action(prod, "kms:Decrypt")["kms:Decrypt"]
    assert decrypt and all("LakeKey" in json.dumps(s["Resource"]) for s in decrypt)
    assert "kms:Decrypt" not in _by_action(dev, "kms:")  # dev's lake is SSE-S3


def test_consumer_sends_continue_requests_only_to_its_apply_queue(
        deployed_env: Synthesized) -> None:
    sends = _by_action(deployed_env, "sqs:SendMessage")["sqs:SendMessage"]
    assert _consumer_actions("sqs") == {"sqs:SendMessage"}
    assert [json.dumps(s["Resource"]) for s in sends] == [
        json.dumps({"Fn::GetAtt": [_queue_id(deployed_env, "apply"), "Arn"]})]
    statements = {st["Sid"]: st for p in deployed_env.resources(
        "Ingest", "AWS::SQS::QueuePolicy").values()
        for st in p["Properties"]["PolicyDocument"]["Statement"] if "Sid" in st}
    # The apply queue refuses every other sender; the event queue refuses the consumer.
    only_consumer = statements["OnlyConsumerSendsRequests"]
    assert only_consumer["Effect"] == "Deny" and only_consumer["Condition"] == {
        "ArnNotEquals": {"aws:PrincipalArn": {"Fn::GetAtt": [_role_id(deployed_env), "Arn"]}}}
    assert "ConsumerRole" not in json.dumps(statements["OnlyAgentsSendEvents"]["Condition"])


def test_the_apply_queue_is_the_functions_second_event_source(deployed_env: Synthesized) -> None:
    """Continue requests come in batches of up to ten a cluster (its FIFO group), on a mapping
    of their own: invocations of event messages never wait for the index."""
    mappings = deployed_env.resources("Ingest", "AWS::Lambda::EventSourceMapping").values()
    sources = {m["Properties"]["EventSourceArn"]["Fn::GetAtt"][0]: m["Properties"]
               for m in mappings}
    assert set(sources) == {_queue_id(deployed_env, "events"), _queue_id(deployed_env, "apply")}
    apply = sources[_queue_id(deployed_env, "apply")]
    assert apply["BatchSize"] == 10 and apply["FunctionResponseTypes"] == [
        "ReportBatchItemFailures"]
    assert apply["ScalingConfig"] == {"MaximumConcurrency": 2}  # one cluster: the least SQS takes
    queue = deployed_env.resources("Ingest", "AWS::SQS::Queue")[_queue_id(deployed_env, "apply")]
    assert queue["Properties"]["FifoQueue"] is True
    assert queue["Properties"]["ContentBasedDeduplication"] is False


def _queue_id(s: Synthesized, name: str) -> str:
    (queue_id,) = [k for k, r in s.resources("Ingest", "AWS::SQS::Queue").items()
                   if r["Properties"]["QueueName"] == f"hdfs-events-{s.env}-{name}.fifo"]
    return queue_id


def _role_id(s: Synthesized) -> str:
    (role_id,) = [k for k in s.resources("Ingest", "AWS::IAM::Role") if k.startswith(
        "ConsumerRole")]
    return role_id


def test_each_cluster_is_accepted_only_from_its_own_principals(deployed_env: Synthesized,
                                                               local: Synthesized) -> None:
    """CLUSTER_SENDERS names each cluster's user (by ARN) and Roles Anywhere role (by its
    unique id); the consumer may look up exactly those users."""
    env = _function(deployed_env)["Environment"]["Variables"][names.ENV_CLUSTER_SENDERS]
    rendered = json.dumps(env)
    users = deployed_env.resources("Ingest", "AWS::IAM::User")
    roles = {k: r for k, r in deployed_env.resources("Ingest", "AWS::IAM::Role").items()
             if "rolesanywhere" in json.dumps(r["Properties"]["AssumeRolePolicyDocument"])}
    assert users and roles
    for user_id in users:
        assert json.dumps({"Fn::GetAtt": [user_id, "Arn"]}) in rendered
    for role_id in roles:
        assert json.dumps({"Fn::GetAtt": [role_id, "RoleId"]}) in rendered
    assert _consumer_actions("iam") == {"iam:GetUser"}
    (lookup,) = _by_action(deployed_env, "iam:GetUser")["iam:GetUser"]
    assert _actions(lookup) == ["iam:GetUser"]
    resources = lookup["Resource"] if isinstance(lookup["Resource"], list) else [
        lookup["Resource"]]
    assert sorted(json.dumps(r) for r in resources) == sorted(
        json.dumps({"Fn::GetAtt": [user_id, "Arn"]}) for user_id in users)
    # moto gives every message one fixed SenderId: `local` accepts it for its one cluster.
    local_env = json.dumps(_function(local)["Environment"]["Variables"][
        names.ENV_CLUSTER_SENDERS])
    assert "AIDAIT2UOQQY3AUEKVGXU" in local_env


def test_foreign_senders_alarm_per_cluster(deployed_env: Synthesized) -> None:
    alarms = deployed_env.resources("Monitoring", "AWS::CloudWatch::Alarm").values()
    foreign = [a["Properties"] for a in alarms
               if a["Properties"].get("MetricName") == names.METRIC_FOREIGN_SENDER]
    context = json.loads((REPO / "cdk.json").read_text())["context"]
    clusters = load_settings(context, deployed_env.env).clusters
    assert {a["Dimensions"][0]["Value"] for a in foreign} == set(clusters)
    assert all(a["Threshold"] == 1 and a["Statistic"] == "Sum" for a in foreign)
