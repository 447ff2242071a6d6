"""The consumer Lambda: FIFO event queue -> CloudWatch, the S3 lake, the namespace index."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from hdfs_events import names
from stacks import nag
from stacks.assets import lambda_package_dir
from stacks.settings import DeploySettings

HANDLER = "lambdas.ingest.handler.handler"
SERVICE_NAME = "hdfs-events-ingest"
# Lambda delivers at most 10 messages per batch from a FIFO queue.
BATCH_SIZE = 10
POWERTOOLS_ACCOUNT = "017000801446"  # publisher of the public Powertools for AWS Lambda layers
# Exactly the calls lambdas/ingest makes on the index table (tests/infra check the two agree):
# entries are read and written in batches (BatchGetItem, BatchWriteItem; deletes leave a marker
# with a TTL, never DeleteItem; PutItem one by one when a batch is refused as invalid), children
# listed by Query; arrivals and manifests are PutItem, the sequencer's lease and position one
# item moved by conditional UpdateItem.
INDEX_ACTIONS = ("dynamodb:BatchGetItem", "dynamodb:BatchWriteItem", "dynamodb:Query",
                 "dynamodb:PutItem", "dynamodb:UpdateItem")


def powertools_layer_arn(stack: Stack, version: int) -> str:
    """The public Powertools V3 layer for python3.11 on arm64 in the stack's own region."""
    return (f"arn:{stack.partition}:lambda:{stack.region}:{POWERTOOLS_ACCOUNT}:layer:"
            f"AWSLambdaPowertoolsPythonV3-python311-arm64:{version}")


class IngestFunction(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, settings: DeploySettings,
                 event_queue: sqs.IQueue, lake: s3.IBucket, index_table: dynamodb.ITable,
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

        stack = Stack.of(self)
        layers = []
        if settings.powertools_layer:
            layers.append(lambda_.LayerVersion.from_layer_version_arn(
                self, "Powertools",
                powertools_layer_arn(stack, settings.powertools_layer_version)))
        self.function = lambda_.Function(
            self, "Function",
            description="hdfs-events consumer: SQS FIFO -> CloudWatch, S3 lake, DynamoDB index",
            runtime=lambda_.Runtime.PYTHON_3_11,  # the code and its tests run on 3.11
            architecture=lambda_.Architecture.ARM_64,
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
                names.ENV_EVENT_QUEUE_URL: event_queue.queue_url,
                "POWERTOOLS_SERVICE_NAME": SERVICE_NAME,
                "POWERTOOLS_METRICS_NAMESPACE": names.METRICS_NAMESPACE,
                "POWERTOOLS_LOG_LEVEL": settings.log_level,
                # Event bodies may be 1 MiB of paths: never log them whole.
                "POWERTOOLS_LOGGER_LOG_EVENT": "false",
            })

        lake.grant_put(self.function, f"{names.RAW_PREFIX}*")
        lake.grant_put(self.function, f"{names.QUARANTINE_PREFIX}*")
        # Applying a range reads the events of messages other invocations received:
        # back from raw/. Plain GetObject, not grant_read (s3:GetObject*, s3:List*,
        # s3:GetBucket*): the keys come from the arrival items, nothing is listed.
        self.role.add_to_policy(iam.PolicyStatement(
            sid="ReadRawEvents", actions=["s3:GetObject"],
            resources=[lake.arn_for_objects(f"{names.RAW_PREFIX}*")]))
        if lake.encryption_key is not None:
            lake.encryption_key.grant_decrypt(self.function)
        index_table.grant(self.function, *INDEX_ACTIONS)
        # Continue requests: applying ranges out of time asks a later invocation to go on.
        self.role.add_to_policy(iam.PolicyStatement(
            sid="SendContinueRequests", actions=["sqs:SendMessage"],
            resources=[event_queue.queue_arn]))

        self.function.add_event_source(event_sources.SqsEventSource(
            event_queue, batch_size=BATCH_SIZE, report_batch_item_failures=True,
            max_concurrency=settings.consumer_max_concurrency,
            enabled=settings.consumer_mapping_enabled))

        nag.ack(self.function, "L1", "Python 3.11 is the runtime the consumer's code and tests "
                "run on (pyproject pins 3.11, as Glue 5.1 does); upgrade both together")
        nag.ack(self.role, "IAM5[Resource::*]", "X-Ray PutTraceSegments/PutTelemetryRecords "
                "(active tracing) support no resource-level permissions")
        nag.ack_actions(self.role, ["s3:Abort*",
                                    *(nag.LAKE_KEY_ACTIONS if settings.lake_kms else ())])
        nag.ack_lake_prefixes(self.role, settings, [names.RAW_PREFIX, names.QUARANTINE_PREFIX])

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
