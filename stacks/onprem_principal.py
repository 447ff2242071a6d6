"""The on-prem principal of one HDFS cluster: what its agent and copy worker may do in AWS.

Two ways to hold it, with one policy:
- an IAM user whose access key is created straight into Secrets Manager (never an output, never
  printed), for sites without a PKI;
- an IAM Roles Anywhere profile + role, trusted through the site's CA (no long-lived key), the
  recommended option.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from aws_cdk import Aws, SecretValue
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_rolesanywhere as rolesanywhere
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from hdfs_events import lake_layout, names
from stacks import nag
from stacks.analytics import inventory_job_name
from stacks.settings import DeploySettings

PLACEHOLDER_CA = Path(__file__).with_name("roles_anywhere_placeholder_ca.pem")
ROLES_ANYWHERE = "rolesanywhere.amazonaws.com"


@dataclass(frozen=True, slots=True)
class OnPremTargets:
    """The resources an on-prem principal is allowed to touch."""

    event_queue: sqs.IQueue
    copy_queue: sqs.IQueue  # the cluster's own
    drift_queue: sqs.IQueue  # `verify` sends one message per drifting path
    lake: s3.IBucket
    lake_key: kms.IKey | None
    state_table: dynamodb.ITable
    index_table: dynamodb.ITable
    transfers_table: dynamodb.ITable
    sync_table: dynamodb.ITable


def onprem_statements(cluster: str, settings: DeploySettings,
                      t: OnPremTargets) -> list[iam.PolicyStatement]:
    """Every permission of the on-prem principal of `cluster`; nothing else, no `*` action."""
    export_objects = [t.lake.arn_for_objects(f"{p}*") for p in settings.export_prefixes]
    statements = [
        iam.PolicyStatement(sid="ShipEvents", actions=["sqs:SendMessage"],
                            resources=[t.event_queue.queue_arn]),
        # `doctor` checks the queue is reachable and FIFO (GetQueueAttributes FifoQueue).
        iam.PolicyStatement(sid="CheckEventQueue", actions=["sqs:GetQueueAttributes"],
                            resources=[t.event_queue.queue_arn]),
        # `verify`: one alert per drifting path (onprem_agent/drift_alerts.py).
        iam.PolicyStatement(sid="SendDriftAlerts", actions=["sqs:SendMessage"],
                            resources=[t.drift_queue.queue_arn]),
        # Its own cluster's copy-request queue only (a queue per cluster, stacks/queues.py).
        iam.PolicyStatement(sid="TakeCopyRequests",
                            actions=["sqs:ReceiveMessage", "sqs:DeleteMessage",
                                     "sqs:ChangeMessageVisibility"],
                            resources=[t.copy_queue.queue_arn]),
        iam.PolicyStatement(sid="ReadExports", actions=["s3:GetObject"],
                            resources=export_objects),
        iam.PolicyStatement(sid="ListExports", actions=["s3:ListBucket"],
                            resources=[t.lake.bucket_arn],
                            conditions={"StringLike": {"s3:prefix": [
                                q for p in settings.export_prefixes for q in (p, f"{p}*")]}}),
        # Checkpoint, lease and heartbeat: only the items whose partition key is this cluster.
        # Every write is an UpdateItem (it creates the item the first time): no PutItem.
        iam.PolicyStatement(sid="OwnAgentState",
                            actions=["dynamodb:GetItem", "dynamodb:UpdateItem"],
                            resources=[t.state_table.table_arn],
                            conditions={"ForAllValues:StringEquals": {
                                "dynamodb:LeadingKeys": [cluster]}}),
        # `doctor` checks the checkpoint/lease table exists. DescribeTable reads no item, so
        # IAM has no leading-key condition for it: the table alone.
        iam.PolicyStatement(sid="DescribeStateTable", actions=["dynamodb:DescribeTable"],
                            resources=[t.state_table.table_arn]),
        # `sync`: its own state, only items whose partition key is this cluster (a finished
        # window's item and a path no longer pending or parked are deleted).
        iam.PolicyStatement(sid="OwnSyncState",
                            actions=["dynamodb:GetItem", "dynamodb:PutItem",
                                     "dynamodb:UpdateItem", "dynamodb:DeleteItem",
                                     "dynamodb:Query"],
                            resources=[t.sync_table.table_arn],
                            conditions={"ForAllValues:StringEquals": {
                                "dynamodb:LeadingKeys": [cluster]}}),
        # The copy worker (return channel) records each state change of its own cluster's
        # requests: items "<cluster>#<request_id>" (names.transfer_key), by conditional
        # UpdateItem only (copy_worker/transfers.py): no PutItem.
        iam.PolicyStatement(sid="TrackOwnTransfers",
                            actions=["dynamodb:GetItem", "dynamodb:UpdateItem"],
                            resources=[t.transfers_table.table_arn],
                            conditions={"ForAllValues:StringLike": {
                                "dynamodb:LeadingKeys": [names.transfer_key(cluster, "*")]}}),
        # `verify` compares an HDFS listing with the index: read-only, own cluster's partitions
        # ("<cluster>#<parent dir>", see names.index_partition): the prefix's own entry
        # (GetItem; not for `/`, which has none) and each directory's children (Query).
        iam.PolicyStatement(sid="VerifyOwnIndex", actions=["dynamodb:GetItem", "dynamodb:Query"],
                            resources=[t.index_table.table_arn],
                            conditions={"ForAllValues:StringLike": {
                                "dynamodb:LeadingKeys": [names.index_partition(cluster, "*")]}}),
        # `audit run`: the NameNode's audit log, into this cluster's own audit prefix only, so
        # a cluster's audit records come from that cluster's principal (lake_layout.audit_object_key).
        iam.PolicyStatement(sid="ShipAuditLog", actions=["s3:PutObject"],
                            resources=[t.lake.arn_for_objects(
                                f"{lake_layout.audit_cluster_prefix(cluster)}*")]),
        # `fetch-image`: the NameNode's checkpoint, into this cluster's own fsimage prefix only
        # (lake_layout.fsimage_key): the multipart upload and the marker (s3:PutObject), the CRC32C
        # and the marker read back so a rerun uploads nothing (s3:GetObject), a failed upload's
        # abort; and the listing of that prefix only, to see what a txid already has.
        iam.PolicyStatement(sid="ShipFsImage",
                            actions=["s3:PutObject", "s3:GetObject", "s3:AbortMultipartUpload"],
                            resources=[t.lake.arn_for_objects(
                                f"{lake_layout.fsimage_cluster_prefix(cluster)}*")]),
        iam.PolicyStatement(sid="ListOwnFsImages", actions=["s3:ListBucket"],
                            resources=[t.lake.bucket_arn],
                            conditions={"StringLike": {"s3:prefix": [
                                f"{lake_layout.fsimage_cluster_prefix(cluster)}*"]}}),
        # `run` with [inotify] first_start = "fsimage" (onprem_agent/live/image_start.py): the
        # namespace inventory job's runs for this cluster's image, started once (a restart
        # finds the run it started by its arguments) and watched until the index is written.
        iam.PolicyStatement(sid="IndexFromOwnImage",
                            actions=["glue:StartJobRun", "glue:GetJobRuns", "glue:GetJobRun"],
                            resources=[f"arn:{Aws.PARTITION}:glue:{Aws.REGION}:{Aws.ACCOUNT_ID}"
                                       f":job/{inventory_job_name(settings)}"]),
        # PutMetricData has no resource-level permissions (IAM requires Resource "*"); the
        # namespace condition is what scopes it.
        iam.PolicyStatement(sid="PublishAgentMetrics", actions=["cloudwatch:PutMetricData"],
                            resources=["*"],
                            conditions={"StringEquals": {
                                "cloudwatch:namespace": names.METRICS_NAMESPACE}}),
    ]
    statements += sync_destination_statements(cluster, settings)
    if t.lake_key is not None:
        # GetObject on a KMS-encrypted object needs Decrypt on its key, through S3 only.
        statements.append(iam.PolicyStatement(
            sid="DecryptExports", actions=["kms:Decrypt"], resources=[t.lake_key.key_arn],
            conditions={"StringEquals": {"kms:ViaService": f"s3.{Aws.REGION}.amazonaws.com"}}))
        # PutObject into the KMS-encrypted lake (`audit run`, `fetch-image`): S3 asks KMS for
        # a data key as the writer.
        statements.append(iam.PolicyStatement(
            sid="EncryptAuditLog", actions=["kms:GenerateDataKey"], resources=[t.lake_key.key_arn],
            conditions={"StringEquals": {"kms:ViaService": f"s3.{Aws.REGION}.amazonaws.com"}}))
    return statements


def sync_destination_statements(cluster: str,
                                settings: DeploySettings) -> list[iam.PolicyStatement]:
    """`hdfs-events-agent sync` into the customer's bucket (cdk.json `sync_destinations`):
    objects under exactly the prefix, and listings of that prefix only. The calls it makes
    (onprem_agent/sync/replica.py, parts.py): PutObject, CreateMultipartUpload, UploadPart,
    CompleteMultipartUpload (s3:PutObject); HeadObject, CopyObject's read side (s3:GetObject);
    DeleteObject; AbortMultipartUpload; ListObjectsV2 (s3:ListBucket, prefix condition);
    ListMultipartUploads at start, to abort what a killed run left open
    (s3:ListBucketMultipartUploads: IAM has no s3:prefix condition key for it, so it is on the
    bucket alone); the KMS keys of cdk.json `sync_kms_keys` for SSE-KMS objects."""
    statements = []
    for n, (bucket, prefix) in enumerate(settings.sync_destinations_of(cluster)):
        bucket_arn = f"arn:{Aws.PARTITION}:s3:::{bucket}"
        statements += [
            iam.PolicyStatement(sid=f"ReplicateObjects{n}",
                                actions=["s3:PutObject", "s3:GetObject", "s3:DeleteObject",
                                         "s3:AbortMultipartUpload"],
                                resources=[f"{bucket_arn}/{prefix}*"]),
            iam.PolicyStatement(sid=f"ListReplica{n}", actions=["s3:ListBucket"],
                                resources=[bucket_arn],
                                conditions={"StringLike": {"s3:prefix": [prefix, f"{prefix}*"]}}),
            iam.PolicyStatement(sid=f"ListReplicaUploads{n}",
                                actions=["s3:ListBucketMultipartUploads"],
                                resources=[bucket_arn]),
        ]
    keys = settings.sync_kms_keys_of(cluster)
    if keys:
        # SSE-KMS under [sync] kms_key_id: S3 asks KMS as the caller, GenerateDataKey for each
        # PutObject and multipart upload, Decrypt to complete a multipart upload and for
        # CopyObject's read. Through S3 only; the key policy must delegate to IAM.
        statements.append(iam.PolicyStatement(
            sid="UseReplicaKeys", actions=["kms:GenerateDataKey", "kms:Decrypt"],
            resources=keys,
            conditions={"StringEquals": {"kms:ViaService": f"s3.{Aws.REGION}.amazonaws.com"}}))
    return statements


def alert_statements(topic: sns.ITopic, key: kms.IKey) -> list[iam.PolicyStatement]:
    """What an agent needs to publish its own alerts (inotify gap, `verify` drift) to the
    KMS-encrypted alert topic: that topic, that key, through SNS only.

    Written out rather than `topic.grant_publish()`, whose key grant is `kms:GenerateDataKey*`
    with no condition: SNS calls GenerateDataKey and Decrypt with the publisher's credentials
    and names the topic in the encryption context (`aws:sns:topicArn`), as AWS's own key
    policies for services publishing to encrypted topics grant it.
    """
    return [
        iam.PolicyStatement(sid="PublishAlerts", actions=["sns:Publish"],
                            resources=[topic.topic_arn]),
        iam.PolicyStatement(
            sid="EncryptAlerts", actions=["kms:GenerateDataKey", "kms:Decrypt"],
            resources=[key.key_arn],
            conditions={"StringEquals": {
                "kms:ViaService": f"sns.{Aws.REGION}.amazonaws.com",
                "kms:EncryptionContext:aws:sns:topicArn": topic.topic_arn}}),
    ]


class RolesAnywhereAnchor(Construct):
    """The trust anchor (the site's CA) shared by every cluster's Roles Anywhere role."""

    def __init__(self, scope: Construct, construct_id: str, *, settings: DeploySettings) -> None:
        super().__init__(scope, construct_id)
        configured = settings.roles_anywhere_ca_file is not None
        pem_path = Path(settings.roles_anywhere_ca_file) if configured else PLACEHOLDER_CA
        try:
            pem = pem_path.read_text()
        except OSError as exc:
            raise FileNotFoundError(f"cdk.json: roles_anywhere_ca_file of {settings.env_name}: "
                                    f"cannot read {pem_path}: {exc.strerror}") from exc
        self.anchor = rolesanywhere.CfnTrustAnchor(
            self, "TrustAnchor", name=f"{settings.prefix}-agents",
            source=rolesanywhere.CfnTrustAnchor.SourceProperty(
                source_type="CERTIFICATE_BUNDLE",
                source_data=rolesanywhere.CfnTrustAnchor.SourceDataProperty(
                    x509_certificate_data=pem)),
            # The placeholder's private key no longer exists: disabled until a real CA is set.
            enabled=configured)


class OnPremPrincipal(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, cluster: str,
                 settings: DeploySettings, targets: OnPremTargets,
                 anchor: RolesAnywhereAnchor | None) -> None:
        super().__init__(scope, construct_id)
        self.cluster = cluster
        self.policy = iam.ManagedPolicy(
            self, "Policy", managed_policy_name=f"{settings.prefix}-onprem-{cluster}",
            description=f"hdfs-events on-prem agent of cluster {cluster}",
            statements=onprem_statements(cluster, settings, targets))

        self.user = iam.User(self, "User", user_name=f"{settings.prefix}-agent-{cluster}",
                             managed_policies=[self.policy])
        access_key = iam.AccessKey(self, "AccessKey", user=self.user)
        self.access_key_secret = secretsmanager.Secret(
            self, "AccessKeySecret", secret_name=f"{settings.prefix}/agent/{cluster}/access-key",
            description=f"Access key of {self.user.user_name} (hdfs-events agent, {cluster})",
            secret_object_value={
                # The key id is not secret; the secret access key stays a SecretValue token.
                "aws_access_key_id": SecretValue.unsafe_plain_text(access_key.access_key_id),
                "aws_secret_access_key": access_key.secret_access_key,
            })

        self.role: iam.Role | None = None
        self.profile: rolesanywhere.CfnProfile | None = None
        if anchor is not None:
            self._add_roles_anywhere(cluster, settings, anchor)

        nag.ack(self.policy, "IAM5[Resource::*]", "cloudwatch:PutMetricData supports no "
                "resource-level permissions; the cloudwatch:namespace condition limits it to "
                f"the {names.METRICS_NAMESPACE} namespace")
        nag.ack_lake_prefixes(self.policy, settings, [*settings.export_prefixes,
                                                      lake_layout.audit_cluster_prefix(cluster),
                                                      lake_layout.fsimage_cluster_prefix(cluster)])
        for bucket, prefix in settings.sync_destinations_of(cluster):
            nag.ack(self.policy, f"IAM5[Resource::arn:<AWS::Partition>:s3:::{bucket}/{prefix}*]",
                    "`sync` writes one object per replicated HDFS file under this destination "
                    "prefix (cdk.json sync_destinations), keyed by its HDFS path: the prefix is "
                    "the narrowest grant")
        nag.ack(self.access_key_secret, "SMG4", "An IAM user's access key cannot be rotated "
                "without redeploying it to the edge node; the rotation procedure is in "
                "docs/deploy.md, and IAM Roles Anywhere (no long-lived key) is the recommended "
                "alternative deployed beside it")

    def attach(self, policy: iam.ManagedPolicy) -> None:
        """Attaches a policy of another stack to the user and the role (from the policy's side,
        so this stack does not reference the other one)."""
        policy.attach_to_user(self.user)
        if self.role is not None:
            policy.attach_to_role(self.role)

    def _add_roles_anywhere(self, cluster: str, settings: DeploySettings,
                            anchor: RolesAnywhereAnchor) -> None:
        # Only certificates from the anchor, with this cluster's CN.
        trust_conditions = {
            "ArnEquals": {"aws:SourceArn": anchor.anchor.attr_trust_anchor_arn},
            "StringEquals": {"aws:PrincipalTag/x509Subject/CN": agent_common_name(
                settings, cluster)},
        }
        self.role = iam.Role(
            self, "Role", role_name=f"{settings.prefix}-agent-{cluster}",
            description=f"hdfs-events agent of {cluster} through IAM Roles Anywhere",
            assumed_by=iam.PrincipalWithConditions(iam.ServicePrincipal(ROLES_ANYWHERE),
                                                   trust_conditions),
            managed_policies=[self.policy])
        self.role.assume_role_policy.add_statements(iam.PolicyStatement(
            actions=["sts:TagSession", "sts:SetSourceIdentity"],
            principals=[iam.ServicePrincipal(ROLES_ANYWHERE)], conditions=trust_conditions))
        self.profile = rolesanywhere.CfnProfile(
            self, "Profile", name=f"{settings.prefix}-agent-{cluster}",
            role_arns=[self.role.role_arn], enabled=True, duration_seconds=3600)


def agent_common_name(settings: DeploySettings, cluster: str) -> str:
    """The certificate CN the Roles Anywhere role of `cluster` accepts."""
    return f"{settings.prefix}-agent-{cluster}"


def output_suffix(cluster: str) -> str:
    """`prod-nn1` -> `ProdNn1`, for CfnOutput ids (alphanumeric only)."""
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[^A-Za-z0-9]+", cluster))
