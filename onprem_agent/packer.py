"""Packs events into SQS messages: one open message per message group, sealed by size or age.

Events of one group go into one message in arrival order, so a group's events stay in
(txid, index) order inside and across its messages. A message is sealed when

- the next event would take its encoded size past `max_message_bytes` (default 64 KiB: SQS
  bills every 64 KiB chunk of a request as one request, so a full chunk is the cheapest unit);
- it has been open `linger` seconds (the caller asks `expired(now)`): freshness at low rates;
  but not while an earlier message of its group is still queued or in flight (`expired`'s
  `waiting`, the sender's): sealed, it would only wait behind that one, so it stays open and
  grows (Nagle's rule). A queue answering slowly then gets fewer, fuller messages instead of a
  backlog of small ones, and a fast one gets every message a linger after its first event;
- the caller flushes (end of input, shutdown).

The compressed size is only known after compressing. The packer predicts it from the raw JSON
size times the ratio measured on the messages it sealed before (starting from a conservative
guess), seals a little under the limit, and when a message still comes out too large, it keeps
the prefix that fits by the measured ratio and leaves the rest open: nothing is compressed more
than about twice, and no message ever exceeds the limit. A single event larger than the limit is
sent alone (up to the SQS hard limit of 1 MiB; beyond that `MessageTooLarge`).

Every event is checked against the contract (hdfs_events.validation) before it is packed. One
the consumer would refuse (a path longer than the namespace index can key, say) is sealed
alone in a message of its own, after the open message of its group: the consumer quarantines
exactly that message with the reason, and no valid event shares its fate. It is logged here,
and counted in `PackerStats.rejected`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import repeat
from operator import attrgetter, ne

from hdfs_events.envelope import (
    ENVELOPE_MINOR,
    WireMessage,
    encode_message,
    encode_written,
    minor_needed,
)
from hdfs_events.event import EventFormatError, HdfsEvent
from hdfs_events.event_json import checked_sparse_json
from hdfs_events.ids import group_key, sqs_safe_id
from hdfs_events.manifest import Manifest

log = logging.getLogger(__name__)

# Fill to this share of the limit: a little headroom keeps re-splits rare when the compression
# ratio drifts between messages.
_FILL = 0.96
# First guesses of encoded/raw size before any message was measured. Canonical event JSON is
# mostly repeated keys, gzip+base64 ends up at ~0.05-0.15 of it; 0.3 is on the safe
# side (an early message is smaller than it could be, never too large).
_FIRST_RATIO = {True: 0.3, False: 1.0}
_ENVELOPE_OVERHEAD = 40  # {"v":1,"events":[]} plus the encoding attribute
_GROUP_CACHE_LIMIT = 100_000
_txid = attrgetter("txid")
_path = attrgetter("path")
_cluster = attrgetter("cluster")


@dataclass(frozen=True, slots=True)
class PackedMessage:
    """A sealed message and what its acknowledgement means for the checkpoint."""

    wire: WireMessage
    txids: tuple[int, ...] = ()  # the txids it holds events of, ascending (manifests.py)
    # The checkpoint its acknowledgement holds back: the txid the source had finished when the
    # message opened (checkpoint.CheckpointTracker); every event in it has a higher txid.
    after: int | None = None
    manifest: Manifest | None = None  # set on a manifest (no txids): see pipeline.py


class _OpenMessage:
    __slots__ = ("after", "deadline", "events", "json", "minor", "raw", "txids")

    def __init__(self, deadline: float, after: int | None) -> None:
        self.events: list[HdfsEvent] = []
        self.json: list[str] = []
        # Its events' txids, noted as events come: a pass over ~1,600 events when it seals
        # reads them from memory they have long left (~0.4 us an event on bench.ship, where
        # the same pass right after packing is ~0.07). A list, made unique at sealing: a dict
        # kept unique as they came cost ~0.1 us an event more (bench.ship).
        self.txids: list[int] = []
        # The envelope's minor its events need (hdfs_events.envelope.minor_needed), noted as
        # they come for the same reason.
        self.minor = 0
        self.raw = _ENVELOPE_OVERHEAD
        self.deadline, self.after = deadline, after

    @classmethod
    def holding(cls, events: list[HdfsEvent], texts: list[str], whole: _OpenMessage
                ) -> _OpenMessage:
        """A part of `whole` (a re-split), with its deadline and `after`."""
        part = cls(whole.deadline, whole.after)
        part.events, part.json, part.raw = events, texts, _raw_size(texts)
        part.txids = list(map(_txid, events))
        part.minor = minor_needed(events)
        return part


@dataclass(slots=True)
class PackerStats:
    events: int = 0
    messages: int = 0
    bytes: int = 0
    billed_requests: int = 0  # 64 KiB chunks, as if each message were sent alone
    resplits: int = 0
    rejected: int = 0  # events the contract refuses, each sent alone (see the module doc)


class EventPacker:
    def __init__(self, cluster: str, *, group_by: str = "prefix:2",
                 max_message_bytes: int = 65_536, linger_s: float = 0.2, compress: bool = True,
                 compression_level: int = 6) -> None:
        group_key("/", group_by)  # refuses an unknown strategy now, not on the first event
        self.cluster, self.group_by = cluster, group_by
        self.max_bytes, self.linger_s = max_message_bytes, linger_s
        self.compress, self.level = compress, compression_level
        self._fill_bytes = max_message_bytes * _FILL
        self._ratio = _FIRST_RATIO[compress]
        # Insertion order is opening order, so deadlines ascend along the dict: expiry checks
        # stop at the first open message that is still young.
        self._open: dict[str, _OpenMessage] = {}
        self._group_ids: dict[str, str] = {}
        self._group_key: Callable[[str], str] = partial(group_key, strategy=group_by)
        self._group_keys: Callable[[Iterable[str]], list[str]] = (
            prefix_group_keys(int(group_by.removeprefix("prefix:")))
            if group_by.startswith("prefix:") else lambda paths: list(map(self._group_key, paths)))
        self.stats = PackerStats()

    @property
    def open_events(self) -> int:
        return sum(len(m.events) for m in self._open.values())

    def open_afters(self) -> Iterator[int | None]:
        """The `after` of every open message (checkpoint.CheckpointTracker.safe_txid)."""
        return (message.after for message in self._open.values())

    def next_deadline(self) -> float | None:
        for message in self._open.values():
            return message.deadline
        return None

    def group_id(self, event: HdfsEvent) -> str:
        # RENAME's `path` is its source: a rename goes to the group of what it moves.
        key = self._group_key(event.path)
        gid = self._group_ids.get(key)
        if gid is None:
            if len(self._group_ids) >= _GROUP_CACHE_LIMIT:
                self._group_ids.clear()
            gid = self._group_ids[key] = sqs_safe_id(f"{self.cluster}:{key}")
        return gid

    def add(self, events: Sequence[HdfsEvent], now: float, after: int | None = None
            ) -> list[PackedMessage]:
        """Adds `events` ((txid, index) order: the events of a chunk of batches, pipeline.py),
        in order; returns the messages this sealed (usually none). `now`: when the events were
        read (a live drain's ReadChunk.read_at), which a message opened here lingers from.
        `after`: a txid all of whose events (and every lower txid's) were added before these,
        which a message opened here keeps (PackedMessage.after).

        The events are first sorted into their groups' runs (each group's in order), then each
        run joins its group's message in one step: its JSON by one map, its sizes, txids and
        minor by C loops. Only a run that would fill the message, or that holds an
        event the contract refuses, goes event by event (_add_each). One step a run instead
        of the loop's statements for every event: ~0.25 us an event (bench.ship)."""
        sealed: list[PackedMessage] = []
        cluster = self.cluster
        if any(map(ne, map(_cluster, events), repeat(cluster))):
            # What encode_message checks at sealing, noted now.
            event = next(e for e in events if e.cluster != cluster)
            raise ValueError(f"event ({event.txid}, {event.index}) is of cluster "
                             f"{event.cluster!r}; this packer packs {cluster!r}'s")
        runs: dict[str, list[HdfsEvent]] = {}
        gids = map(self._group_ids.get, self._group_keys(map(_path, events)))
        for event, gid in zip(events, gids, strict=True):
            if gid is None:
                gid = self.group_id(event)
            run = runs.get(gid)
            if run is None:
                runs[gid] = [event]
            else:
                run.append(event)
        open_messages = self._open
        for gid, run in runs.items():
            message = open_messages.get(gid)
            try:
                texts = list(map(checked_sparse_json, run))
            except EventFormatError:
                sealed += self._add_each(gid, run, now, after)
                continue
            raw = sum(map(len, texts)) + len(texts)  # the events and their commas
            if not all(map(str.isascii, texts)):
                raw = sum(len(t.encode("utf-8")) + 1 for t in texts)
            held = _ENVELOPE_OVERHEAD if message is None else message.raw
            if held + raw > self._fill_bytes / self._ratio:  # the run would fill its message
                sealed += self._add_each(gid, run, now, after, texts)
                continue
            if message is None:
                message = open_messages[gid] = _OpenMessage(now + self.linger_s, after)
            message.events += run
            message.json += texts
            message.txids += map(_txid, run)
            if message.minor < ENVELOPE_MINOR and (minor := minor_needed(run)) > message.minor:
                message.minor = minor
            message.raw += raw
        return sealed

    def _add_each(self, gid: str, run: list[HdfsEvent], now: float, after: int | None,
                  texts: list[str] | None = None) -> list[PackedMessage]:
        """One group's run, event by event: seals its message when the next event would take
        it past the limit, and sends an event the contract refuses alone. `texts`: the run's
        JSON when it was written already."""
        sealed: list[PackedMessage] = []
        open_messages = self._open
        room = self._fill_bytes / self._ratio  # raw bytes a message may hold; seals change it
        for i, event in enumerate(run):
            if texts is not None:
                text = texts[i]
            else:
                try:
                    text = checked_sparse_json(event)
                except EventFormatError as exc:
                    sealed += self._alone(gid, event, str(exc), after)
                    continue
            size = len(text) + 1 if text.isascii() else len(text.encode("utf-8")) + 1
            message = open_messages.get(gid)
            if message is not None and message.raw + size > room:
                sealed += self._seal(gid, final=False)
                room = self._fill_bytes / self._ratio
                message = open_messages.get(gid)  # a re-split may have left events open
            if message is None:
                message = open_messages[gid] = _OpenMessage(now + self.linger_s, after)
            message.events.append(event)
            message.json.append(text)
            message.txids.append(event.txid)
            if message.minor < ENVELOPE_MINOR and (minor := minor_needed((event,))
                                                   ) > message.minor:
                message.minor = minor
            message.raw += size
        return sealed

    def _alone(self, gid: str, event: HdfsEvent, reason: str, after: int | None
               ) -> list[PackedMessage]:
        """Seals the group's open message, then `event` alone: group order is kept."""
        log.error("event (%d, %d) breaks the contract and is sent alone, for the consumer to "
                  "quarantine: %s", event.txid, event.index, reason)
        self.stats.rejected += 1
        sealed = self._seal(gid, final=True) if gid in self._open else []
        wire = encode_message([event], group_id=gid, compress=self.compress, level=self.level,
                              event_json=[event.to_sparse_json()])
        self._observe(wire, 0)
        return [*sealed, PackedMessage(wire=wire, txids=(event.txid,), after=after)]

    def expired(self, now: float, waiting: Callable[[str], bool] | None = None
                ) -> list[PackedMessage]:
        """Seals every message open for `linger_s` or longer, but those of the groups
        `waiting` names (a message of theirs is still to be acknowledged: module doc)."""
        due: list[str] = []
        for gid, message in self._open.items():
            if message.deadline > now:
                break
            if waiting is None or not waiting(gid):
                due.append(gid)
        sealed: list[PackedMessage] = []
        for gid in due:
            sealed += self._seal(gid, final=True)
        return sealed

    def flush(self) -> list[PackedMessage]:
        """Seals everything open."""
        sealed: list[PackedMessage] = []
        for gid in list(self._open):
            sealed += self._seal(gid, final=True)
        return sealed

    def _seal(self, gid: str, *, final: bool) -> list[PackedMessage]:
        """Encodes the open message of `gid`. If it comes out over the limit, seals the prefix
        that fits and leaves the rest open (or seals it too when `final`)."""
        message = self._open.pop(gid)
        sealed: list[PackedMessage] = []
        events, texts = message.events, message.json
        while events:
            whole = len(events) == len(message.events)
            # The envelope from what was noted as the events came, not read from them again.
            wire = encode_written(
                texts, cluster=self.cluster, first=(events[0].txid, events[0].index),
                last=(events[-1].txid, events[-1].index),
                minor=message.minor if whole else minor_needed(events), group_id=gid,
                compress=self.compress, level=self.level)
            raw = message.raw if whole else _raw_size(texts)
            if wire.size > self.max_bytes and len(events) > 1:
                self.stats.resplits += 1
                self._ratio = max(self._ratio, wire.size / raw)
                keep = max(1, min(len(events) - 1, int(len(events) * self.max_bytes * _FILL
                                                       / wire.size)))
                rest_events, rest_texts = events[keep:], texts[keep:]
                events, texts = events[:keep], texts[:keep]
                # The prefix can itself come out too large when the ratio varies inside it.
                self._open[gid] = _OpenMessage.holding(events, texts, message)
                sealed += self._seal(gid, final=True)
                events, texts = rest_events, rest_texts
                if not final and events:
                    self._open[gid] = _OpenMessage.holding(events, texts, message)
                    # Kept open at its old deadline: it may not linger longer than it already
                    # has. Re-inserting at the end breaks deadline order only by this one entry,
                    # which is no later than due; expired() still finds it next round. Its old
                    # `after` is lower than it could be: the checkpoint waits a little longer.
                    return sealed
                continue
            self._observe(wire, raw)
            txids = dict.fromkeys(message.txids if whole else map(_txid, events))
            sealed.append(PackedMessage(wire=wire, txids=tuple(txids), after=message.after))
            break
        return sealed

    def _observe(self, wire: WireMessage, raw: int) -> None:
        # Small messages (linger flushes) are mostly gzip header and base64 padding: their
        # ratio says nothing about a full message, so only larger ones teach the estimate.
        if self.compress and raw * self._ratio >= self.max_bytes / 4:
            self._ratio = wire.size / raw
        stats = self.stats
        stats.messages += 1
        stats.events += wire.event_count
        stats.bytes += wire.size
        stats.billed_requests += wire.billed_requests


def _raw_size(texts: list[str]) -> int:
    return _ENVELOPE_OVERHEAD + sum(len(t) + 1 for t in texts)


def prefix_group_keys(depth: int) -> Callable[[Iterable[str]], list[str]]:
    """`hdfs_events.ids.group_key(path, f"prefix:{depth}")` of each path, without splitting
    the whole path: the agent computes it for every event (a unit test pins the two
    together). One regex match in C, the text before the (depth + 1)-th "/" (the first piece
    is empty for an absolute path): ~0.27 us where splitting and joining was ~0.42 (bench.ship's
    paths); over a chunk's paths in one comprehension, no Python call a path."""
    match = re.compile(f"[^/]*(?:/[^/]*){{0,{depth}}}").match
    # The pattern matches any text; "/" for "" as group_key.
    return lambda paths: [m[0] or "/" for m in map(match, paths)]
