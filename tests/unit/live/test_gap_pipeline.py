"""GAP and SNAPSHOT records in the shipping pipeline: the path filter keeps every GAP, and the
checkpoint never rests on a GAP's txid, so a restart meets the same gap and the same GAP key."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hdfs_events.event import EventType, HdfsEvent, INodeType
from onprem_agent.config import parse_config
from onprem_agent.filters import PathFilter
from onprem_agent.packer import PackedMessage
from onprem_agent.pipeline import Pipeline
from onprem_agent.source import TxBatch
from tests.unit.agent.doubles import MemoryStore, RecordingSender, manifests_sent, sent_keys

C = "prod"


class HoldingSender(RecordingSender):
    """Acknowledges event messages only when the test says so, manifests at once."""

    def __init__(self) -> None:
        super().__init__()
        self.acked: list[PackedMessage] = []

    def enqueue(self, message: PackedMessage) -> None:
        self.sent.append(message)
        if message.manifest is not None:
            self.ack(lambda m: m is message)

    def ack(self, accept: Callable[[PackedMessage], bool]) -> None:
        assert self._on_ack is not None
        for message in list(self.sent):
            if message not in self.acked and accept(message):
                self.acked.append(message)
                self._on_ack(message)

    def flush(self, timeout: float | None = None) -> bool:
        deadline = time.monotonic() + (timeout or 0)
        while len(self.acked) < len(self.sent) and time.monotonic() < deadline:
            time.sleep(0.01)
        return len(self.acked) == len(self.sent)


def config(**filters: object):
    doc = {"cluster": C, "sqs": {"queue_url": "https://q.fifo"},
           "checkpoint": {"path": "cp.json", "interval_ms": 10},
           "filter": filters, "packing": {"linger_ms": 10},
           "sending": {"shutdown_timeout_ms": 2000}}
    return parse_config(doc, Path("agent.toml"))


def unlink(txid: int, path: str) -> TxBatch:
    return TxBatch(txid, (HdfsEvent(C, txid, 0, EventType.UNLINK, path, timestamp=1),))


def gap(txid: int, end: int) -> TxBatch:
    return TxBatch(txid, (HdfsEvent(C, txid, 0, EventType.GAP, "/", timestamp=9,
                                    gap_end_txid=end),))


def snapshot(txid: int, *paths: str) -> TxBatch:
    return TxBatch(txid, tuple(HdfsEvent(C, txid, i, EventType.SNAPSHOT, p, timestamp=9,
                                         inode_type=INodeType.DIRECTORY)
                               for i, p in enumerate(paths)))


def until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 30  # generous: the flusher looks every 10 ms
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def test_gap_records_pass_cover_dirs_and_ignore_patterns_snapshot_records_do_not():
    keep = PathFilter(["/data"], [r"^/$", "tmp"]).keeps
    assert keep(gap(5, 9).events[0])
    assert [keep(e) for e in snapshot(9, "/data/a", "/other", "/data/tmp").events] == [
        True, False, False]


def test_policy_stop_ships_the_gap_and_the_checkpoint_stays_just_below_it():
    class GapStop(RuntimeError):
        pass

    def source() -> Iterator[list[TxBatch]]:  # chunks, as the live source hands them
        yield [unlink(1, "/data/a"), unlink(2, "/elsewhere/b")]  # the second filtered out
        yield [gap(5, 40)]  # txids 3 and 4 held no events; 5..39 were purged
        raise GapStop("gap_policy = stop")

    sender, store = RecordingSender(), MemoryStore()
    with pytest.raises(GapStop):
        Pipeline(config(cover_dirs=["/data"]), sender=sender, checkpoint=store).run(source())
    assert sent_keys(sender.sent) == [(C, 1, 0), (C, 5, 0)]
    # Everything below the gap is acknowledged, the gap itself never counts as passed: a
    # restart reads after txid 4, meets the same purge and writes the same GAP key (C, 5, 0).
    assert store.txid == 4 and 5 not in store.saves
    # No range closes on the GAP's txid either: the restart's first range starts at 4.
    assert [(m.after, m.end) for m in manifests_sent(sender.sent)][-1][1] == 4


def test_the_checkpoint_passes_the_gap_only_with_the_acknowledged_snapshot():
    release = threading.Event()

    def source() -> Iterator[list[TxBatch]]:
        yield [unlink(2, "/data/a")]
        yield [gap(3, 8)]
        yield [snapshot(10, "/data", "/data/b")]
        release.wait(30)

    sender, store = HoldingSender(), MemoryStore(1)
    pipeline = Pipeline(config(), sender=sender, checkpoint=store)
    runner = threading.Thread(target=pipeline.run, args=(source(),))
    runner.start()
    try:
        until(lambda: len(sent_keys(sender.sent)) == 4, "the unlink, GAP and SNAPSHOTs sent")
        # the unlink and the GAP, not the snapshot
        sender.ack(lambda m: m.manifest is None and m.txids[-1] < 10)
        until(lambda: store.txid == 2, "the checkpoint below the gap")
        time.sleep(0.1)  # ten checkpoint intervals: it must not move onto the GAP's txid
        assert store.saves == [2]
        sender.ack(lambda m: True)
        until(lambda: store.txid == 10, "the checkpoint after the snapshot")
    finally:
        release.set()
        sender.ack(lambda m: True)  # lets the run end whatever failed above
        runner.join(30)
    assert store.saves == [2, 10]
    assert [(m.after, m.end) for m in manifests_sent(sender.sent)] == [(1, 2), (2, 10)]
