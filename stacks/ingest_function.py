"""The consumer Lambda: FIFO event queue -> CloudWatch, the S3 lake, the namespace index.

Two event source mappings: the event queue's messages (their lake objects and arrivals), and the
apply queue's continue requests (the index's ranges, lambdas/ingest/consumer.py)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from hdfs_events import lake_layout, names, quarantine
from stacks import nag
from stacks.assets import REPO, MissingAssetError, lambda_package_dir
from stacks.settings import DeploySettings

HANDLER = "lambdas.ingest.handler.handler"
SERVICE_NAME = "hdfs-events-ingest"
# Lambda delivers at most 10 messages per batch from a FIFO queue.
BATCH_SIZE = 10
# The code and its tests run on 3.11. AWS kept python3.11 past Amazon Linux 2's end (2026-06-30):
# deprecated 2027-06-30, function create blocked 2027-07-31, update 2027-08-31 (Lambda's Python
# runtimes table; cfn-lint's runtime data agrees, so tests/infra/test_cfn_lint.py fails from the
# first of those days). Move with the code's Python before then.
RUNTIME = lambda_.Runtime.PYTHON_3_11
ARCHITECTURE = lambda_.Architecture.ARM_64
# What the tests pin is what deploys: the Powertools version comes from this file.
CONSTRAINTS = REPO / "constraints.txt"
POWERTOOLS_DISTRIBUTION = "aws-lambda-powertools"
# Exactly the calls lambdas/ingest makes on the index table (tests/infra check the two agree):
# entries are read and written in batches (BatchGetItem, BatchWriteItem; deletes leave a marker
# with a TTL, never DeleteItem, and a sharded entry's older copy goes by a BatchWriteItem
# DeleteRequest; PutItem one by one when a batch is refused as invalid), children
# listed by Query; arrivals and manifests are PutItem, the sequencer's lease and position one
# item moved by conditional UpdateItem.
INDEX_ACTIONS = ("dynamodb:BatchGetItem", "dynamodb:BatchWriteItem", "dynamodb:Query",
                 "dynamodb:PutItem", "dynamodb:UpdateItem")


def pinned_version(distribution: str, constraints: Path = CONSTRAINTS) -> str:
    """The version `constraints` pins `distribution` to (names compared as pip does)."""
    def canonical(name: str) -> str:
        return re.sub(r"[-_.]+", "-", name).lower()

    for line in constraints.read_text().splitlines():
        name, sep, version = line.split("#", 1)[0].strip().partition("==")
        if sep and canonical(name) == canonical(distribution):
            return version.strip()
    raise MissingAssetError(f"{constraints.name} pins no version of {distribution}: the "
                            "consumer's Powertools layer is resolved by that version")


def powertools_layer_parameter(version: str) -> str:
    """The SSM public parameter Powertools publishes per release, runtime and architecture,
    whose value is the ARN of that release's layer (Powertools install docs, "Lambda Layer":
    /aws/service/powertools/python/{arch}/{python_version}/{version}, the period kept)."""
    return (f"/aws/service/powertools/python/{ARCHITECTURE.name}/{RUNTIME.name}/"
            f"{version}")


class IngestFunction(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, settings: DeploySettings,
                 event_queue: sqs.IQueue, apply_queue: sqs.IQueue, lake: s3.IBucket,
                 index_table: dynamodb.ITable,
                 removal: RemovalPolicy) -> None:
        super().__init__(scope, construct_id)
        self.log_group = logs.LogGroup(self, "Logs", removal_policy=removal)
        # RetentionDays is a named enum; the settings hold the day count CloudWatch takes.
        cfn_log_group: logs.CfnLogGroup = self.log_group.node.default_child  # type: ignore[assignment]
        cfn_log_group.retention_in_days = settings.log_retention_days
        # A role of our own instead of the default one with AWSLambdaBasicExecutionRole: logs
        # go only to this function's group.
        self.role = iam.Role(self, "Role",
                             assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
                             description="hdfs-events consumer Lambda")
        self.role.add_to_policy(iam.PolicyStatement(
            sid="WriteOwnLogs", actions=["logs:CreateLogStream", "logs:PutLogEvents"],
            resources=[self.log_group.log_group_arn]))

        layers = []
        if settings.powertools_layer:
            # The layer of exactly the Powertools version the tests run, not a layer number
            # (numbers are per region and say nothing of the version; the handler needs
            # Metrics.add_dimensions, absent before 3.25). Resolved by CloudFormation at deploy
            # time (a parameter of type AWS::SSM::Parameter::Value<String>): synth stays
            # offline, and a version Powertools has not published fails the deploy before any
            # change, naming the parameter. Chosen over bundling Powertools into the asset:
            # bundling would need pip (network) at synth for the arm64 wheel of wrapt (under
            # aws-xray-sdk), and the asset would grow from ~0.3 MB to ~10 MB unpacked.
            layer_arn = ssm.StringParameter.value_for_string_parameter(
                self, powertools_layer_parameter(pinned_version(POWERTOOLS_DISTRIBUTION)))
            layers.append(lambda_.LayerVersion.from_layer_version_arn(
                self, "Powertools", layer_arn))
        self.function = lambda_.Function(
            self, "Function",
            description="hdfs-events consumer: SQS FIFO -> CloudWatch, S3 lake, DynamoDB index",
            runtime=RUNTIME,
            architecture=ARCHITECTURE,
            handler=HANDLER,
            code=lambda_.Code.from_asset(str(lambda_package_dir())),
            layers=layers,
            role=self.role,
            log_group=self.log_group,
            memory_size=settings.consumer_memory_mb,
            timeout=Duration.seconds(settings.consumer_timeout_seconds),
            tracing=lambda_.Tracing.ACTIVE,
            environment={
                names.ENV_LAKE_BUCKET: lake.bucket_name,
                names.ENV_INDEX_TABLE: index_table.table_name,
                names.ENV_INDEX_PREFIXES: ",".join(settings.index_prefixes),
                names.ENV_LOG_MODE: settings.log_mode,
                names.ENV_APPLY_QUEUE_URL: apply_queue.queue_url,
                "POWERTOOLS_SERVICE_NAME": SERVICE_NAME,
                "POWERTOOLS_METRICS_NAMESPACE": names.METRICS_NAMESPACE,
                "POWERTOOLS_LOG_LEVEL": settings.log_level,
                # Event bodies may be 1 MiB of paths: never log them whole.
                "POWERTOOLS_LOGGER_LOG_EVENT": "false",
            })

        # Plain PutObject, not grant_put (which adds object lock, tagging and Abort*): each
        # message's events go to raw/, refused records to quarantine/, one PUT each.
        self.role.add_to_policy(iam.PolicyStatement(
            sid="WriteLake", actions=["s3:PutObject"],
            resources=[lake.arn_for_objects(f"{lake_layout.RAW_PREFIX}*"),
                       lake.arn_for_objects(f"{lake_layout.QUARANTINE_PREFIX}*")]))
        # Applying a range reads the events of messages other invocations received:
        # back from raw/. Plain GetObject, not grant_read (s3:GetObject*, s3:List*,
        # s3:GetBucket*): the keys come from the arrival items, nothing is listed.
        self.role.add_to_policy(iam.PolicyStatement(
            sid="ReadRawEvents", actions=["s3:GetObject"],
            resources=[lake.arn_for_objects(f"{lake_layout.RAW_PREFIX}*")]))
        # `hdfs-events quarantine redrive`: the consumer reads the records it quarantined
        # (never a body an operator sends) and deletes each once it is moved to
        # quarantine/redriven/ (a PUT under quarantine/, above).
        self.role.add_to_policy(iam.PolicyStatement(
            sid="RedriveQuarantine", actions=["s3:GetObject", "s3:DeleteObject"],
            resources=[lake.arn_for_objects(f"{quarantine.INGEST_PREFIX}*")]))
        if lake.encryption_key is not None:
            # S3 asks KMS as the caller: a data key for each PUT, Decrypt for each GET.
            self.role.add_to_policy(iam.PolicyStatement(
                sid="UseLakeKey", actions=["kms:GenerateDataKey", "kms:Decrypt"],
                resources=[lake.encryption_key.key_arn]))
        index_table.grant(self.function, *INDEX_ACTIONS)
        # Continue requests: an invocation of event messages asks one of the apply queue to
        # apply ranges, and one out of time asks for another.
        self.role.add_to_policy(iam.PolicyStatement(
            sid="SendContinueRequests", actions=["sqs:SendMessage"],
            resources=[apply_queue.queue_arn]))

        self.function.add_event_source(event_sources.SqsEventSource(
            event_queue, batch_size=BATCH_SIZE, report_batch_item_failures=True,
            max_concurrency=settings.consumer_max_concurrency,
            enabled=settings.consumer_mapping_enabled))
        # A group per cluster: one invocation a cluster at a time takes up to ten requests. The
        # lowest concurrency a mapping takes is 2 (one applies, one waits on another cluster).
        self.function.add_event_source(event_sources.SqsEventSource(
            apply_queue, batch_size=BATCH_SIZE, report_batch_item_failures=True,
            max_concurrency=max(2, min(len(settings.clusters), settings.consumer_max_concurrency)),
            enabled=settings.consumer_mapping_enabled))

        nag.ack(self.function, "L1", "Python 3.11 is the runtime the consumer's code and tests "
                "run on (pyproject pins 3.11, as Glue 5.1 does); upgrade both together")
        nag.ack(self.role, "IAM5[Resource::*]", "X-Ray PutTraceSegments/PutTelemetryRecords "
                "(active tracing) support no resource-level permissions")
        nag.ack_lake_prefixes(self.role, settings, [lake_layout.RAW_PREFIX, lake_layout.QUARANTINE_PREFIX,
                                                    quarantine.INGEST_PREFIX])

    def accept_senders(self, senders: Mapping[str, Sequence[str]],
                       users: Sequence[iam.IUser]) -> None:
        """Whose messages the consumer accepts for each cluster (lambdas/ingest/senders.py):
        user ARNs, which the function turns into unique ids with iam:GetUser (CloudFormation
        has no attribute for a user's id), and unique ids (a role's, from Fn::GetAtt)."""
        self.function.add_environment(names.ENV_CLUSTER_SENDERS,
                                      Stack.of(self).to_json_string(dict(senders)))
        if users:
            self.role.add_to_policy(iam.PolicyStatement(
                sid="ResolveAgentUsers", actions=["iam:GetUser"],
                resources=[user.user_arn for user in users]))
