"""Policies for whoever runs the cloud CLI `hdfs-events` (hdfs_events/cli.py), one per use:

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

- a quarantine redrive policy (`hdfs-events quarantine redrive`): lists and reads the consumer's
  quarantine records and invokes the consumer function with their keys. It never writes the
  quarantine: the consumer reads each record itself, so the SenderId in it stays SQS's.

Managed policies, not roles or users: who runs the CLI (an EMR instance profile, a Glue job
role, an SSO permission set) is the customer's; they attach these, whose ARNs are outputs.
"""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from hdfs_events import names, quarantine
from stacks import nag
from stacks.settings import DeploySettings


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

        self.quarantine_redrive = iam.ManagedPolicy(
            self, "QuarantineRedrive",
            managed_policy_name=f"{settings.prefix}-quarantine-redrive",
            description="hdfs-events quarantine redrive: quarantined messages read again",
            statements=quarantine_redrive_statements(lake, consumer))
        nag.ack_lake_prefixes(self.quarantine_redrive, settings, [quarantine.INGEST_PREFIX])


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
