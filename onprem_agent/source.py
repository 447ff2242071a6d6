"""What every event source hands the shipping pipeline: the events of one txid at a time, in
chunks of the batches the source has at hand.

Hadoop's inotify stream delivers EventBatch objects (one txid, one or more events); the edit-log
replay groups its translation the same way. The pipeline (filter -> packer -> sender ->
checkpoint) consumes an iterator of chunks (sequences of TxBatch, txids increasing) and never
knows which source it came from, so the live source plugs in without changing it.

A chunk is what the source has without waiting: one drain of the inotify stream (the live
source), CHUNK_BATCHES translated txids (a replay), one snapshot piece. The pipeline takes a
chunk in one step (one lock, one look at the sender's capacity, one packer call), where a step
per batch cost ~0.6 us a batch, an eighth of its CPU (bench.ship: most batches hold one event).
A source that may block between two batches must yield what it has before it blocks, never
wait to fill a chunk: a quiet cluster's event would wait for the next one.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import groupby, islice

from hdfs_events.event import HdfsEvent


@dataclass(frozen=True, slots=True)
class TxBatch:
    """The events of one txid, in index order (index 0..n-1). May be empty: a txid whose op
    yields no event still advances the checkpoint. `more`: a piece of a txid too large to hold
    at once (a namespace snapshot); the next batch goes on with the same txid, at the next
    index, and the txid is done only with the piece that has `more` False."""

    txid: int
    events: tuple[HdfsEvent, ...]
    more: bool = False


def batches_by_txid(events: Iterable[HdfsEvent]) -> Iterator[TxBatch]:
    """Groups a (txid, index)-ordered event stream into TxBatch objects."""
    for txid, group in groupby(events, key=lambda e: e.txid):
        yield TxBatch(txid=txid, events=tuple(group))


Chunk = Sequence[TxBatch]


class ReadChunk(list[TxBatch]):
    """A chunk of a source that waits for its batches (the live stream), and when its first batch
    was read, on the pipeline's clock (time.monotonic). A message the chunk opens lingers from
    then, not from when the pipeline packs it: a drain at full speed reads for ~0.5 s (up to
    1,000 batches, at ~50 ms a getEditsFromTxid call), and lingering on after it held every
    event 200 ms more without making messages larger (the next drain comes after the message
    is due either way). `[packing] linger_ms` is thus how long an event waits in the agent for
    company after it was read, as docs/agent.md says."""

    __slots__ = ("read_at",)

    def __init__(self, batches: Iterable[TxBatch], read_at: float) -> None:
        super().__init__(batches)
        self.read_at = read_at
# Batches a replay hands over at once: ~1 ms of packing, so the pipeline's flusher (linger,
# checkpoints) never waits long for the lock, and the per-chunk steps cost nothing per event.
CHUNK_BATCHES = 256


def chunked(batches: Iterable[TxBatch], size: int = CHUNK_BATCHES) -> Iterator[list[TxBatch]]:
    """`batches` in chunks of up to `size`: for a source that never waits between batches (a
    file being read), or `size` 1 for one that may. When `batches` raises (a record the replay
    cannot read), the batches before it still come as a chunk, then the error: they ship, and
    the checkpoint reaches them, as when the pipeline took one batch at a time."""
    it = iter(batches)
    while True:
        chunk: list[TxBatch] = []
        try:
            chunk.extend(islice(it, size))  # keeps what it appended before an error
        except BaseException:
            if chunk:
                yield chunk
            raise
        if not chunk:
            return
        yield chunk
