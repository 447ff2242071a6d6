"""In-memory edges of the shipping pipeline, shared by the agent's and the live source's tests."""

from __future__ import annotations

import threading

from hdfs_events.envelope import decode_message
from hdfs_events.manifest import Manifest, decode_manifest, is_manifest
from onprem_agent.packer import PackedMessage
from onprem_agent.sender import NoopSender


class MemoryStore:
    """A checkpoint store that remembers every save."""

    def __init__(self, txid: int | None = None) -> None:
        self.txid, self.saves = txid, []

    def load(self) -> int | None:
        return self.txid

    def save(self, txid: int) -> None:
        self.saves.append(txid)
        self.txid = txid


class RecordingSender(NoopSender):
    """Acknowledges at once, like the no-op sender, and keeps what it was given."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[PackedMessage] = []
        self.arrived = threading.Event()

    def enqueue(self, message: PackedMessage) -> None:
        self.sent.append(message)
        self.arrived.set()
        super().enqueue(message)


def event_messages(messages: list[PackedMessage]) -> list[PackedMessage]:
    """The event messages among what a sender was given (manifests left out, by the `kind`
    attribute the consumer reads)."""
    return [m for m in messages if not is_manifest(m.wire.attributes)]


def manifests_sent(messages: list[PackedMessage]) -> list[Manifest]:
    """The manifests among what a sender was given, decoded from their bodies."""
    return [decode_manifest(m.wire.body) for m in messages if is_manifest(m.wire.attributes)]


def sent_keys(messages: list[PackedMessage]) -> list[tuple[str, int, int]]:
    """The (cluster, txid, index) keys of every event in the event messages, sorted."""
    return sorted(e.key for m in event_messages(messages)
                  for e in decode_message(m.wire.body, m.wire.attributes))
