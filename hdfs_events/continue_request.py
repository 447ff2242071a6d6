"""Continue requests: the consumer asking an invocation of its own to go on applying a
cluster's txid ranges to the namespace index (lambdas/ingest/consumer.py).

They travel on the apply queue, a FIFO queue of the consumer's own with a group per cluster
("<cluster>:#drain"): at most one invocation a cluster takes them at a time, and one takes up to
ten at once. An invocation of event messages sends one after storing their arrivals; an
invocation of continue requests sends one when it runs out of time with ranges left. Until
issue 32 they travelled on the event queue: one still queued there is read as before.

**At most one a cluster and window.** Event invocations send theirs keyed by the window (one
second, by the sender's clock) they send it in: SQS FIFO drops every later send of the same
deduplication id within its 5-minute deduplication interval, so a busy cluster queues at most one
request a second, however many invocations store its arrivals. The body names the window's end,
and the invocation that takes the request keeps looking for complete ranges until that end (plus
CLOCK_SKEW_MS) has passed: every request dropped as a duplicate was sent inside the window, after
its arrival was stored, so one look starts after every such arrival. Requests sent when out of
time are keyed by the position reached and name no window.

Body: {"cluster": "<cluster>", "window_end_ms": <epoch ms>} (the window only on an event
invocation's request); message attribute `kind` = names.KIND_CONTINUE. The wire values say
"drain", the requests' name before issue 21.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from hdfs_events import names
from hdfs_events.ids import sqs_safe_id, validate_cluster_name

WINDOW_MS = 1_000  # event invocations' requests: at most one a cluster and window
# Allowed between the sender's and the taker's clocks. Lambda hosts keep time with the Amazon
# Time Sync Service (well under a millisecond off); this is two orders of magnitude above that.
CLOCK_SKEW_MS = 200


@dataclass(frozen=True, slots=True)
class ContinueRequest:
    cluster: str
    # The end of the window the request was sent in (epoch ms): its taker looks for complete
    # ranges until after it. None: a request sent when out of time (no window).
    window_end_ms: int | None = None

    @property
    def look_until_ms(self) -> int | None:
        """When the taker's last look may start, by its own clock."""
        return None if self.window_end_ms is None else look_until(self.window_end_ms)


def look_until(window_end_ms: int) -> int:
    """When the last look for a window's requests may start, by the taker's clock."""
    return window_end_ms + CLOCK_SKEW_MS


def window_of(now_ms: int) -> tuple[str, int]:
    """The deduplication key and end (epoch ms) of the window `now_ms` falls in."""
    start = now_ms - now_ms % WINDOW_MS
    return f"w{start // WINDOW_MS}", start + WINDOW_MS


def continue_group_id(cluster: str) -> str:
    return sqs_safe_id(f"{cluster}:#drain")


def continue_dedup_id(cluster: str, key: str) -> str:
    """`key` tells requests apart: the same key within SQS's 5-minute deduplication window
    is sent once."""
    return sqs_safe_id(f"{cluster}-drain-{key}")


def encode_continue_request(request: ContinueRequest) -> str:
    body: dict[str, object] = {"cluster": validate_cluster_name(request.cluster)}
    if request.window_end_ms is not None:
        body["window_end_ms"] = request.window_end_ms
    return json.dumps(body)


def decode_continue_request(body: str) -> ContinueRequest:
    """The request a body holds; raises ValueError (or KeyError, TypeError) for a body that is
    not one. A body without `window_end_ms` (sent when out of time, or before the windows) has
    no window."""
    fields = json.loads(body)
    if not isinstance(fields, dict):
        raise TypeError(f"a continue request is a JSON object, got {type(fields).__name__}")
    window_end = fields.get("window_end_ms")
    if window_end is not None and (type(window_end) is not int or window_end < 0):
        raise ValueError(f"window_end_ms: must be a non-negative integer (epoch ms), "
                         f"got {window_end!r}")
    return ContinueRequest(validate_cluster_name(fields["cluster"]), window_end)


def continue_attributes() -> dict[str, dict[str, str]]:
    """boto3's MessageAttributes shape."""
    return {names.KIND_ATTRIBUTE: {"DataType": "String", "StringValue": names.KIND_CONTINUE}}
