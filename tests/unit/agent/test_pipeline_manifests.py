"""The pipeline's manifests over the real edit log: a contiguous chain from the resume point to
the checkpoint naming every message of its range, and a checkpoint that only ever rests on the
end of an acknowledged manifest's range."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from onprem_agent.config import parse_config
from onprem_agent.editlog import read_ops
from onprem_agent.packer import PackedMessage
from onprem_agent.pipeline import Pipeline
from onprem_agent.sender import NoopSender, PermanentSendError
from onprem_agent.source import TxBatch, chunked
from onprem_agent.translate import translate_batches
from tests.unit.agent.chain import check_chain
from tests.unit.agent.doubles import (
    MemoryStore,
    RecordingSender,
    event_messages,
    manifests_sent,
    sent_keys,
)

C = "c1"


def config(shutdown_timeout_ms: int = 5000, **packing: object):
    doc = {"cluster": C, "sqs": {"queue_url": "https://q.fifo"},
           "checkpoint": {"path": "cp.json", "interval_ms": 10},
           "packing": {"linger_ms": 20, "group_by": "path", **packing},
           "sending": {"shutdown_timeout_ms": shutdown_timeout_ms}}
    return parse_config(doc, Path("agent.toml"))


def edit_log(path: Path) -> list[TxBatch]:
    return list(translate_batches(read_ops(path), C, source=str(path)))


def until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 30  # generous: the flusher looks every 10 ms
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.005)


def txids_by_message(messages: list[PackedMessage]) -> dict[str, list[int]]:
    return {m.wire.dedup_id: list(m.txids) for m in event_messages(messages)}


def in_steps(batches: list[TxBatch], pipeline: Pipeline, step: int
             ) -> Iterator[list[TxBatch]]:
    """Hands out chunks of `step` batches, each once the manifest after the one before was
    acknowledged, so a run closes many ranges while its messages are still open."""
    for i in range(0, len(batches), step):
        yield batches[i:i + step]
        seen = pipeline.snapshot().manifests
        until(lambda seen=seen: pipeline.snapshot().manifests > seen, "the next manifest")


def test_the_chain_covers_the_edit_log_and_names_every_message_of_each_range(
        edits_sample: Path) -> None:
    batches = edit_log(edits_sample)
    sender, store = RecordingSender(), MemoryStore()
    pipeline = Pipeline(config(), sender=sender, checkpoint=store)
    result = pipeline.run(in_steps(batches, pipeline, 8))
    assert result.checkpoint_txid == store.txid == batches[-1].txid
    assert sent_keys(sender.sent) == sorted(e.key for b in batches for e in b.events)
    ranges = check_chain(manifests_sent(sender.sent), txids_by_message(sender.sent),
                         start=None, end=batches[-1].txid)
    assert len(ranges) >= len(batches) // 8
    assert result.manifests == len(manifests_sent(sender.sent))
    # Every checkpoint saved is the end of a range.
    assert set(store.saves) <= {r.end for r in ranges}


def test_a_restart_continues_the_chain_from_the_checkpoint(edits_sample: Path) -> None:
    batches = edit_log(edits_sample)
    store, stop = MemoryStore(), threading.Event()
    first, second = RecordingSender(), RecordingSender()
    pipeline = Pipeline(config(), sender=first, checkpoint=store)

    def until_halfway() -> Iterator[list[TxBatch]]:
        for chunk in in_steps(batches, pipeline, 8):
            yield chunk
            if chunk[-1].txid >= 40:
                stop.set()  # SIGTERM

    pipeline.run(until_halfway(), stop)
    resumed = store.txid
    assert resumed is not None and resumed < batches[-1].txid
    check_chain(manifests_sent(first.sent), txids_by_message(first.sent), start=None,
                end=resumed)

    result = Pipeline(config(), sender=second, checkpoint=store).run(chunked(batches))
    assert manifests_sent(second.sent)[0].after == resumed
    check_chain(manifests_sent(second.sent), txids_by_message(second.sent), start=resumed,
                end=batches[-1].txid)
    assert result.checkpoint_txid == batches[-1].txid
    # Together the two runs shipped every event past the first checkpoint again, none lost.
    keys = set(sent_keys(first.sent)) | set(sent_keys(second.sent))
    assert keys == {e.key for b in batches for e in b.events}


class ManifestWithholdingSender(RecordingSender):
    """Acknowledges event messages at once, manifests only when the test says so."""

    def __init__(self) -> None:
        super().__init__()
        self.withheld: list[PackedMessage] = []

    def enqueue(self, message: PackedMessage) -> None:
        if message.manifest is None:
            super().enqueue(message)
        else:
            self.sent.append(message)
            self.withheld.append(message)

    def release(self) -> None:
        assert self._on_ack is not None
        while self.withheld:
            self._on_ack(self.withheld.pop(0))

    def flush(self, timeout: float | None = None) -> bool:
        deadline = time.monotonic() + (10 if timeout is None else timeout)
        while self.withheld and time.monotonic() < deadline:
            time.sleep(0.005)
        return not self.withheld


def test_the_checkpoint_never_passes_an_unacknowledged_manifest(edits_sample: Path) -> None:
    batches = edit_log(edits_sample)
    sender, store, stop = ManifestWithholdingSender(), MemoryStore(), threading.Event()
    more, halfway = threading.Event(), batches.index(next(b for b in batches if b.txid >= 44))

    def source() -> Iterator[list[TxBatch]]:
        yield batches[:halfway]
        more.wait(30)
        yield batches[halfway:]
        until(lambda: len(manifests_sent(sender.sent)) == 2, "the second manifest")
        stop.set()  # SIGTERM with the second manifest never acknowledged

    pipeline = Pipeline(config(200), sender=sender, checkpoint=store)
    runner = threading.Thread(target=lambda: results.append(pipeline.run(source(), stop)))
    results: list = []
    runner.start()
    try:
        until(lambda: sender.withheld, "the first manifest")
        [first] = manifests_sent(sender.sent)
        assert first.after is None and first.end >= 1
        time.sleep(0.1)  # ten checkpoint intervals: the events are acknowledged, not the range
        assert store.saves == [] and pipeline.snapshot().checkpoint_txid is None
        sender.release()
        until(lambda: store.txid == first.end, "the checkpoint at the first range's end")
        more.set()
    finally:
        more.set()
        runner.join(30)
    [result] = results
    second = manifests_sent(sender.sent)[1]
    assert second.after == first.end < second.end  # cut once the first was acknowledged
    assert store.saves == [first.end] and result.checkpoint_txid == first.end
    assert not result.flushed  # the last manifest was not acknowledged in time


class ManifestRefusingSender(RecordingSender):
    """SQS refuses the manifests (say the principal may not send to that group)."""

    def __init__(self) -> None:
        super().__init__()
        self.error: PermanentSendError | None = None

    def enqueue(self, message: PackedMessage) -> None:
        if message.manifest is not None:
            self.error = PermanentSendError("AccessDenied on the manifest")
            raise self.error
        super().enqueue(message)

    def wait_for_capacity(self, stop: threading.Event | None = None) -> None:
        if self.error is not None:
            raise self.error

    def flush(self, timeout: float | None = None) -> bool:
        if self.error is not None:
            raise self.error
        return True


def test_a_refused_manifest_stops_the_run_below_its_range(edits_sample: Path) -> None:
    sender, store = ManifestRefusingSender(), MemoryStore()
    with pytest.raises(PermanentSendError, match="manifest"):
        Pipeline(config(), sender=sender, checkpoint=store).run(chunked(edit_log(edits_sample)))
    assert event_messages(sender.sent) and store.saves == []


def test_the_noop_sender_acknowledges_manifests_like_any_message(edits_sample: Path) -> None:
    sender, store = NoopSender(), MemoryStore()
    result = Pipeline(config(), sender=sender, checkpoint=store).run(
        chunked(edit_log(edits_sample)))
    assert result.checkpoint_txid == store.txid == 88 and result.flushed
    assert result.manifests >= 1 and result.events_sent == 32
    assert sender.stats.messages == result.messages + result.manifests
