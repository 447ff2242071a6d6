"""In-memory edges of the shipping pipeline, shared by the agent's and the live source's tests."""

from __future__ import annotations

import threading

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
