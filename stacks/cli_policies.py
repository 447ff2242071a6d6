"""Policies for whoever runs the cloud CLI `hdfs-events` (hdfs_events_cli/cli.py), one per use:

- a copy submitter per cluster (`hdfs-events copy submit`): a cloud job (EMR, Glue, a CI
  runner) asking that cluster's copy worker to bring exported data back on-prem. It lists the
  source under the lake's export prefixes, records the request as `requested` in the transfers
  table (only that cluster's items, "<cluster>#<request_id>") and sends it to that cluster's
  copy-request queue. One policy per cluster so a job allowed to copy into one cluster cannot
  queue work for another.
- an operator's read policy (`hdfs-events index ls|stat|status`, `copy status`, `drift
  receive`): reads of the namespace index and of the transfers table, of every cluster (an
  operator answers for all of them), nothing written; and taking the drift alerts `verify` sent
  (receive, then delete what was shown: reading a queue is consuming it).

- a lake query policy (`hdfs-events who`): runs the history-of-one-path query in the stack's
  Athena workgroup. Athena reads the catalog and the lake as the caller, so the policy also
  names the Glue database and the two tables the query joins (events, attribution), reads of
  their curated/ prefixes and the workgroup's results prefix (written by the query, read back
  by GetQueryResults). Its own policy, not operator-read's: the lake holds every change with
  its user and client IP, a wider read than the index's current state, granted to fewer people.

- a quarantine redrive policy (`hdfs-events quarantine redrive`): lists and reads the consumer's
  quarantine records and invokes the consumer function with their keys. It never writes the
  quarantine: the consumer reads each record itself, so the SenderId in it stays SQS's.

Managed policies, not roles or users: who runs the CLI (an EMR instance profile, a Glue job
role, an SSO permission set) is the customer's; they attach these, whose ARNs are outputs.
"""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from hdfs_events import names, quarantine
from hdfs_events.lake_layout import ATTRIBUTION_TABLE, CURATED_PREFIX, EVENTS_TABLE
from stacks import nag
from stacks.settings import DeploySettings
from stacks.storage import ATHENA_RESULTS_PREFIX

# The tables `hdfs-events who` reads (hdfs_events.lake_queries.history_of_one_path).
QUERIED_TABLES = (EVENTS_TABLE, ATTRIBUTION_TABLE)


class CliPolicies(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, settings: DeploySettings,
                 copy_queues: Mapping[str, sqs.IQueue], lake: s3.IBucket,
                 index_table: dynamodb.ITable, transfers_table: dynamodb.ITable,
                 drift_queue: sqs.IQueue, consumer: lambda_.IFunction) -> None:
        super().__init__(scope, construct_id)
        self.copy_submitters = {
            cluster: iam.ManagedPolicy(
                self, f"CopySubmit-{cluster}",
                managed_policy_name=f"{settings.prefix}-copy-submit-{cluster}",
                description=f"hdfs-events copy submit: copy requests to cluster {cluster}",
                statements=copy_submit_statements(cluster, settings, queue, lake,
                                                  transfers_table))
            for cluster, queue in copy_queues.items()}
        self.operator_read = iam.ManagedPolicy(
            self, "OperatorRead", managed_policy_name=f"{settings.prefix}-operator-read",
            description="hdfs-events index ls|stat|status, copy status, drift receive",
            statements=[
                # index ls/stat: GetItem and Query (children); index status: the sequencer's
                # position (GetItem), the next manifests (Query), arrivals (BatchGetItem).
                iam.PolicyStatement(sid="ReadIndex", actions=[
                    "dynamodb:GetItem", "dynamodb:Query", "dynamodb:BatchGetItem"],
                    resources=[index_table.table_arn]),
                iam.PolicyStatement(sid="ReadTransfers", actions=["dynamodb:GetItem"],
                                    resources=[transfers_table.table_arn]),
                # drift receive (DeleteMessageBatch is authorised as sqs:DeleteMessage).
                iam.PolicyStatement(sid="TakeDriftAlerts",
                                    actions=["sqs:ReceiveMessage", "sqs:DeleteMessage"],
                                    resources=[drift_queue.queue_arn]),
            ])

        self.lake_query = iam.ManagedPolicy(
            self, "LakeQuery", managed_policy_name=f"{settings.prefix}-lake-query",
            description="hdfs-events who: the lake's history of a path, through Athena",
            statements=lake_query_statements(self, settings, lake))
        nag.ack_lake_prefixes(self.lake_query, settings, [
            *(f"{CURATED_PREFIX}{t}/" for t in QUERIED_TABLES), ATHENA_RESULTS_PREFIX])

        self.quarantine_redrive = iam.ManagedPolicy(
            self, "QuarantineRedrive",
            managed_policy_name=f"{settings.prefix}-quarantine-redrive",
            description="hdfs-events quarantine redrive: quarantined messages read again",
            statements=quarantine_redrive_statements(lake, consumer))
        nag.ack_lake_prefixes(self.quarantine_redrive, settings, [quarantine.INGEST_PREFIX])


def lake_query_statements(scope: Construct, settings: DeploySettings,
                          lake: s3.IBucket) -> list[iam.PolicyStatement]:
    """By name, not by reference: the workgroup and the catalog are the Analytics stack's, which
    depends on this one (a reference back would be a cycle)."""
    stack = Stack.of(scope)

    def glue_arn(resource: str, name: str | None = None) -> str:
        return stack.format_arn(service="glue", resource=resource, resource_name=name,
                                arn_format=ArnFormat.SLASH_RESOURCE_NAME)

    database = settings.glue_database
    curated = [f"{CURATED_PREFIX}{t}/" for t in QUERIED_TABLES]
    statements = [
        iam.PolicyStatement(sid="RunLakeQueries", actions=[
            "athena:StartQueryExecution", "athena:GetQueryExecution", "athena:GetQueryResults",
            "athena:StopQueryExecution"],
            resources=[stack.format_arn(service="athena", resource="workgroup",
                                        resource_name=settings.prefix,
                                        arn_format=ArnFormat.SLASH_RESOURCE_NAME)]),
        # Athena plans the query with the caller's catalog reads.
        iam.PolicyStatement(sid="ReadLakeCatalog",
                            actions=["glue:GetDatabase", "glue:GetTable", "glue:GetPartitions"],
                            resources=[glue_arn("catalog"), glue_arn("database", database),
                                       *(glue_arn("table", f"{database}/{t}")
                                         for t in QUERIED_TABLES)]),
        iam.PolicyStatement(sid="ListQueriedTables", actions=["s3:ListBucket"],
                            resources=[lake.bucket_arn],
                            conditions={"StringLike": {"s3:prefix": [
                                q for p in curated for q in (p, f"{p}*")]}}),
        iam.PolicyStatement(sid="ReadQueriedTables", actions=["s3:GetObject"],
                            resources=[lake.arn_for_objects(f"{p}*") for p in curated]),
        # Athena writes the result as the caller; GetQueryResults reads it back as the caller.
        iam.PolicyStatement(sid="QueryResults", actions=["s3:PutObject", "s3:GetObject"],
                            resources=[lake.arn_for_objects(f"{ATHENA_RESULTS_PREFIX}*")]),
    ]
    if lake.encryption_key is not None:
        statements.append(iam.PolicyStatement(
            sid="UseLakeKey", actions=["kms:Decrypt", "kms:GenerateDataKey"],
            resources=[lake.encryption_key.key_arn]))
    return statements


def quarantine_redrive_statements(lake: s3.IBucket,
                                  consumer: lambda_.IFunction) -> list[iam.PolicyStatement]:
    ingest = quarantine.INGEST_PREFIX
    statements = [
        iam.PolicyStatement(sid="InvokeConsumer", actions=["lambda:InvokeFunction"],
                            resources=[consumer.function_arn]),
        iam.PolicyStatement(sid="ListQuarantine", actions=["s3:ListBucket"],
                            resources=[lake.bucket_arn],
                            conditions={"StringLike": {"s3:prefix": [ingest, f"{ingest}*"]}}),
        # The filters (--cluster, --reason-contains) read each record's group and reason.
        iam.PolicyStatement(sid="ReadQuarantine", actions=["s3:GetObject"],
                            resources=[lake.arn_for_objects(f"{ingest}*")]),
    ]
    if lake.encryption_key is not None:
        statements.append(iam.PolicyStatement(sid="ReadLakeKey", actions=["kms:Decrypt"],
                                              resources=[lake.encryption_key.key_arn]))
    return statements


def copy_submit_statements(cluster: str, settings: DeploySettings, queue: sqs.IQueue,
                           lake: s3.IBucket,
                           transfers_table: dynamodb.ITable) -> list[iam.PolicyStatement]:
    return [
        iam.PolicyStatement(sid="SendCopyRequests", actions=["sqs:SendMessage"],
                            resources=[queue.queue_arn]),
        # The request is recorded before it is sent (PutItem, if not there yet) and an
        # existing one is read back to tell a retry from a clash (GetItem).
        iam.PolicyStatement(sid="RecordOwnRequests",
                            actions=["dynamodb:PutItem", "dynamodb:GetItem"],
                            resources=[transfers_table.table_arn],
                            conditions={"ForAllValues:StringLike": {
                                "dynamodb:LeadingKeys": [names.transfer_key(cluster, "*")]}}),
        # The copy listing is made from the source's objects; the worker reads only exports.
        iam.PolicyStatement(sid="ListExports", actions=["s3:ListBucket"],
                            resources=[lake.bucket_arn],
                            conditions={"StringLike": {"s3:prefix": [
                                q for p in settings.export_prefixes for q in (p, f"{p}*")]}}),
    ]
