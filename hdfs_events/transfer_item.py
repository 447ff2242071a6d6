"""The transfers table's item: one per copy request, keyed "<cluster>#<request_id>"
(names.transfer_key). `hdfs-events copy submit` writes its first form (state requested); the
copy worker (onprem_agent/copy_worker/transfers.py) moves it through running, verified, failed
and rejected by conditional updates; `hdfs-events copy status` reads it. Plain values here;
hdfs_events.dynamodb_json gives DynamoDB's wire form.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from hdfs_events import names
from hdfs_events.copy_request import CopyRequest, TransferState

STATE = "state"
FINGERPRINT = "fingerprint"
ATTEMPTS = "attempts"
HISTORY = "history"
CLUSTER = "cluster"
REQUEST_ID = "request_id"
CREATED_AT = "created_at"
UPDATED_AT = "updated_at"
# A failure's reason is kept to this many characters (in the item and in its history entry).
REASON_MAX_CHARS = 2000


def item_key(cluster: str, request_id: str) -> dict[str, str]:
    return {names.TRANSFERS_PK: names.transfer_key(cluster, request_id)}


def iso(epoch_s: float) -> str:
    """An item's times: UTC, whole seconds, ISO 8601."""
    return datetime.fromtimestamp(epoch_s, UTC).isoformat(timespec="seconds")


def expires_at(now_s: float, retention_days: int) -> int:
    """The item's TTL (epoch seconds): DynamoDB deletes it about then."""
    return int(now_s) + retention_days * 86_400


def described(request: CopyRequest) -> dict[str, Any]:
    """What the item says of its request, written by whichever writer sees the request first."""
    return {FINGERPRINT: request.fingerprint, "request": request.to_json(),
            "source": request.source.uri, "destination": request.destination,
            "mode": str(request.mode)}


def history_entry(state: TransferState, now_s: float, **details: Any) -> dict[str, Any]:
    """One element of the item's history list: the state, when, and what the writer adds."""
    return {STATE: state.value, "at": iso(now_s), **details}


def requested(cluster: str, request: CopyRequest, now_s: float,
              retention_days: int) -> dict[str, Any]:
    """The item as `hdfs-events copy submit` puts it, before any worker took the request."""
    stamp = iso(now_s)
    return {**item_key(cluster, request.request_id), CLUSTER: cluster,
            REQUEST_ID: request.request_id, STATE: TransferState.REQUESTED.value,
            **described(request), ATTEMPTS: 0, CREATED_AT: stamp, UPDATED_AT: stamp,
            HISTORY: [history_entry(TransferState.REQUESTED, now_s)],
            names.TTL_ATTRIBUTE: expires_at(now_s, retention_days)}
