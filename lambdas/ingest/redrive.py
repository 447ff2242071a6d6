"""Quarantined messages read again after a fix (`hdfs-events quarantine redrive`).

The request names quarantine records (hdfs_events.quarantine), never bodies: the consumer reads
each record from its own bucket, where only its role writes under quarantine/, so the SenderId
a record holds is the one SQS stamped and the sender rule applies again as it did on arrival.
Each message goes through MessageConsumer.process as delivered, so every check applies again.

Exactly once: the message's lake objects are keyed by its deduplication id and its arrival item
by the same id, as on arrival, so a redrive run once, twice or stopped half way leaves each event
in the lake once. A record is moved to quarantine/redriven/ (with the outcome) only after its
effects are stored; one still refused stays where it was, with the new reason.

The index: a quarantined message's range was applied without it, or waits for its manifest.
Its arrival is stored with the cluster's lease held, so no range is being applied meanwhile:
events after the position are applied in txid order with their range ("pending"); events at or
before it are not applied at all ("passed"), because an old event applied after newer ones can
bring back what they ended (a file created under a directory deleted since). `hdfs-events-agent
verify` repairs those paths.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Protocol

from hdfs_events.envelope import decode_envelope
from hdfs_events.names import KIND_ATTRIBUTE
from hdfs_events.quarantine import INGEST_KEY_FORM, RedriveResult, key_date, redriven_key
from lambdas.ingest.consumer import UNKNOWN_CLUSTER, EventLogger, MessageConsumer, cluster_hint
from lambdas.ingest.quarantine import message_from_record
from lambdas.ingest.records import QueueMessage
from lambdas.ingest.sequencer import LEASE_MARGIN_MS, Position

# The lease is held for one message's effects: a lake PUT per hour it spans and an arrival.
HOLD_MS = 60_000


class QuarantineRecords(Protocol):
    def read(self, key: str) -> bytes | None: ...

    def put(self, key: str, body: bytes, content_type: str) -> None: ...

    def delete(self, key: str) -> None: ...


class QuarantineRedrive:
    def __init__(self, *, consumer: MessageConsumer, records: QuarantineRecords,
                 logger: EventLogger, clock_ms: Callable[[], int]) -> None:
        self.consumer, self.records, self.logger = consumer, records, logger
        self.clock_ms = clock_ms

    def redrive(self, keys: Sequence[str]) -> list[RedriveResult]:
        results = []
        for key in keys:
            result = self._one(key)
            self.logger.info("quarantined message redriven", extra={
                "quarantine_key": key, "outcome": result.outcome, "reason": result.reason,
                "index": result.index})
            results.append(result)
        return results

    def _one(self, key: str) -> RedriveResult:
        if key_date(key) is None:
            return RedriveResult(key, "refused", reason="not a record of the consumer's "
                                 f"quarantine ({INGEST_KEY_FORM})")
        raw = self.records.read(key)
        if raw is None:
            return RedriveResult(key, "missing", reason="no such record: redriven already, or "
                                 "expired")
        try:
            record = json.loads(raw)
            message = message_from_record(record)
        except (ValueError, AttributeError) as exc:
            return RedriveResult(key, "refused", reason=f"unreadable quarantine record: {exc}")
        sequencer = self.consumer.sequencer
        cluster = cluster_hint(message)
        if (sequencer is None or cluster == UNKNOWN_CLUSTER
                or message.string_attribute(KIND_ATTRIBUTE) is not None):
            outcome, position = self.consumer.process(message), None
        else:
            with sequencer.holding(cluster, self.clock_ms() + HOLD_MS + LEASE_MARGIN_MS) as held:
                if held is None:
                    return RedriveResult(key, "busy", reason=f"the index of cluster {cluster!r} "
                                         "is being applied; redrive again")
                outcome, position = self.consumer.process(message), held
        if outcome.status == "quarantined":
            return RedriveResult(key, "quarantined", reason=outcome.reason)
        index = self._index(message, position)
        moved = redriven_key(key)
        record["redrive"] = {"at_ms": self.clock_ms(), "outcome": outcome.status,
                             "index": index, "previous_reason": record.get("reason")}
        self.records.put(moved, json.dumps(record, default=str).encode("utf-8"),
                         "application/json")
        self.records.delete(key)
        return RedriveResult(key, "ingested", index=index, redriven_key=moved)

    def _index(self, message: QueueMessage, position: Position | None) -> str | None:
        """What the index does with the redriven events (see the module docstring)."""
        sequencer = self.consumer.sequencer
        if sequencer is None or position is None:
            return None
        # Read again (pure, and redrives are rare): `process` keeps nothing of the message.
        indexed = [e for e in decode_envelope(message.body, message.message_attributes).events
                   if sequencer.index.relevant(e)]
        if not indexed:
            return "not indexed"  # no event under the index's prefixes
        return "pending" if position.before(indexed[0]) else "passed"
