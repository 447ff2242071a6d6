"""The alert topic every alarm publishes to, encrypted, and each agent's grant to publish its
own alerts there (inotify gap, `verify` drift)."""

from __future__ import annotations

from aws_cdk import RemovalPolicy, Stack
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions

from stacks.onprem_principal import OnPremPrincipal, alert_statements
from stacks.settings import DeploySettings


class AlertTopic:
    """Not a Construct: its resources keep the stack as their scope, so their CloudFormation
    logical IDs stay those of the topic and key already deployed (a new ID would replace the
    topic and drop its subscriptions)."""

    def __init__(self, stack: Stack, *, settings: DeploySettings, removal: RemovalPolicy,
                 principals: list[OnPremPrincipal]) -> None:
        # A key of our own: CloudWatch alarms cannot publish to a topic under aws/sns.
        self.key = kms.Key(stack, "AlertKey", enable_key_rotation=True,
                           description="hdfs-events alert topic", removal_policy=removal)
        self.key.add_to_resource_policy(iam.PolicyStatement(
            actions=["kms:Decrypt", "kms:GenerateDataKey*"], resources=["*"],
            principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")]))
        self.topic = sns.Topic(stack, "Alerts", display_name="hdfs-events alerts",
                               master_key=self.key, enforce_ssl=True)
        if settings.alarm_email:
            self.topic.add_subscription(subscriptions.EmailSubscription(settings.alarm_email))
        self.action = cw_actions.SnsAction(self.topic)

        # The grant is made from the monitoring stack: Ingest, where the principals live,
        # referencing this topic would be a cycle (monitoring reads Ingest's queues and
        # function).
        for principal in principals:
            policy = iam.ManagedPolicy(
                stack, f"AgentAlerts-{principal.cluster}",
                managed_policy_name=f"{settings.prefix}-onprem-{principal.cluster}-alerts",
                description=f"hdfs-events agent of cluster {principal.cluster}: publish alerts",
                statements=alert_statements(self.topic, self.key))
            principal.attach(policy)
