"""A test double of agents not yet written: what the next minor and the next major of the
envelope would send (docs/contract.md, "Versions"). Named as a double: no such agent exists, and
the real agent's writer stays on the current version."""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Sequence
from typing import Any

from hdfs_events.envelope import ENVELOPE_MINOR, ENVELOPE_VERSION, encode_message
from hdfs_events.event import HdfsEvent
from tests.kit.lambda_events import Sent

# What a next minor might add: an envelope field and an event field this consumer never heard of.
NEW_ENVELOPE_FIELDS: dict[str, Any] = {"agent": {"version": "2.1.0", "host": "nn-edge-3"}}
NEW_EVENT_FIELD = "storage_policy"


def next_agent_message(events: Sequence[HdfsEvent], *, group_id: str, major: int | None = None,
                       sent_ms: int = 1_421_135_900_000) -> Sent:
    """`events` as the next minor of this major would send them, gzip+base64: each event with
    NEW_EVENT_FIELD, the envelope with NEW_ENVELOPE_FIELDS. Given `major`, that major's minor 0
    instead, with today's fields: what a new major changes is their meaning."""
    current = encode_message(events, group_id=group_id, compress=False)
    if major is None:
        doc = {"v": ENVELOPE_VERSION, "minor": ENVELOPE_MINOR + 1,
               "events": [{**e.to_dict(), NEW_EVENT_FIELD: f"HOT-{e.txid}"} for e in events],
               **NEW_ENVELOPE_FIELDS}
    else:
        doc = {"v": major, "events": [e.to_dict() for e in events]}
    raw = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
    body = base64.b64encode(gzip.compress(raw.encode("utf-8"), mtime=0)).decode("ascii")
    return Sent(body=body, encoding="gzip+base64", group_id=group_id, dedup_id=current.dedup_id,
                sent_ms=sent_ms)
