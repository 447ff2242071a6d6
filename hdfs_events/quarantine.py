"""The consumer's quarantine as the CLI and the consumer both see it: where a record lies, what
it holds, and the redrive request that asks the consumer to read it again.

    quarantine/ingest/dt=<YYYY-MM-DD>/<name>.json     a message the consumer could not use
    quarantine/redriven/dt=<YYYY-MM-DD>/<name>.json   the same record after a redrive took it,
                                                      with the redrive's outcome

The date is the message's SentTimestamp (else its receive time); the name its messageId with
characters unsafe in a key replaced. Only the consumer's role writes under quarantine/, so a
record's SenderId is SQS's word, not an operator's: a redrive names records, never bodies.

Redrive request (`lambda:InvokeFunction` on the consumer, synchronous):
    {"redrive": {"keys": ["quarantine/ingest/dt=.../<name>.json", ...]}}
Response: {"redrive": [{"key", "outcome", "reason", "index", "redriven_key"}, ...]}, one per key
in order; outcome one of REDRIVE_OUTCOMES.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from hdfs_events import lake_layout
from hdfs_events.validation import preview

INGEST_STAGE = "ingest"
REDRIVEN_STAGE = "redriven"
INGEST_PREFIX = f"{lake_layout.QUARANTINE_PREFIX}{INGEST_STAGE}/"
REDRIVEN_PREFIX = f"{lake_layout.QUARANTINE_PREFIX}{REDRIVEN_STAGE}/"
_UNSAFE_KEY_CHARS = re.compile(r"[^A-Za-z0-9._-]")
_INGEST_KEY = re.compile(r"quarantine/ingest/dt=(\d{4}-\d{2}-\d{2})/([A-Za-z0-9._-]{1,200})\.json")
# The record key's form, as error messages name it.
INGEST_KEY_FORM = f"{INGEST_PREFIX}dt=<date>/<name>.json"
ENV_CONSUMER_FUNCTION = "CONSUMER_FUNCTION"  # the CLI's default for --function
# The consumer runs each record through its own path (at most 1 MiB of body, a lake PUT per
# hour it spans): 20 a request keep a request far under the function's timeout and the response
# far under Lambda's 6 MB synchronous payload.
MAX_REDRIVE_KEYS = 20

# ingested: in the lake, moved to quarantine/redriven/; quarantined: still refused, left in
# quarantine/ingest/ with the new reason; missing: no such record (already redriven, expired);
# busy: the cluster's index was being applied, nothing done, ask again; refused: not a record
# of the consumer's quarantine.
REDRIVE_OUTCOMES = ("ingested", "quarantined", "missing", "busy", "refused")


class RedriveRequestError(ValueError):
    """A redrive request that is not one; the message names the field."""


def ingest_day_prefix(dt: str) -> str:
    """The quarantine/ingest/ records of one day (YYYY-MM-DD); listing from it skips the days
    before (S3 lists keys in order)."""
    return f"{INGEST_PREFIX}dt={dt}/"


def ingest_key(message_id: str, when_ms: int) -> str:
    dt = datetime.fromtimestamp(when_ms / 1000, tz=UTC).strftime("%Y-%m-%d")
    name = _UNSAFE_KEY_CHARS.sub("_", message_id) or "unknown"
    return f"{ingest_day_prefix(dt)}{name}.json"


def key_date(key: str) -> str | None:
    """The dt=<date> of a quarantine/ingest/ record key, None when `key` is not one."""
    match = _INGEST_KEY.fullmatch(key)
    return match.group(1) if match else None


def redriven_key(key: str) -> str:
    """Where a redriven record is kept: the same date and name under quarantine/redriven/."""
    if key_date(key) is None:
        raise RedriveRequestError(f"key {preview(key)} is not a record under {INGEST_PREFIX}")
    return REDRIVEN_PREFIX + key[len(INGEST_PREFIX):]


def record_cluster(record: Mapping[str, Any]) -> str | None:
    """The cluster a quarantine record's message group names ("<cluster>:<group key>")."""
    attributes = record.get("attributes")
    group = attributes.get("MessageGroupId") if isinstance(attributes, Mapping) else None
    return group.split(":", 1)[0] if isinstance(group, str) and ":" in group else None


def redrive_request(keys: Sequence[str]) -> dict[str, Any]:
    if not 0 < len(keys) <= MAX_REDRIVE_KEYS:
        raise RedriveRequestError(f"a redrive request names 1 to {MAX_REDRIVE_KEYS} keys, "
                                  f"got {len(keys)}")
    return {"redrive": {"keys": list(keys)}}


def is_redrive_request(event: Any) -> bool:
    return isinstance(event, Mapping) and "redrive" in event and "Records" not in event


def redrive_keys(event: Mapping[str, Any]) -> list[str]:
    """The keys of a redrive request; RedriveRequestError naming the field if it is not one."""
    body = event.get("redrive")
    keys = body.get("keys") if isinstance(body, Mapping) else None
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise RedriveRequestError("field 'redrive.keys' must be a list of strings")
    if not 0 < len(keys) <= MAX_REDRIVE_KEYS:
        raise RedriveRequestError(f"field 'redrive.keys' must name 1 to {MAX_REDRIVE_KEYS} "
                                  f"keys, got {len(keys)}")
    return keys


@dataclass(frozen=True, slots=True)
class RedriveResult:
    key: str
    outcome: str  # one of REDRIVE_OUTCOMES
    reason: str | None = None  # why still quarantined, busy, missing or refused
    # ingested: "pending" (its range not applied yet: the index takes it in txid order) or
    # "passed" (the index went past its txids without it: `verify` repairs the index)
    index: str | None = None
    redriven_key: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def redrive_results(response: Any) -> list[RedriveResult]:
    """The results of a redrive response; RedriveRequestError when it is not one."""
    rows = response.get("redrive") if isinstance(response, Mapping) else None
    if not isinstance(rows, list):
        raise RedriveRequestError(f"not a redrive response: {preview(response)}")
    try:
        return [RedriveResult(**row) for row in rows]
    except TypeError as exc:
        raise RedriveRequestError(f"not a redrive response row: {exc}") from exc
