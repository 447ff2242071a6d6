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
SOURCE = "source"
DESTINATION = "destination"
MODE = "mode"
REQUEST = "request"
STARTED_AT = "started_at"
FINISHED_AT = "finished_at"
RETRY_AT = "retry_at"
WORKER = "worker"
MESSAGE_ID = "message_id"
REASON = "reason"
FINAL = "final"
FILES = "files"
BYTES = "bytes"
DURATION_MS = "duration_ms"
BODY_PREVIEW = "body_preview"
# A history entry's own attributes beside its STATE (and REASON, FINAL, WORKER when given).
AT = "at"
ATTEMPT = "attempt"
# What `hdfs-events copy status` prints of an item, in this order (those present).
STATUS_FIELDS = (REQUEST_ID, STATE, REASON, FINAL, ATTEMPTS, FILES, BYTES, DURATION_MS, SOURCE,
                 DESTINATION, MODE, CREATED_AT, UPDATED_AT, RETRY_AT, FINISHED_AT, WORKER)
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
    return {FINGERPRINT: request.fingerprint, REQUEST: request.to_json(),
            SOURCE: request.source.uri, DESTINATION: request.destination,
            MODE: str(request.mode)}


def history_entry(state: TransferState, now_s: float, **details: Any) -> dict[str, Any]:
    """One element of the item's history list: the state, when, and what the writer adds
    (keyword names are the attribute names above: worker, attempt, reason, final)."""
    return {STATE: state.value, AT: iso(now_s), **details}


def running(request: CopyRequest, now_s: float, retention_days: int, *, worker: str,
            message_id: str) -> dict[str, Any]:
    """What a worker sets when it starts an attempt (a failed attempt's REASON and FINAL are
    removed at the same time)."""
    return {STATE: TransferState.RUNNING.value, **described(request), UPDATED_AT: iso(now_s),
            STARTED_AT: iso(now_s), WORKER: worker, MESSAGE_ID: message_id,
            names.TTL_ATTRIBUTE: expires_at(now_s, retention_days)}


def verified(now_s: float, *, bytes_copied: int, files: int,
             duration_ms: int) -> dict[str, Any]:
    return {STATE: TransferState.VERIFIED.value, BYTES: bytes_copied, FILES: files,
            DURATION_MS: duration_ms, FINISHED_AT: iso(now_s), UPDATED_AT: iso(now_s)}


def failed(now_s: float, *, reason: str, final: bool, retry_in_s: int | None,
           duration_ms: int) -> dict[str, Any]:
    """A failed attempt: RETRY_AT when the worker will try again, FINISHED_AT when it will not."""
    values: dict[str, Any] = {STATE: TransferState.FAILED.value,
                              REASON: reason[:REASON_MAX_CHARS], FINAL: final,
                              DURATION_MS: duration_ms, UPDATED_AT: iso(now_s)}
    if retry_in_s is not None and not final:
        values[RETRY_AT] = iso(now_s + retry_in_s)
    if final:
        values[FINISHED_AT] = iso(now_s)
    return values


def rejected(now_s: float, retention_days: int, *, reason: str, request: CopyRequest | None,
             body_preview: str | None) -> dict[str, Any]:
    """A request never to be copied (unreadable, not allowed, its listing wrong): final."""
    values: dict[str, Any] = {STATE: TransferState.REJECTED.value,
                              REASON: reason[:REASON_MAX_CHARS], FINAL: True,
                              UPDATED_AT: iso(now_s), FINISHED_AT: iso(now_s),
                              names.TTL_ATTRIBUTE: expires_at(now_s, retention_days)}
    if request is not None:
        values.update(described(request))
    if body_preview is not None:
        values[BODY_PREVIEW] = body_preview
    return values


def requested(cluster: str, request: CopyRequest, now_s: float,
              retention_days: int) -> dict[str, Any]:
    """The item as `hdfs-events copy submit` puts it, before any worker took the request."""
    stamp = iso(now_s)
    return {**item_key(cluster, request.request_id), CLUSTER: cluster,
            REQUEST_ID: request.request_id, STATE: TransferState.REQUESTED.value,
            **described(request), ATTEMPTS: 0, CREATED_AT: stamp, UPDATED_AT: stamp,
            HISTORY: [history_entry(TransferState.REQUESTED, now_s)],
            names.TTL_ATTRIBUTE: expires_at(now_s, retention_days)}
