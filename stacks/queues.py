"""The SQS queues: the FIFO event queue (agent -> consumer), the consumer's FIFO apply queue
(consumer -> itself) and the copy-request queue of the return channel (cloud job -> on-prem copy
worker), each with its own dead-letter queue, and the drift alert queue (`verify` -> operator)."""

from __future__ import annotations

from typing import Any

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from stacks import nag
from stacks.settings import DeploySettings

# SQS's maximum message size (raised from 256 KiB to 1 MiB in 2025); set explicitly because
# the agent packs up to this size and an older default would reject its messages.
MAX_MESSAGE_BYTES = 1024 * 1024
# AWS's guidance for a Lambda-polled queue: visibility >= 6x the function timeout, so retries
# of a throttled batch do not make messages reappear while they are still being processed.
VISIBILITY_PER_TIMEOUT = 6


def fifo_dlq(scope: Construct, name: str, *, settings: DeploySettings, removal: RemovalPolicy,
             **props: Any) -> sqs.Queue:
    """The FIFO dead-letter queue `<prefix>-<name>-dlq.fifo` of a construct's FIFO queue."""
    return sqs.Queue(
        scope, "Dlq", queue_name=f"{settings.prefix}-{name}-dlq.fifo", fifo=True,
        encryption=sqs.QueueEncryption.SQS_MANAGED, enforce_ssl=True,
        retention_period=Duration.days(settings.dlq_retention_days), removal_policy=removal,
        **props)


class EventQueues(Construct):
    """FIFO event queue in high-throughput mode, and its FIFO DLQ."""

    def __init__(self, scope: Construct, construct_id: str, *, settings: DeploySettings,
                 removal: RemovalPolicy) -> None:
        super().__init__(scope, construct_id)
        # moto does not append `.fifo` to generated names, and AWS requires the suffix: the
        # names are explicit, derived from the environment's prefix.
        self.dlq = fifo_dlq(self, "events", settings=settings, removal=removal,
                            max_message_size_bytes=MAX_MESSAGE_BYTES)
        self.queue = sqs.Queue(
            self, "Queue", queue_name=f"{settings.prefix}-events.fifo", fifo=True,
            # High-throughput FIFO: dedup and throughput quotas per message group, so
            # independent datasets (groups) scale out instead of sharing 300 msg/s.
            deduplication_scope=sqs.DeduplicationScope.MESSAGE_GROUP,
            fifo_throughput_limit=sqs.FifoThroughputLimit.PER_MESSAGE_GROUP_ID,
            # The agent sends its own dedup ids (cluster + txid/index range).
            content_based_deduplication=False,
            max_message_size_bytes=MAX_MESSAGE_BYTES,
            encryption=sqs.QueueEncryption.SQS_MANAGED, enforce_ssl=True,
            visibility_timeout=Duration.seconds(
                VISIBILITY_PER_TIMEOUT * settings.consumer_timeout_seconds),
            retention_period=Duration.days(settings.queue_retention_days),
            dead_letter_queue=sqs.DeadLetterQueue(
                queue=self.dlq, max_receive_count=settings.max_receive_count),
            removal_policy=removal)


class ApplyQueues(Construct):
    """The consumer's FIFO queue of continue requests (hdfs_events/continue_request.py), and its
    FIFO DLQ. Invocations of its own apply the index's ranges, so invocations of event messages
    never hold their FIFO groups for the index; a group per cluster makes them one a cluster at
    a time. Only the consumer's role sends to it."""

    def __init__(self, scope: Construct, construct_id: str, *, settings: DeploySettings,
                 removal: RemovalPolicy) -> None:
        super().__init__(scope, construct_id)
        self.dlq = fifo_dlq(self, "apply", settings=settings, removal=removal)
        self.queue = sqs.Queue(
            self, "Queue", queue_name=f"{settings.prefix}-apply.fifo", fifo=True,
            # The consumer names each request (a key per invocation, or where applying stopped).
            content_based_deduplication=False,
            encryption=sqs.QueueEncryption.SQS_MANAGED, enforce_ssl=True,
            visibility_timeout=Duration.seconds(
                VISIBILITY_PER_TIMEOUT * settings.consumer_timeout_seconds),
            # A request is worth nothing once a later one was sent: an hour is ample.
            retention_period=Duration.hours(1),
            dead_letter_queue=sqs.DeadLetterQueue(
                queue=self.dlq, max_receive_count=settings.max_receive_count),
            removal_policy=removal)


class CopyRequestQueues(Construct):
    """One cluster's standard queue of copy requests and its DLQ.

    A queue per cluster: a request names a directory of one cluster's HDFS, so only that
    cluster's worker may take it, and only that cluster's principal may receive from it (a
    shared queue would hand a request to whichever worker polled first). Standard, not FIFO:
    requests are independent (the transfers table, keyed by cluster and request_id, makes a
    duplicate delivery harmless) and the worker needs no group ordering.
    """

    def __init__(self, scope: Construct, construct_id: str, *, cluster: str,
                 settings: DeploySettings, removal: RemovalPolicy) -> None:
        super().__init__(scope, construct_id)
        self.cluster = cluster
        # SQS queue names: at most 80 characters; a prefix and a cluster name (<= 63) fit.
        name = f"{settings.prefix}-copy-requests-{cluster}"
        self.dlq = sqs.Queue(
            self, "Dlq", queue_name=f"{name}-dlq",
            encryption=sqs.QueueEncryption.SQS_MANAGED, enforce_ssl=True,
            retention_period=Duration.days(settings.dlq_retention_days), removal_policy=removal)
        self.queue = sqs.Queue(
            self, "Queue", queue_name=name,
            encryption=sqs.QueueEncryption.SQS_MANAGED, enforce_ssl=True,
            # The worker extends visibility on a heartbeat while distcp runs.
            visibility_timeout=Duration.seconds(settings.copy_visibility_timeout_seconds),
            retention_period=Duration.days(settings.queue_retention_days),
            receive_message_wait_time=Duration.seconds(20),
            dead_letter_queue=sqs.DeadLetterQueue(
                queue=self.dlq, max_receive_count=settings.max_receive_count),
            removal_policy=removal)


class DriftAlertQueue(Construct):
    """The drift alert queue: one message per path `hdfs-events-agent verify` finds differing
    between HDFS and the index (the S3mper idea), for an operator to read and repair
    (`hdfs-events drift receive`, docs/edge-node.md "Drift alerts").

    Standard, not FIFO: each message stands alone (no order between paths), and FIFO's
    deduplication would buy nothing, since it only spans 5 minutes and verify runs daily, so a
    path still drifting tomorrow is rightly a new message. The reader takes them by path.
    No DLQ: nothing processes a message that could fail and come back; a person (or
    `drift receive`) reads it and deletes it, and retention, not a receive count, ends it.
    """

    # SQS's maximum retention: drift found on a Friday night must still be there on Monday.
    RETENTION = Duration.days(14)

    def __init__(self, scope: Construct, construct_id: str, *, settings: DeploySettings,
                 removal: RemovalPolicy) -> None:
        super().__init__(scope, construct_id)
        self.queue = sqs.Queue(
            self, "Queue", queue_name=f"{settings.prefix}-drift-alerts",
            encryption=sqs.QueueEncryption.SQS_MANAGED, enforce_ssl=True,
            retention_period=self.RETENTION, removal_policy=removal)
        nag.ack(self.queue, "SQS3", "Alerts for an operator, read and deleted by a person or "
                "`hdfs-events drift receive`: no consumer fails on a message repeatedly, so "
                "there is nothing to redrive; 14 days' retention ends an unread one")
