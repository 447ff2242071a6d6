"""Storage: the S3 event lake (and its access-log bucket) and the four DynamoDB tables."""

from __future__ import annotations

from aws_cdk import Aws, CfnOutput, Duration, RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from hdfs_events import lake_layout, names
from stacks.settings import DeploySettings

# Athena query results live in the lake bucket under their own prefix, expired after 30 days.
ATHENA_RESULTS_PREFIX = "athena-results/"


def lake_bucket_name(settings: DeploySettings) -> str:
    """A name every stack can derive by itself (account and region make it globally unique),
    so the other stacks' IAM statements name the lake literally instead of importing a token."""
    return f"{settings.prefix}-lake-{Aws.ACCOUNT_ID}-{Aws.REGION}"


def removal_policy(settings: DeploySettings) -> RemovalPolicy:
    return RemovalPolicy.RETAIN if settings.retain_data else RemovalPolicy.DESTROY


class StorageStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, *, settings: DeploySettings,
                 **kwargs: object) -> None:
        super().__init__(scope, construct_id, **kwargs)
        removal = removal_policy(settings)
        auto_delete = settings.auto_delete_objects and not settings.retain_data

        self.lake_key: kms.Key | None = None
        if settings.lake_kms:
            self.lake_key = kms.Key(self, "LakeKey", enable_key_rotation=True,
                                    alias=f"alias/{settings.prefix}-lake",
                                    description="hdfs-events lake bucket", removal_policy=removal)

        # S3 server access logs can only be delivered to a bucket encrypted with SSE-S3.
        self.access_logs = s3.Bucket(
            self, "AccessLogs",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            enforce_ssl=True,
            lifecycle_rules=[s3.LifecycleRule(
                id="expire-access-logs",
                expiration=Duration.days(settings.access_log_expire_days))],
            removal_policy=removal, auto_delete_objects=auto_delete)

        self.lake = s3.Bucket(
            self, "Lake", bucket_name=lake_bucket_name(settings),
            encryption=s3.BucketEncryption.KMS if self.lake_key else
            s3.BucketEncryption.S3_MANAGED,
            encryption_key=self.lake_key,
            # One data key per bucket instead of a KMS call per object: ~99% fewer KMS requests.
            bucket_key_enabled=bool(self.lake_key),
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            enforce_ssl=True,
            versioned=settings.lake_versioned,
            server_access_logs_bucket=self.access_logs,
            server_access_logs_prefix="lake/",
            lifecycle_rules=_lake_lifecycle(settings),
            removal_policy=removal, auto_delete_objects=auto_delete)

        self.state_table = self._table(
            "StateTable", settings, removal,
            partition=names.STATE_PK, sort=names.STATE_SK)
        self.index_table = self._table(
            "IndexTable", settings, removal,
            partition=names.INDEX_PK, sort=names.INDEX_SK)
        self.transfers_table = self._table(
            "TransfersTable", settings, removal, partition=names.TRANSFERS_PK, sort=None)
        # `hdfs-events-agent sync`: replicated txid, running window, pending and parked paths.
        self.sync_table = self._table(
            "SyncTable", settings, removal, partition=names.SYNC_PK, sort=names.SYNC_SK)

        self.settings = settings
        CfnOutput(self, "LakeBucketName", value=self.lake.bucket_name,
                  description="The event lake: raw/, curated/, quarantine/, scripts/")
        CfnOutput(self, "AccessLogBucketName", value=self.access_logs.bucket_name,
                  description="S3 server access logs of the lake")
        CfnOutput(self, "StateTableName", value=self.state_table.table_name,
                  description="Agent state: checkpoint, lease, heartbeat per cluster")
        CfnOutput(self, "IndexTableName", value=self.index_table.table_name,
                  description="Namespace index: partition parent directory, sort name")
        CfnOutput(self, "TransfersTableName", value=self.transfers_table.table_name,
                  description="Copy requests of the return channel and their status")
        CfnOutput(self, "SyncTableName", value=self.sync_table.table_name,
                  description="Sync state: replicated txid, window, pending and parked paths")
        if self.lake_key:
            CfnOutput(self, "LakeKeyArn", value=self.lake_key.key_arn,
                      description="KMS key of the lake bucket")

    def lake_in(self, scope: Construct) -> s3.IBucket:
        """The lake as seen from another stack: by its derived name, with its key."""
        return s3.Bucket.from_bucket_attributes(
            scope, "Lake", bucket_name=lake_bucket_name(self.settings),
            encryption_key=self.lake_key)

    def _table(self, construct_id: str, settings: DeploySettings, removal: RemovalPolicy, *,
               partition: str, sort: str | None) -> dynamodb.Table:
        return dynamodb.Table(
            self, construct_id,
            partition_key=dynamodb.Attribute(name=partition, type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name=sort, type=dynamodb.AttributeType.STRING)
            if sort else None,
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True),
            # AWS-managed key (aws/dynamodb): encrypted, and IAM grants need no KMS statement.
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            time_to_live_attribute=names.TTL_ATTRIBUTE,
            deletion_protection=settings.retain_data,
            removal_policy=removal)


def _lake_lifecycle(settings: DeploySettings) -> list[s3.LifecycleRule]:
    # S3 lifecycle cannot see compaction; raw/ objects expire N days after they were written,
    # N being well past the hourly compaction (settings check N >= 2), so raw/ is gone only
    # after curated/ holds it. Quarantine is evidence for operators: kept longer. raw-audit/
    # (no prefix of raw/'s) is compacted on the same schedule and kept as long.
    rules = [
        s3.LifecycleRule(id="expire-raw", prefix=lake_layout.RAW_PREFIX,
                         expiration=Duration.days(settings.raw_expire_days)),
        s3.LifecycleRule(id="expire-raw-audit", prefix=lake_layout.AUDIT_RAW_PREFIX,
                         expiration=Duration.days(settings.raw_expire_days)),
        s3.LifecycleRule(id="expire-quarantine", prefix=lake_layout.QUARANTINE_PREFIX,
                         expiration=Duration.days(settings.quarantine_expire_days)),
        s3.LifecycleRule(id="abort-incomplete-uploads",
                         abort_incomplete_multipart_upload_after=Duration.days(2)),
        s3.LifecycleRule(id="expire-athena-results", prefix=ATHENA_RESULTS_PREFIX,
                         expiration=Duration.days(30)),
    ]
    if settings.lake_versioned:
        rules.append(s3.LifecycleRule(id="expire-noncurrent",
                                      noncurrent_version_expiration=Duration.days(30)))
    return rules

