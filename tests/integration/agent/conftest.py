"""Helpers for the agent's tests against moto server: FIFO queues, a concurrent drainer, and
checks of what arrived against the source edit log (event messages; manifests are checked
with tests/unit/agent/chain.py)."""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import boto3
import pytest

from hdfs_events.envelope import decode_message
from hdfs_events.event import HdfsEvent
from hdfs_events.manifest import Manifest, decode_manifest, is_manifest
from onprem_agent.editlog import read_ops
from onprem_agent.filters import PathFilter
from onprem_agent.translate import translate_ops

REPO = Path(__file__).resolve().parents[3]


def create_fifo_queue(name: str = "hdfs-events.fifo") -> str:
    return boto3.client("sqs").create_queue(
        QueueName=name, Attributes={"FifoQueue": "true", "VisibilityTimeout": "60"})["QueueUrl"]


@dataclass(frozen=True, slots=True)
class Received:
    group_id: str
    dedup_id: str
    events: tuple[HdfsEvent, ...]  # () for a manifest
    manifest: Manifest | None = None


def event_messages(received: list[Received]) -> list[Received]:
    return [r for r in received if r.manifest is None]


def manifests(received: list[Received]) -> list[Manifest]:
    return [r.manifest for r in received if r.manifest is not None]


def event_keys_by_message(received: list[Received]) -> dict[str, list[tuple[str, int, int]]]:
    return {r.dedup_id: [e.key for e in r.events] for r in event_messages(received)}


def event_txids_by_message(received: list[Received]) -> dict[str, list[int]]:
    return {r.dedup_id: [e.txid for e in r.events] for r in event_messages(received)}


class Drainer:
    """Receives and deletes messages on a thread while the agent sends (moto slows down as a
    FIFO queue fills), keeping them in receive order, which per group is send order."""

    def __init__(self, queue_url: str) -> None:
        self.queue_url = queue_url
        self.client = boto3.client("sqs")
        self.received: list[Received] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Drainer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(60)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.poll(wait_s=1)

    def poll(self, wait_s: int = 0) -> int:
        response = self.client.receive_message(
            QueueUrl=self.queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=wait_s,
            MessageAttributeNames=["All"],
            MessageSystemAttributeNames=["MessageGroupId", "MessageDeduplicationId"])
        messages = response.get("Messages", [])
        for m in messages:
            attrs = m["Attributes"]
            group, dedup = attrs["MessageGroupId"], attrs["MessageDeduplicationId"]
            if is_manifest(m.get("MessageAttributes")):
                self.received.append(Received(group, dedup, (), decode_manifest(m["Body"])))
            else:
                self.received.append(Received(
                    group, dedup, tuple(decode_message(m["Body"], m.get("MessageAttributes")))))
        if messages:
            self.client.delete_message_batch(QueueUrl=self.queue_url, Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]}
                for i, m in enumerate(messages)])
        return len(messages)

    def finish(self) -> list[Received]:
        """Stops the thread and empties the queue."""
        self.__exit__()
        empty = 0
        while empty < 3:
            empty = 0 if self.poll(wait_s=1) else empty + 1
        return self.received


def source_events(path: Path, cluster: str, cover_dirs: Iterable[str] = (),
                  ignore_patterns: Iterable[str] = ()) -> list[HdfsEvent]:
    keep = PathFilter(cover_dirs, ignore_patterns).keeps
    return [e for e in translate_ops(read_ops(path), cluster) if keep(e)]


def check_delivery(received: list[Received], expected: list[HdfsEvent], group_of) -> int:
    """Every expected event arrived; each message is a whole, in-order run of its group's
    events (so any duplicate is a re-sent message); after a dedup on (cluster, txid, index)
    every group reads in (txid, index) order. Returns the number of duplicate events."""
    by_group: dict[str, list[tuple[str, int, int]]] = defaultdict(list)
    for e in expected:
        by_group[group_of(e)].append(e.key)
    position = {key: (g, i) for g, keys in by_group.items() for i, key in enumerate(keys)}
    seen: set[tuple[str, int, int]] = set()
    last_new: dict[str, int] = {}
    duplicates = 0
    for message in event_messages(received):
        keys = [e.key for e in message.events]
        places = [position.get(k) for k in keys]
        assert None not in places, f"message {message.dedup_id} holds events not in the source"
        groups = {g for g, _ in places}
        assert groups == {message.group_id}, f"message {message.dedup_id} mixes groups"
        indexes = [i for _, i in places]
        assert indexes == list(range(indexes[0], indexes[0] + len(indexes))), (
            f"message {message.dedup_id} is not a contiguous run of its group")
        for key, (group, i) in zip(keys, places, strict=True):
            if key in seen:
                duplicates += 1
                continue
            assert i > last_new.get(group, -1), f"group {group} out of order at {key}"
            last_new[group] = i
            seen.add(key)
    missing = set(position) - seen
    assert not missing, f"{len(missing)} events never arrived, e.g. {sorted(missing)[:5]}"
    return duplicates


@pytest.fixture
def agent_toml(tmp_path: Path):
    def write(queue_url: str, *, cluster: str = "c1", extra: str = "", **packing: object) -> Path:
        lines = [f"{k} = {v!r}".replace("'", '"') if not isinstance(v, bool)
                 else f"{k} = {str(v).lower()}" for k, v in packing.items()]
        path = tmp_path / "agent.toml"
        path.write_text(
            f'cluster = "{cluster}"\n[sqs]\nqueue_url = "{queue_url}"\n'
            f'[checkpoint]\npath = "checkpoint.json"\ninterval_ms = 200\n'
            f"[packing]\n" + "\n".join(lines) + "\n" + extra, encoding="utf-8")
        return path

    return write
