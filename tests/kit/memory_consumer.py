"""The real consumer, sequencer and index on in-memory stores (fast enough for hundreds of
hypothesis examples), and the messages Lambda would hand it."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from hdfs_events.event import HdfsEvent
from lambdas.ingest.consumer import MessageConsumer
from lambdas.ingest.index import NamespaceIndex
from lambdas.ingest.records import QueueMessage
from lambdas.ingest.senders import ClusterSenders
from lambdas.ingest.sequencer import IndexSequencer
from tests.kit.lambda_events import AGENT_SENDER_IDS, Sent, record
from tests.kit.memory_stores import MemoryIndexStore, MemorySequenceStore

SENDERS = ClusterSenders({c: frozenset({s}) for c, s in AGENT_SENDER_IDS.items()})


class MemoryLake:
    """The consumer's Lake (and the sequencer's raw reader) in memory."""

    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}
        self.reads = 0  # objects read back (the sequencer reads a range's events it missed)

    def put(self, key: str, body: bytes, content_type: str,
            metadata: Mapping[str, str] | None = None) -> None:
        self.objects[key] = body

    def events_by_object(self, keys: Sequence[str]) -> Iterator[list[HdfsEvent]]:
        for key in keys:
            self.reads += 1
            yield [HdfsEvent.from_dict(json.loads(line))
                   for line in gzip.decompress(self.objects[key]).splitlines() if line]

    def quarantined(self) -> dict[str, dict[str, Any]]:
        return {k: json.loads(v) for k, v in self.objects.items() if k.startswith("quarantine/")}

    def raw_keys(self) -> list[str]:
        return sorted(k for k in self.objects if k.startswith("raw/"))


class RecordingLogger:
    def __init__(self) -> None:
        self.lines: list[tuple[str, str, dict[str, Any]]] = []

    def _log(self, level: str, msg: str, *args: object, extra: dict | None = None,
             **kw: object) -> None:
        self.lines.append((level, msg, extra or {}))

    def info(self, msg: str, *args: object, **kw: Any) -> None:
        self._log("INFO", msg, **kw)

    def error(self, msg: str, *args: object, **kw: Any) -> None:
        self._log("ERROR", msg, **kw)

    def warning(self, msg: str, *args: object, **kw: Any) -> None:
        self._log("WARNING", msg, **kw)

    def exception(self, msg: str, *args: object, **kw: Any) -> None:
        self._log("EXCEPTION", msg, **kw)


def in_memory_consumer(prefixes: Sequence[str] = ("/",)) -> tuple[MessageConsumer, MemoryLake,
                                                                   MemoryIndexStore]:
    """The real consumer, sequencer and index on in-memory stores; no continue requests."""
    lake, store = MemoryLake(), MemoryIndexStore()
    sequencer = IndexSequencer(MemorySequenceStore(), NamespaceIndex(store, list(prefixes)), lake)
    consumer = MessageConsumer(lake=lake, sequencer=sequencer, continue_requests=None,
                               log_mode="all", logger=RecordingLogger(), senders=SENDERS)
    return consumer, lake, store


def queue_message(sent: Sent, *, sender_id: str | None = None) -> QueueMessage:
    """What the handler hands the consumer for `sent`, as Lambda delivers it."""
    return QueueMessage.from_lambda_record(record(sent, sender_id=sender_id))
