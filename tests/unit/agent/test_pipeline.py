"""The pipeline source -> filter -> packer -> sender -> checkpoint, with in-memory edges."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hdfs_events.envelope import decode_message
from hdfs_events.event import EventType, HdfsEvent
from onprem_agent.config import parse_config
from onprem_agent.packer import PackedMessage
from onprem_agent.pipeline import Pipeline
from onprem_agent.sender import PermanentSendError
from onprem_agent.source import ReadChunk, TxBatch, chunked
from tests.unit.agent.doubles import (
    MemoryStore,
    RecordingSender,
    event_messages,
    manifests_sent,
    sent_keys,
)


class HoldingSender(RecordingSender):
    """Acknowledges event messages only when told, in any order; manifests at once unless
    `hold_manifests`."""

    def __init__(self, *, hold_manifests: bool = False) -> None:
        super().__init__()
        self.acked: list[PackedMessage] = []
        self.hold_manifests = hold_manifests

    def enqueue(self, message: PackedMessage) -> None:
        self.sent.append(message)
        self.arrived.set()
        if message.manifest is not None and not self.hold_manifests:
            self.ack(message)

    def ack(self, message: PackedMessage) -> None:
        assert self._on_ack is not None
        self.acked.append(message)
        self._on_ack(message)

    def waiting(self, group_id: str) -> bool:
        acked = set(map(id, self.acked))
        return any(m.wire.group_id == group_id and id(m) not in acked for m in self.sent)

    def flush(self, timeout: float | None = None) -> bool:
        deadline = time.monotonic() + (10 if timeout is None else timeout)
        while len(self.acked) < len(self.sent):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.005)
        return True


def config(shutdown_timeout_ms: int = 5000, **packing: object):
    doc = {"cluster": "c1", "sqs": {"queue_url": "https://q.fifo"},
           "checkpoint": {"path": "cp.json", "interval_ms": 10},
           "filter": {"ignore_patterns": [r"\._COPYING_$"]},
           "packing": {"linger_ms": 50, **packing},
           "sending": {"shutdown_timeout_ms": shutdown_timeout_ms}}
    return parse_config(doc, Path("agent.toml"))


def batch(txid: int, *paths: str) -> TxBatch:
    return TxBatch(txid, tuple(HdfsEvent(cluster="c1", txid=txid, index=i, type=EventType.CLOSE,
                                         path=p) for i, p in enumerate(paths)))


def test_everything_is_sent_and_the_checkpoint_reaches_the_last_txid() -> None:
    sender, store = RecordingSender(), MemoryStore()
    source = [batch(1, "/d/a/x"), batch(2), batch(3, "/d/b/y", "/d/a/z"), batch(4)]
    result = Pipeline(config(), sender=sender, checkpoint=store).run(chunked(source))
    assert result.events_sent == result.events_read == 3
    assert store.txid == 4 and result.checkpoint_txid == 4 and result.flushed
    assert sent_keys(sender.sent) == [("c1", 1, 0), ("c1", 3, 0), ("c1", 3, 1)]
    assert result.messages == len(event_messages(sender.sent))
    assert result.manifests == len(manifests_sent(sender.sent)) >= 1
    assert manifests_sent(sender.sent)[-1].end == 4


def test_a_chunk_longer_than_a_step_ships_whole_with_the_checkpoint_at_its_end() -> None:
    # A live drain may hand over max_batches_per_drain batches at once: the pipeline takes
    # them in steps of CHUNK_BATCHES, the flusher and the sender's capacity between steps.
    sender, store = RecordingSender(), MemoryStore()
    chunk = [batch(t, f"/d/{t % 7}/f{t}") if t % 3 else batch(t) for t in range(1, 1001)]
    result = Pipeline(config(), sender=sender, checkpoint=store).run([chunk])
    assert result.batches == 1000 and result.events_sent == result.events_read == 667
    assert store.txid == result.checkpoint_txid == 1000
    assert sorted(sent_keys(sender.sent)) == [("c1", t, 0) for t in range(1, 1001) if t % 3]


def test_txids_without_events_are_counted_and_reported_while_the_source_waits() -> None:
    # The loop only notes such a txid (most ops yield no event); progress and the result must
    # still count it, and the checkpoint pass it.
    pipeline = Pipeline(config(), sender=RecordingSender(), checkpoint=MemoryStore())
    seen: list[int | None] = []

    def source() -> Iterator[TxBatch]:
        yield from (batch(1, "/d/a/x"), batch(2), batch(3))
        seen.append(pipeline.snapshot().last_txid)

    result = pipeline.run(chunked(source(), 1))
    assert seen == [3]
    assert result.batches == 3 and result.checkpoint_txid == 3


def test_linger_flushes_while_the_source_is_blocked() -> None:
    sender = RecordingSender()
    seen_during_block: list[int] = []

    def slow_source() -> Iterator[TxBatch]:
        yield batch(1, "/d/a/x")
        # The source blocks (a quiet cluster); the message must still go out after linger.
        sender.arrived.wait(timeout=10)
        seen_during_block.append(len(event_messages(sender.sent)))
        yield batch(2, "/d/a/y")

    Pipeline(config(linger_ms=20), sender=sender, checkpoint=MemoryStore()).run(
        chunked(slow_source(), 1))
    assert seen_during_block == [1]
    assert [m.wire.event_count for m in event_messages(sender.sent)] == [1, 1]


def test_a_drain_read_a_linger_ago_goes_out_whole_before_the_next_drain_is_read() -> None:
    # A drain at full speed reads for ~0.5 s: its messages linger from its first batch's read,
    # so they are due once it is packed. They go out then, not a linger later, and not after
    # the drain's first step of CHUNK_BATCHES (each group's message holds the whole drain).
    sender = RecordingSender()
    sent_before_next: list[list[int]] = []
    drain = [batch(t, f"/d/{t % 3}/f{t}") for t in range(1, 601)]

    def source() -> Iterator[ReadChunk]:
        yield ReadChunk(drain, read_at=time.monotonic() - 0.6)
        sent_before_next.append(sorted(m.wire.event_count for m in event_messages(sender.sent)))
        yield ReadChunk([batch(601, "/d/0/g")], read_at=time.monotonic())
        sent_before_next.append(sorted(m.wire.event_count for m in event_messages(sender.sent)))

    result = Pipeline(config(linger_ms=500), sender=sender, checkpoint=MemoryStore()).run(
        source())
    assert sent_before_next == [[200, 200, 200], [200, 200, 200]]  # the fresh one lingers
    assert result.events_sent == 601 and result.checkpoint_txid == 601


def test_a_group_with_a_message_in_flight_gets_its_next_message_once_that_one_is_acked() -> None:
    # Nagle's rule (packer.py): while SQS has not acknowledged a group's message, what follows
    # in the group stays open however old, and goes out in one message once it is.
    sender = HoldingSender()
    in_flight: list[int] = []

    def source() -> Iterator[ReadChunk]:
        yield ReadChunk([batch(1, "/d/a/x")], read_at=time.monotonic())
        assert sender.arrived.wait(timeout=10)  # sealed a linger later, not acknowledged
        for t in range(2, 6):
            yield ReadChunk([batch(t, f"/d/a/f{t}")], read_at=time.monotonic())
            time.sleep(0.06)  # each older than the 50 ms linger before the next
        in_flight.append(len(event_messages(sender.sent)))
        sender.ack(event_messages(sender.sent)[0])
        deadline = time.monotonic() + 10
        while len(event_messages(sender.sent)) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        for message in event_messages(sender.sent)[1:]:
            sender.ack(message)

    result = Pipeline(config(linger_ms=50), sender=sender, checkpoint=MemoryStore()).run(
        source())
    assert in_flight == [1]
    assert [m.wire.event_count for m in event_messages(sender.sent)] == [1, 4]
    assert result.events_sent == 5 and result.checkpoint_txid == 5


def test_checkpoint_waits_for_out_of_order_acknowledgements() -> None:
    sender, store = HoldingSender(), MemoryStore()
    stop = threading.Event()
    pipeline = Pipeline(config(group_by="path", linger_ms=1), sender=sender, checkpoint=store)
    # txid 1 has events in two groups (two messages); txid 2 one more.
    source = [batch(1, "/d/a/x", "/d/b/y"), batch(2, "/d/c/z")]
    runner = threading.Thread(target=pipeline.run, args=(chunked(source), stop))
    runner.start()
    while len(event_messages(sender.sent)) < 3:
        sender.arrived.wait(1)
        sender.arrived.clear()
    by_path = {decode_message(m.wire.body, m.wire.attributes)[0].path: m
               for m in event_messages(sender.sent)}
    sender.ack(by_path["/d/c/z"])
    sender.ack(by_path["/d/b/y"])
    time.sleep(0.1)  # ten checkpoint intervals: none may pass txid 1 yet
    assert store.txid is None
    sender.ack(by_path["/d/a/x"])
    runner.join(10)
    assert store.txid == 2


class AcksOnePath(HoldingSender):
    """Acknowledges the message of /d/a/x as it is sent (no thread has to be on time for a
    shutdown's flush); every other event message, never."""

    def enqueue(self, message: PackedMessage) -> None:
        super().enqueue(message)
        if message.manifest is None and decode_message(
                message.wire.body, message.wire.attributes)[0].path == "/d/a/x":
            self.ack(message)


def test_unacknowledged_events_hold_the_checkpoint_back_on_shutdown() -> None:
    sender, store = AcksOnePath(), MemoryStore(txid=10)
    stop = threading.Event()

    def source() -> Iterator[TxBatch]:
        yield from [batch(11, "/d/a/x"), batch(12), batch(13, "/d/b/y")]
        stop.set()  # SIGTERM: wait only shutdown_timeout_ms for SQS

    pipeline = Pipeline(config(200, group_by="path"), sender=sender, checkpoint=store)
    thread = threading.Thread(target=pipeline.run, args=(chunked(source(), 1), stop))
    thread.start()
    thread.join(10)
    assert len(event_messages(sender.sent)) == 2  # /d/b/y's never acknowledged: flush timed out
    assert store.txid == 12


def test_filtered_out_events_count_as_acknowledged() -> None:
    sender, store = RecordingSender(), MemoryStore()
    result = Pipeline(config(), sender=sender, checkpoint=store).run(
        [[batch(1, "/d/a/f._COPYING_"), batch(2, "/d/a/f._COPYING_")]])
    assert event_messages(sender.sent) == [] and result.events_filtered == 2
    assert store.txid == 2
    # The range still gets its manifest, naming no message: the consumer moves past it.
    assert [(m.after, m.end, m.messages) for m in manifests_sent(sender.sent)] == [(None, 2, ())]


def test_restart_skips_txids_at_or_below_the_checkpoint() -> None:
    sender = RecordingSender()
    result = Pipeline(config(), sender=sender, checkpoint=MemoryStore(2)).run(
        [[batch(1, "/a"), batch(2, "/a"), batch(3, "/a")]])
    assert result.events_read == 1
    [message] = event_messages(sender.sent)
    assert decode_message(message.wire.body, message.wire.attributes)[0].txid == 3
    [manifest] = manifests_sent(sender.sent)
    assert (manifest.after, manifest.end, manifest.messages) == (2, 3, (message.wire.dedup_id,))


def test_a_source_repeating_itself_inside_a_chunk_ships_each_txid_once() -> None:
    sender = RecordingSender()
    chunk = [batch(1, "/a"), batch(2, "/a"), batch(2, "/a"), batch(1, "/a"), batch(3, "/a")]
    result = Pipeline(config(), sender=sender, checkpoint=MemoryStore()).run([chunk])
    assert result.events_read == 3 and result.checkpoint_txid == 3
    assert sent_keys(sender.sent) == [("c1", 1, 0), ("c1", 2, 0), ("c1", 3, 0)]


def test_a_range_never_ends_on_a_gap_records_txid() -> None:
    # The GAP record stands for purged edits up to its gap_end_txid: a manifest ending on its
    # txid would tell the consumer the range is whole (module doc of pipeline.py).
    gap = TxBatch(3, (HdfsEvent(cluster="c1", txid=3, index=0, type=EventType.GAP, path="/",
                                gap_end_txid=9),))
    sender = RecordingSender()
    result = Pipeline(config(), sender=sender, checkpoint=MemoryStore()).run(
        [[batch(1, "/a"), batch(2, "/b"), gap]])
    assert result.events_sent == 3
    assert manifests_sent(sender.sent)[-1].end == 2


def test_stop_seals_what_is_open_and_saves() -> None:
    sender, store = RecordingSender(), MemoryStore()
    stop = threading.Event()

    def source() -> Iterator[TxBatch]:
        yield batch(1, "/d/a/x")
        yield batch(2, "/d/a/y")
        stop.set()
        yield batch(3, "/d/a/z")

    result = Pipeline(config(linger_ms=60_000), sender=sender, checkpoint=store).run(
        chunked(source(), 1), stop)
    assert result.events_sent == 2 and store.txid == 2


def test_a_source_error_saves_what_was_acknowledged_then_raises() -> None:
    store = MemoryStore()

    def source() -> Iterator[TxBatch]:
        yield batch(1, "/d/a/x")
        yield batch(2, "/d/a/y")
        raise ValueError("bad record after txid 2")

    # Chunked as the replay's: the batches read before the error still ship.
    with pytest.raises(ValueError, match="bad record"):
        Pipeline(config(), sender=RecordingSender(), checkpoint=store).run(chunked(source()))
    assert store.txid == 2


def test_a_permanent_send_error_stops_the_run() -> None:
    class Refusing(HoldingSender):
        def wait_for_capacity(self, stop: threading.Event | None = None) -> None:
            if self.sent:
                raise PermanentSendError("AccessDenied")

    store, sender = MemoryStore(), Refusing()

    def source() -> Iterator[TxBatch]:
        yield batch(1, "/d/a/x")
        sender.arrived.wait(10)  # sealed by linger, never acknowledged
        yield from (batch(t, "/d/a/x") for t in range(2, 10))

    with pytest.raises(PermanentSendError, match="AccessDenied"):
        Pipeline(config(linger_ms=0), sender=sender, checkpoint=store).run(chunked(source(), 1))
    assert store.txid is None


def test_a_snapshot_in_pieces_is_checkpointed_only_after_its_last_piece_is_acknowledged(
        ) -> None:
    sender, store = HoldingSender(), MemoryStore(txid=4)
    first_acked, stop = threading.Event(), threading.Event()

    def snapshot(txid: int, start: int, *paths: str, more: bool) -> TxBatch:
        return TxBatch(txid, tuple(HdfsEvent(cluster="c1", txid=txid, index=start + i,
                                             type=EventType.SNAPSHOT, path=p,
                                             inode_type="FILE") for i, p in enumerate(paths)),
                       more=more)

    def source() -> Iterator[TxBatch]:
        yield snapshot(9, 0, "/d/a", "/d/b", more=True)
        first_acked.wait(10)
        yield snapshot(9, 2, "/d/c", more=False)
        yield batch(10, "/d/a")

    pipeline = Pipeline(config(linger_ms=1), sender=sender, checkpoint=store)
    runner = threading.Thread(target=pipeline.run, args=(chunked(source(), 1), stop))
    runner.start()
    while not event_messages(sender.sent):
        sender.arrived.wait(1)
        sender.arrived.clear()
    acked = event_messages(sender.sent)
    for message in acked:
        sender.ack(message)
    time.sleep(0.1)  # ten checkpoint intervals with every piece so far acknowledged
    assert store.txid == 4
    first_acked.set()
    while runner.is_alive():
        for message in event_messages(sender.sent)[len(acked):]:
            sender.ack(message)
            acked.append(message)
        runner.join(0.02)
    assert store.txid == 10
    assert sent_keys(sender.sent) == [("c1", 9, 0), ("c1", 9, 1), ("c1", 9, 2), ("c1", 10, 0)]
