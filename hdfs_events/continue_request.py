"""Continue requests: the consumer asking a later invocation of itself to go on applying a
cluster's txid ranges to the namespace index (lambdas/ingest/consumer.py).

They travel on the event queue beside the agent's messages, so their group id shares the
agent's namespace: "<cluster>:#drain" (an event group key starts with "/", the manifests'
group is "<cluster>:#manifest"). Body: {"cluster": "<cluster>"}; message attribute
`kind` = names.KIND_CONTINUE. The wire values say "drain", the requests' name before issue 21:
requests already queued must still be read.
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
