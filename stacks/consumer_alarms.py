"""Alarms on what the consumer counts per cluster: the namespace index stalled, failing or going
on without events, and messages quarantined or sent by a foreign principal."""

from __future__ import annotations

from hdfs_events import names
from stacks.alarms import Alarms, cluster_metric

# The next txid range of a cluster has waited this long for its messages, for 3 periods: ~30
# minutes in all. A failing message is retried max_receive_count (5) times, one visibility
# timeout (6 x consumer_timeout_seconds, 60 s by default) apart, so by then it is in the DLQ,
# or it was never sent (docs/deploy.md, "When an index alarm fires").
INDEX_STALLED_MS = 15 * 60 * 1000
INDEX_STALLED_PERIODS = 3
# Applying ranges that fails is retried by the cluster's next message: one failure is normal, two in
# three 5-minute periods are not.
APPLY_FAILURE_PERIODS, APPLY_FAILURE_DATAPOINTS = 3, 2


def add_cluster_consumer_alarms(alarms: Alarms, *, cluster: str) -> None:
    alarm, on_any = alarms.add, alarms.on_any
    # The index applies a cluster's txid ranges in order (lambdas/ingest/sequencer.py).
    # IndexWaitMs comes only from invocations that applied ranges: no data is no traffic, not
    # a stall (a stalled range still gets data from every later message's invocation).
    alarm(f"index-stalled-{cluster}",
          cluster_metric(names.METRIC_INDEX_WAIT_MS, cluster, "Maximum"),
          threshold=INDEX_STALLED_MS, periods=INDEX_STALLED_PERIODS,
          description=f"The {cluster} namespace index has waited more than "
          f"{INDEX_STALLED_MS // 60_000} minutes for the messages of its next txid "
          "range: one is in the event DLQ (redrive it) or was lost (restart the agent "
          "from an earlier checkpoint); see docs/deploy.md")
    # lambdas/ingest/senders.py: each message is quarantined already; the alarm is
    # for whoever owns the credentials that sent it.
    on_any(f"foreign-sender-{cluster}",
           cluster_metric(names.METRIC_FOREIGN_SENDER, cluster, "Sum"),
           description=f"A message claiming cluster {cluster} came from a principal "
           f"that is not the {cluster} agent's, or sat in another cluster's message "
           "group: quarantined. Its SenderId is in the consumer's 'message from a "
           "sender that is not its cluster's principal' log line; see docs/consumer.md")
    on_any(f"index-apply-failures-{cluster}",
           cluster_metric(names.METRIC_INDEX_APPLY_FAILURES, cluster, "Sum"),
           periods=APPLY_FAILURE_PERIODS, datapoints=APPLY_FAILURE_DATAPOINTS,
           description=f"Applying the {cluster} namespace index failed in "
           f"{APPLY_FAILURE_DATAPOINTS} of {APPLY_FAILURE_PERIODS} 5-minute periods: "
           "see the consumer's 'index apply failed' and 'index continue request failed' "
           "log lines (Logs Insights query 'index-apply-problems')")

    # An event DynamoDB can never store (lambdas/ingest/index.py, `unstorable`) is
    # skipped so the index goes on; the entry it would have changed is now wrong.
    on_any(f"index-skipped-events-{cluster}",
           cluster_metric(names.METRIC_INDEX_SKIPPED_EVENTS, cluster, "Sum"),
           description=f"The {cluster} namespace index skipped an event it cannot "
           "store (a name over DynamoDB's key limits, a RENAME into its own subtree): "
           "see the consumer's 'index skipped an event' log lines (Logs Insights query "
           "'index-apply-problems') and `hdfs-events-agent verify`")

    # Messages the consumer quarantined (lambdas/ingest/quarantine.py), counted under the
    # cluster their group id names: their events reach neither raw/ nor the index
    # until the cause is fixed. One is already a loss, so one pages.
    on_any(f"quarantined-messages-{cluster}",
           cluster_metric(names.METRIC_QUARANTINED, cluster, "Sum"),
           description=f"The consumer quarantined a message of the {cluster} stream "
           "(unreadable, a contract it does not know, or a foreign sender): its events "
           "reach neither raw/ in the lake nor the index. Read each reason with the Logs "
           "Insights query 'quarantined-messages' (the record is at its "
           "quarantine_key in the lake bucket); see docs/consumer.md, 'Quarantine'")
    # A manifest named a quarantined message and its range went on without it
    # (lambdas/ingest/sequencer.py): the index now lacks that message's events.
    on_any(f"index-skipped-messages-{cluster}",
           cluster_metric(names.METRIC_INDEX_SKIPPED, cluster, "Sum"),
           description=f"The {cluster} namespace index went on without quarantined "
           "messages a manifest named: their events are missing from it. See the "
           "consumer's 'index skipped quarantined messages' log line (Logs Insights "
           "query 'index-apply-problems') and the reasons (query "
           "'quarantined-messages'); after the fix, `hdfs-events-agent verify` shows "
           "the entries still wrong")

    # The cluster's own manifest was unreadable (quarantined): its range is passed so
    # the index goes on (lambdas/ingest/sequencer.py, _bridge_hole); its events are in
    # the lake but not in the index.
    on_any(f"index-bridged-ranges-{cluster}",
           cluster_metric(names.METRIC_INDEX_BRIDGED_RANGES, cluster, "Sum"),
           description=f"The {cluster} namespace index passed a txid range whose "
           "manifest was quarantined: see the consumer's 'index passed a range' log "
           "line (Logs Insights query 'index-apply-problems') and the quarantined "
           "manifest; repair with `hdfs-events-agent verify`")
