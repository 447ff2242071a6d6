"""Continue requests: the consumer asking an invocation of its own to go on applying a
cluster's txid ranges to the namespace index (lambdas/ingest/consumer.py).

They travel on the apply queue, a FIFO queue of the consumer's own with a group per cluster
("<cluster>:#drain"): at most one invocation a cluster takes them at a time, and one takes up to
ten at once. An invocation of event messages sends one after storing their arrivals; an
invocation of continue requests sends one when it runs out of time with ranges left. Until
issue 32 they travelled on the event queue: one still queued there is read as before. Body:
{"cluster": "<cluster>"}; message attribute `kind` = names.KIND_CONTINUE. The wire values say
"drain", the requests' name before issue 21.
"""

from __future__ import annotations

import json

from hdfs_events import names
from hdfs_events.ids import sqs_safe_id, validate_cluster_name


def continue_group_id(cluster: str) -> str:
    return sqs_safe_id(f"{cluster}:#drain")


def continue_dedup_id(cluster: str, key: str) -> str:
    """`key` tells requests apart: the same key within SQS's 5-minute deduplication window
    is sent once."""
    return sqs_safe_id(f"{cluster}-drain-{key}")


def encode_continue_request(cluster: str) -> str:
    return json.dumps({"cluster": validate_cluster_name(cluster)})


def decode_continue_request(body: str) -> str:
    """The cluster a continue request names; raises ValueError (or KeyError, TypeError) for a
    body that is not one."""
    return validate_cluster_name(json.loads(body)["cluster"])


def continue_attributes() -> dict[str, dict[str, str]]:
    """boto3's MessageAttributes shape."""
    return {names.KIND_ATTRIBUTE: {"DataType": "String", "StringValue": names.KIND_CONTINUE}}
