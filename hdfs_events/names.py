"""Names that the CDK app, the consumer Lambda, the agent, the Glue jobs and the CLIs must agree
on: environment variables, metric names and table key attributes (the lake's keys are
hdfs_events/lake_layout.py's). Changing one here changes it everywhere; the infra tests check
the stacks use these.
"""

from __future__ import annotations

# --- CloudWatch metrics (EMF from the Lambda, PutMetricData from the agent) ---------------
METRICS_NAMESPACE = "HdfsEvents"
DIMENSION_CLUSTER = "Cluster"
METRIC_EVENTS = "Events"  # consumer: events ingested (also per EventType dimension "Type")
METRIC_MESSAGES = "Messages"
METRIC_BYTES = "Bytes"
METRIC_INGEST_LAG_MS = "IngestLagMs"  # consumer: now - NameNode timestamp
METRIC_QUARANTINED = "QuarantinedMessages"
# consumer: messages claiming a cluster whose sender is not that cluster's principal, or that
# sit in another cluster's message group (quarantined too); alarmed on per cluster.
METRIC_FOREIGN_SENDER = "ForeignSenderMessages"
# consumer: GAP records in the stream (edits the NameNode purged before the agent read them)
# and the txids they lost; the consumer-side twin of the agent's InotifyGap, alarmed on
# because it arrives even when the agent's own PutMetricData call failed.
METRIC_STREAM_GAPS = "StreamGaps"
METRIC_LOST_TXIDS = "LostTxids"
# consumer: the index applies txid ranges in order (lambdas/ingest/sequencer.py). How long the
# next range has waited for its messages (0 when none waits), invocations that failed to apply
# ranges, and quarantined messages a range went on without.
METRIC_INDEX_WAIT_MS = "IndexWaitMs"
METRIC_INDEX_APPLY_FAILURES = "IndexApplyFailures"  # was IndexDrainFailures: CHANGELOG.md
METRIC_INDEX_SKIPPED = "IndexSkippedMessages"
# consumer: events the index skipped because DynamoDB could never store them (a name over its
# key limits, a RENAME into its own subtree): logged with the reason, alarmed on.
METRIC_INDEX_SKIPPED_EVENTS = "IndexSkippedEvents"
# consumer: txid ranges the index passed without (all of) their manifest, because the cluster's
# own manifest message was quarantined: their events are in the lake, not in the index.
METRIC_INDEX_BRIDGED_RANGES = "IndexBridgedRanges"
# consumer: how far behind the index is, now minus the NameNode time of the last event applied.
METRIC_INDEX_LAG_MS = "IndexLagMs"
METRIC_AGENT_HEARTBEAT = "AgentHeartbeat"  # agent: 1 per interval while alive
METRIC_AGENT_LAG_TXIDS = "AgentLagTxids"  # agent: getTxidsBehindEstimate()
METRIC_AGENT_EVENTS_SENT = "AgentEventsSent"
METRIC_AGENT_SEND_ERRORS = "AgentSendErrors"
METRIC_INOTIFY_GAP = "InotifyGap"  # agent: edits purged before they were read
METRIC_NAMENODE_UNAVAILABLE = "NameNodeUnavailable"  # agent: 1 while it waits for the NameNode
METRIC_INDEX_DRIFT = "IndexDrift"  # agent verify: mismatched entries
METRIC_SYNC_LAG_SECONDS = "SyncLagSeconds"  # sync: now - NameNode time of the oldest unapplied event
METRIC_SYNC_BYTES = "SyncBytesCopied"
# sync: bytes the gathered and running windows still have to copy (the lag in bytes)
METRIC_SYNC_BYTES_PENDING = "SyncBytesPending"
METRIC_SYNC_PARKED = "SyncParkedPaths"
METRIC_SYNC_S3_RETRIES = "SyncS3Retries"  # sync: S3 requests retried (SlowDown, 5xx), per window
METRIC_COPY_OUTCOME = "CopyRequests"  # copy worker: dimension "Outcome"
# `audit run`: audit lines written to the lake, lines among them that did not parse (shipped
# with a reason), now minus the NameNode time of the last line shipped, and allowed=false lines
# by command (dimension "Command") and by user (dimension "User", the top users of an interval).
METRIC_AUDIT_LINES_SHIPPED = "AuditLinesShipped"
METRIC_AUDIT_LINES_UNPARSED = "AuditLinesUnparsed"
METRIC_AUDIT_LAG_SECONDS = "AuditLagSeconds"
METRIC_DENIED_ACCESS = "DeniedAccess"
DIMENSION_COMMAND = "Command"
DIMENSION_USER = "User"

# --- Consumer Lambda environment (set by stacks/, read by lambdas/ingest) -----------------
ENV_LAKE_BUCKET = "LAKE_BUCKET"
ENV_INDEX_TABLE = "INDEX_TABLE"
ENV_INDEX_PREFIXES = "INDEX_PREFIXES"  # comma-separated HDFS path prefixes to index
ENV_LOG_MODE = "EVENT_LOG_MODE"  # all | mutations | summary
ENV_APPLY_QUEUE_URL = "APPLY_QUEUE_URL"  # continue requests: an invocation of its own applies ranges
# JSON {"<cluster>": ["<IAM user ARN or IAM unique id>", ...]}: who may send each cluster's
# messages (lambdas/ingest/senders.py).
ENV_CLUSTER_SENDERS = "CLUSTER_SENDERS"
LOG_MODES = ("all", "mutations", "summary")

# --- DynamoDB tables -------------------------------------------------------------------------
# Agent state: one partition per cluster (the on-prem principal may touch only its own, by a
# dynamodb:LeadingKeys condition), items "checkpoint", "lease", "heartbeat".
STATE_PK = "cluster"
STATE_SK = "item"
STATE_ITEM_CHECKPOINT = "checkpoint"
STATE_ITEM_LEASE = "lease"
# Namespace index (the S3mper idea): partition = "<cluster>#<parent dir>", sort = entry name.
INDEX_PK = "parent"
INDEX_SK = "name"
# Sync state (`hdfs-events-agent sync`): keyed as the agent-state table, so the same LeadingKeys
# condition scopes a cluster's principal to its own partition; items "<destination>|checkpoint",
# "<destination>|window", "<destination>|pending|<path>", "<destination>|parked|<path>".
SYNC_PK = STATE_PK
SYNC_SK = STATE_SK
# Transfers (return channel): one item per copy request, keyed "<cluster>#<request_id>" so a
# cluster's principal may touch only its own (dynamodb:LeadingKeys "<cluster>#*").
TRANSFERS_PK = "transfer"
TTL_ATTRIBUTE = "expires_at"  # epoch seconds, on every table

# --- SQS message attributes -------------------------------------------------------------------
# `kind` marks a message that holds no events: a manifest on the event queue
# (hdfs_events/manifest.py) or a continue request on the apply queue
# (hdfs_events/continue_request.py). An event message has none; its `encoding` attribute is the
# envelope's (hdfs_events/envelope.py).
KIND_ATTRIBUTE = "kind"
KIND_MANIFEST = "manifest"
KIND_CONTINUE = "drain"  # on the wire since issue 18 (then "drain requests"): the value stays


def index_partition(cluster: str, parent: str) -> str:
    return f"{cluster}#{parent}"


def index_shard_partition(cluster: str, parent: str, shard: int) -> str:
    """One of a hot directory's child partitions (hdfs_events/index_item.py says which child
    goes where). "//" never occurs in a normalised HDFS path, so no directory's own partition
    can be spelt like this; the "<cluster>#" prefix stays, and with it the LeadingKeys grant."""
    return f"{cluster}#{parent}//{shard}"


def transfer_key(cluster: str, request_id: str) -> str:
    """A cluster name holds no '#': the prefix is the owner, whatever the request id holds."""
    return f"{cluster}#{request_id}"


# The consumer's sequencer keeps its items in the index table beside the entries; their
# partitions start "<cluster>!", an entry's "<cluster>#/" (a cluster name has neither).
SEQUENCER_SK = "-"


def manifests_partition(cluster: str) -> str:
    """Sort key: "<end, 20 digits>.<after or ->.<range id>.<part, 5 digits>"."""
    return f"{cluster}!manifests"


def lost_manifests_partition(cluster: str) -> str:
    """Manifests of the cluster's own principal that could not be read (quarantined); sort key
    "<received ms, 15 digits>.<message id>"."""
    return f"{cluster}!lost-manifests"


def arrival_partition(cluster: str, dedup_id: str) -> str:
    return f"{cluster}!arrived#{dedup_id}"


def position_partition(cluster: str) -> str:
    """Attributes txid, idx (POSITION_TXID_DONE: all of the txid), walk, lease_until_ms."""
    return f"{cluster}!position"


POSITION_TXID_DONE = 2**31 - 1


def split_path(path: str) -> tuple[str, str]:
    """("/a/b", "c") for "/a/b/c"; ("/", "a") for "/a"; ("", "/") for the root itself."""
    if path == "/":
        return "", "/"
    parent, _, name = path.rstrip("/").rpartition("/")
    return parent or "/", name
