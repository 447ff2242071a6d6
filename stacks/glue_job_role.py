"""The Glue jobs' role: exactly the calls the jobs make, and the cdk-nag findings of its
wildcards, each with its reason."""

from __future__ import annotations

from aws_cdk import Aws, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3

from hdfs_events import lake_layout
from stacks import nag
from stacks.lake_tables import LakeTables
from stacks.settings import DeploySettings

GLUE_QUARANTINE = f"{lake_layout.QUARANTINE_PREFIX}glue/"
# lake_layout.fsimage_indexed_key of any cluster and txid.
IMAGE_INDEXED = f"{lake_layout.FSIMAGE_PREFIX}cluster=*/txid=*/_indexed.json"


class GlueJobRole:
    """Not a Construct: the role keeps the stack as its scope, so its CloudFormation logical ID
    (and its default policy's) stay those already deployed."""

    def __init__(self, stack: Stack, *, settings: DeploySettings, lake: s3.IBucket,
                 lake_key: kms.IKey | None, index_table: dynamodb.ITable, job_key: kms.IKey,
                 tables: LakeTables, attribution_logs: logs.ILogGroup) -> None:
        self.role = iam.Role(
            stack, "JobRole", assumed_by=iam.ServicePrincipal("glue.amazonaws.com"),
            description="hdfs-events Glue jobs",
            managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(
                "service-role/AWSGlueServiceRole")])
        self._grant_job_calls(lake, lake_key, index_table, job_key, tables, attribution_logs)
        self._acknowledge_role_findings(settings)

    def _grant_job_calls(self, lake: s3.IBucket, lake_key: kms.IKey | None,
                         index_table: dynamodb.ITable, job_key: kms.IKey, tables: LakeTables,
                         attribution_logs: logs.ILogGroup) -> None:
        """Exactly what the jobs call (tests/infra/aws_calls.py lists the calls): Spark and the
        driver's boto3 list and read raw/ and raw-audit/, read fsimage/ (the inventory's
        ranged GETs), read and write curated/ (tables, watermarks, runs they replace) and
        quarantine/glue/; the compactions switch the events
        and audit tables' partitions. Written out rather than CDK's grant_read_write, which adds object lock,
        tagging, versions and bucket reads on every prefix."""
        listed = [lake_layout.RAW_PREFIX, lake_layout.AUDIT_RAW_PREFIX, lake_layout.CURATED_PREFIX,
                  GLUE_QUARANTINE]
        read = [*listed, lake_layout.FSIMAGE_PREFIX]  # an image is named in the run's arguments
        write = [lake_layout.CURATED_PREFIX, GLUE_QUARANTINE]
        statements = [
            iam.PolicyStatement(sid="ListLake", actions=["s3:ListBucket"],
                                resources=[lake.bucket_arn],
                                conditions={"StringLike": {"s3:prefix": [
                                    q for p in listed for q in (p, f"{p}*")]}}),
            iam.PolicyStatement(sid="ReadLake", actions=["s3:GetObject"],
                                resources=[lake.arn_for_objects(f"{p}*") for p in read]),
            # Spark writes in parts and deletes its temporaries and superseded runs.
            iam.PolicyStatement(sid="WriteLake", actions=[
                "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"],
                resources=[lake.arn_for_objects(f"{p}*") for p in write]),
            # Bookmarks are encrypted client-side and logs with the job key.
            iam.PolicyStatement(sid="UseJobKey", actions=[
                "kms:Encrypt", "kms:Decrypt", "kms:GenerateDataKey"],
                resources=[job_key.key_arn]),
            iam.PolicyStatement(sid="EncryptedJobLogs", actions=["logs:AssociateKmsKey"],
                                resources=[f"arn:{Aws.PARTITION}:logs:{Aws.REGION}:"
                                           f"{Aws.ACCOUNT_ID}:log-group:/aws-glue/*"]),
            # glue_jobs/catalog.py GlueCatalog; Glue authorises a table call on the catalog,
            # the database and the table.
            iam.PolicyStatement(sid="PublishPartitions", actions=[
                "glue:GetTable", "glue:GetPartitions", "glue:BatchCreatePartition",
                "glue:BatchUpdatePartition"],
                resources=[f"arn:{Aws.PARTITION}:glue:{Aws.REGION}:{Aws.ACCOUNT_ID}:catalog",
                           tables.database.database_arn,
                           *(t.table_arn for t in tables.partitions_registered_by_jobs())]),
            # glue_jobs/image_index.py: the index from an image, written from the executors
            # (BatchWriteItem: puts, and a repair's deletes), the sequencer's position checked
            # and put by the driver (glue_jobs/index_position.py). A gap repair also reads the
            # entries the index holds (Scan, one segment a task: glue_jobs/indexed_entries.py)
            # and moves the position from the agent's checkpoint (a conditional UpdateItem).
            iam.PolicyStatement(sid="WriteIndexFromImage", actions=[
                "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:BatchWriteItem",
                "dynamodb:Scan", "dynamodb:UpdateItem"],
                resources=[index_table.table_arn]),
            # ... and the marker beside the image the agent waits for (lake_layout.fsimage_indexed_key).
            iam.PolicyStatement(sid="MarkImageIndexed", actions=["s3:PutObject"],
                                resources=[lake.arn_for_objects(IMAGE_INDEXED)]),
            # glue_jobs/attribution_log.py: a stream per run of the attribution job, its lines
            # put from the executors.
            iam.PolicyStatement(sid="LogAttributions", actions=[
                "logs:CreateLogStream", "logs:PutLogEvents"],
                resources=[attribution_logs.log_group_arn]),
        ]
        if lake_key is not None:
            # S3 asks KMS as the caller: Decrypt to read, a data key to write.
            statements.append(iam.PolicyStatement(
                sid="UseLakeKey", actions=["kms:Decrypt", "kms:GenerateDataKey"],
                resources=[lake_key.key_arn]))
        for statement in statements:
            self.role.add_to_policy(statement)

    def _acknowledge_role_findings(self, settings: DeploySettings) -> None:
        nag.ack(self.role, "IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
                "AWSGlueServiceRole]", "The AWS-maintained Glue service role policy (Glue's "
                "own CloudWatch, EC2 network interface and catalog calls); lake access is "
                "granted separately by prefix")
        for action in ("s3:GetBucket*", "s3:GetObject*", "s3:List*"):
            nag.ack(self.role, f"IAM5[Action::{action}]", "CDK's read grant of the job "
                    "scripts and library zip it uploads as assets (PySparkEtlJob), on the "
                    "asset bucket only")
        nag.ack_lake_prefixes(self.role, settings, [
            lake_layout.RAW_PREFIX, lake_layout.AUDIT_RAW_PREFIX, lake_layout.CURATED_PREFIX, GLUE_QUARANTINE,
            lake_layout.FSIMAGE_PREFIX])
        nag.ack(self.role, f"IAM5[Resource::{nag.lake_arn_as_nag_prints_it(settings)}/"
                f"{IMAGE_INDEXED}]", "The marker beside each image the job indexed "
                "(lake_layout.fsimage_indexed_key): the cluster and txid are the run's arguments")
        nag.ack(self.role, "IAM5[Resource::arn:<AWS::Partition>:logs:<AWS::Region>:"
                "<AWS::AccountId>:log-group:/aws-glue/*]", "Glue names its job log groups under "
                "/aws-glue/ at run time; AssociateKmsKey encrypts them with the job key")
        nag.ack(self.role, "IAM5[Resource::arn:<AWS::Partition>:s3:::cdk-hnb659fds-assets-"
                "<AWS::AccountId>-<AWS::Region>/*]", "Read access to the job scripts and library "
                "zip that CDK uploads as assets (content-hashed keys)")
