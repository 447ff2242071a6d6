"""Ingest: the event queue and its DLQ, the consumer's apply queue and its DLQ, per cluster an
on-prem principal and its copy-request queue, the consumer Lambda, and the drift alert queue
`verify` sends to."""

from __future__ import annotations

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_iam as iam
from constructs import Construct

from stacks.cli_policies import CliPolicies
from stacks.ingest_function import IngestFunction
from stacks.onprem_principal import (
    OnPremPrincipal,
    OnPremTargets,
    RolesAnywhereAnchor,
    output_suffix,
)
from stacks.queues import ApplyQueues, CopyRequestQueues, DriftAlertQueue, EventQueues
from stacks.settings import DeploySettings
from stacks.storage import StorageStack, removal_policy


class IngestStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, *, settings: DeploySettings,
                 storage: StorageStack, **kwargs: object) -> None:
        super().__init__(scope, construct_id, **kwargs)
        removal = removal_policy(settings)
        lake = storage.lake_in(self)
        self.events = EventQueues(self, "Events", settings=settings, removal=removal)
        self.apply = ApplyQueues(self, "Apply", settings=settings, removal=removal)
        self.copy_requests = {
            cluster: CopyRequestQueues(self, f"CopyRequests-{cluster}", cluster=cluster,
                                       settings=settings, removal=removal)
            for cluster in settings.clusters}
        self.drift_alerts = DriftAlertQueue(self, "DriftAlerts", settings=settings,
                                            removal=removal)
        self.consumer = IngestFunction(
            self, "Consumer", settings=settings, event_queue=self.events.queue,
            apply_queue=self.apply.queue, lake=lake, index_table=storage.index_table, removal=removal)

        def targets(cluster: str) -> OnPremTargets:
            return OnPremTargets(
                event_queue=self.events.queue, copy_queue=self.copy_requests[cluster].queue,
                drift_queue=self.drift_alerts.queue,
                lake=lake, lake_key=storage.lake_key, state_table=storage.state_table,
                index_table=storage.index_table, transfers_table=storage.transfers_table,
                sync_table=storage.sync_table)

        self.cli = CliPolicies(
            self, "Cli", settings=settings, lake=lake, index_table=storage.index_table,
            transfers_table=storage.transfers_table, drift_queue=self.drift_alerts.queue,
            consumer=self.consumer.function,
            copy_queues={c: q.queue for c, q in self.copy_requests.items()})

        anchor = (RolesAnywhereAnchor(self, "RolesAnywhere", settings=settings)
                  if settings.roles_anywhere else None)
        self.principals = [
            OnPremPrincipal(self, f"OnPrem-{cluster}", cluster=cluster, settings=settings,
                            targets=targets(cluster), anchor=anchor)
            for cluster in settings.clusters]

        # Each cluster's events only from its own principals: the user (by ARN, resolved to its
        # unique id by the consumer), the Roles Anywhere role (by its unique id), and any
        # principal cdk.json adds (docs/consumer.md, "Cluster identity").
        senders: dict[str, list[str]] = {}
        for principal in self.principals:
            own = senders[principal.cluster] = [principal.user.user_arn]
            if principal.role is not None:
                own.append(principal.role.role_id)
            own.extend(settings.extra_senders_of(principal.cluster))
        self.consumer.accept_senders(senders, [p.user for p in self.principals])

        # Only the agents may put events on the stream: an explicit deny beats any allow
        # another policy in the account might give.
        senders = []
        for principal in self.principals:
            senders.append(principal.user.user_arn)
            if principal.role is not None:
                senders.append(principal.role.role_arn)
        not_a_sender: dict[str, dict[str, list[str]]] = {
            "ArnNotEquals": {"aws:PrincipalArn": senders}}
        # cdk.json's extra_senders are IAM unique ids, not ARNs: spared by aws:userid, which is
        # the id itself for a user and "<role id>:<session name>" for a role session. A Deny
        # applies only when every condition matches, so either key spares a sender.
        extra = sorted({s for p in self.principals for s in settings.extra_senders_of(p.cluster)})
        if extra:
            not_a_sender["StringNotLike"] = {
                "aws:userid": [v for s in extra for v in (s, f"{s}:*")]}
        self.events.queue.add_to_resource_policy(iam.PolicyStatement(
            sid="OnlyAgentsSendEvents", effect=iam.Effect.DENY,
            principals=[iam.AnyPrincipal()], actions=["sqs:SendMessage"],
            resources=[self.events.queue.queue_arn], conditions=not_a_sender))

        # A continue request only makes the consumer apply ranges, yet it is the consumer's
        # alone: no one else starts its invocations.
        self.apply.queue.add_to_resource_policy(iam.PolicyStatement(
            sid="OnlyConsumerSendsRequests", effect=iam.Effect.DENY,
            principals=[iam.AnyPrincipal()], actions=["sqs:SendMessage"],
            resources=[self.apply.queue.queue_arn],
            conditions={"ArnNotEquals": {"aws:PrincipalArn": self.consumer.role.role_arn}}))

        out = self._output
        out("EventQueueUrl", self.events.queue.queue_url, "FIFO queue the agents send events to")
        out("EventQueueArn", self.events.queue.queue_arn, "ARN of the event queue")
        out("EventDlqUrl", self.events.dlq.queue_url,
            "Event messages that failed max_receive_count times")
        out("ApplyQueueUrl", self.apply.queue.queue_url,
            "FIFO queue of the consumer's continue requests (its second event source)")
        out("ApplyDlqUrl", self.apply.dlq.queue_url,
            "Continue requests whose invocation failed max_receive_count times")
        out("DriftAlertQueueUrl", self.drift_alerts.queue.queue_url,
            "One message per path `verify` finds drifting: [verify] drift_queue_url")
        out("IngestFunctionName", self.consumer.function.function_name,
            "Consumer Lambda of the event queue")
        out("IngestLogGroupName", self.consumer.log_group.log_group_name,
            "One JSON line per HDFS event (Logs Insights)")
        out("OperatorReadPolicyArn", self.cli.operator_read.managed_policy_arn,
            "Attach to run hdfs-events index ls|stat|status, copy status and drift receive")
        out("QuarantineRedrivePolicyArn", self.cli.quarantine_redrive.managed_policy_arn,
            "Attach to run hdfs-events quarantine redrive")
        out("LakeQueryPolicyArn", self.cli.lake_query.managed_policy_arn,
            "Attach to run hdfs-events who (Athena over the lake)")
        if anchor is not None:
            out("RolesAnywhereTrustAnchorArn", anchor.anchor.attr_trust_anchor_arn,
                "IAM Roles Anywhere trust anchor of the agents' certificates")
        for p in self.principals:
            suffix = output_suffix(p.cluster)
            copy = self.copy_requests[p.cluster]
            out(f"CopyRequestQueueUrl{suffix}", copy.queue.queue_url,
                f"Copy requests for the {p.cluster} copy worker (return channel)")
            out(f"CopyRequestDlqUrl{suffix}", copy.dlq.queue_url,
                f"Copy requests to {p.cluster} that could never succeed")
            out(f"CopySubmitPolicyArn{suffix}",
                self.cli.copy_submitters[p.cluster].managed_policy_arn,
                f"Attach to run hdfs-events copy submit for {p.cluster}")
            out(f"AgentUserName{suffix}", p.user.user_name,
                f"IAM user of the {p.cluster} agent (access key in Secrets Manager)")
            out(f"AgentAccessKeySecretArn{suffix}", p.access_key_secret.secret_arn,
                f"Secret holding the {p.cluster} agent's access key (the ARN, not the value)")
            if p.role is not None and p.profile is not None:
                out(f"AgentRoleArn{suffix}", p.role.role_arn,
                    f"Roles Anywhere role of the {p.cluster} agent")
                out(f"AgentProfileArn{suffix}", p.profile.attr_profile_arn,
                    f"Roles Anywhere profile of the {p.cluster} agent")

    def _output(self, name: str, value: str, description: str) -> None:
        CfnOutput(self, name, value=value, description=description)
