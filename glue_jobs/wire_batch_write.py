"""BatchWriteItem calls whose request body is already DynamoDB's wire JSON (the image job's
items, built by the JVM: glue_jobs/index_item_json.py), sent through botocore as any call.

botocore's low-level client takes items in the wire format ({"S": ...}) but validates every
attribute against the service model and serializes the request again: ~2.5 ms of CPU for a call
of 25 index items on this machine (~100 µs an item), more than building the items. A
`WireBody` passed as `RequestItems` skips both: it is moved aside before the parameters are
validated (`before-parameter-build`, the hook boto3's resource layer converts values in) and
becomes the request's body just before botocore sends (`before-call`, before signing: the
signature covers it, and botocore's retries resend it). The answer, with UnprocessedItems, is
parsed as any other.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

_CONTEXT_KEY = "hdfs_events_wire_body"


class WireBody(bytes):
    """A BatchWriteItem request body, JSON: {"RequestItems": {table: [write requests]}}."""

    @classmethod
    def of_puts(cls, table: str, put_requests: Sequence[str]) -> WireBody:
        """From PutRequests already in JSON text ('{"PutRequest":{"Item":{...}}}')."""
        return cls(('{"RequestItems":{' + json.dumps(table) + ":[" + ",".join(put_requests)
                    + "]}}").encode())

    @classmethod
    def of_unprocessed(cls, unprocessed: dict[str, Any]) -> WireBody:
        """From a reply's UnprocessedItems (botocore parsed them: wire format, plain JSON)."""
        return cls(json.dumps({"RequestItems": unprocessed}, separators=(",", ":")).encode())


def _set_aside(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
    body = params.get("RequestItems")
    if isinstance(body, WireBody):
        context[_CONTEXT_KEY] = body
        params["RequestItems"] = {}  # valid, and nothing to serialize


def _as_body(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
    body = context.pop(_CONTEXT_KEY, None)
    if body is not None:
        params["body"] = bytes(body)


def accept_wire_bodies(client: Any) -> Any:
    """The DynamoDB `client`, its batch_write_item also taking a WireBody as RequestItems."""
    events = client.meta.events
    events.register("before-parameter-build.dynamodb.BatchWriteItem", _set_aside)
    events.register("before-call.dynamodb.BatchWriteItem", _as_body)
    return client
