"""What every event source hands the shipping pipeline: the events of one txid at a time.

Hadoop's inotify stream delivers EventBatch objects (one txid, one or more events); the edit-log
replay groups its translation the same way. The pipeline (filter -> packer -> sender ->
checkpoint) consumes an iterator of TxBatch and never knows which source it came from, so the
live source plugs in without changing it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import groupby

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
