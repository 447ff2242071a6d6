"""Applies a cluster's events to the namespace index in txid order, range by range.

SQS FIFO delivers message groups in parallel, so a cluster's events arrive out of txid order
across groups, and the namespace index is not a commutative thing: a directory rename in one
group and a create beneath it in another give different namespaces in different orders. So the
index is not fed on arrival. Each event message only records that it arrived (an *arrival*:
its lake objects, or that it was quarantined); the agent's manifests (hdfs_events.manifest) say
which messages hold the txid range (after, end]; and once a range's manifest and all the
messages it names are here, one invocation at a time (a lease on the cluster's *position*)
applies exactly those events, sorted by (txid, index), and moves the position to the range's
end (complete ranges that follow it without a gap go with it, as one span). That is in-order
application by construction; the index's merge rules keep what they add
besides (redelivery, applying resumed mid-range).

The position advances after every chunk of events, so an invocation that runs out of time
resumes mid-range; its lease expires with the invocation's deadline, so a crashed one holds the
index up by that long at most. A directory RENAME or UNLINK walks its subtree before anything
later is applied, a level of the tree per step within the listing budget (subtree.py); a walk
that outlives the invocation is saved in the position (a "subtree in progress" marker stays on
its roots) and finished first by the next one, which it asks for with a continue request on the
apply queue.

Who applies ranges: invocations of the apply queue's continue requests (lambdas/ingest/consumer.py),
one a cluster at a time (its FIFO group); every invocation that stored an arrival or a manifest
sends one after storing it. One that finds the lease held (a redrive holds it for a message)
leaves the work to the holder, which looks again after releasing it.
"""

from __future__ import annotations

import heapq
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import islice
from typing import Protocol

from hdfs_events import names
from hdfs_events.event import HdfsEvent
from hdfs_events.ids import deduplication_range
from hdfs_events.manifest import Manifest
from lambdas.ingest.index import HeldEntries, NamespaceIndex, SkippedEvent
from lambdas.ingest.subtree import SubtreeOp

TXID_DONE = names.POSITION_TXID_DONE  # event_index: "every event of this txid is applied"
CHUNK_EVENTS = 1000  # events applied between two position saves: one read and one write wave
LEASE_MARGIN_MS = 5_000  # the lease outlives apply_ranges' deadline by this much
MANIFEST_LOOKAHEAD = 20  # stored ranges read per position: overlaps after a failover are few
# Messages whose arrivals one look for the next range reads: one BatchGetItem page (DynamoDB
# takes 100 keys a call). Complete ranges that follow the next one are applied with it, as one
# span, while their messages fit: an index behind by n ranges catches up in about n / (ranges a
# span) passes of the chunk's round trips, not n (the agent closes a range every checkpoint
# interval, a few hundred events at a NameNode's full speed).
SPAN_MESSAGES = 100
_NO_KEY, _LAST_KEY = (-1, -1), (2**63, 2**63)  # (txid, index) bounds of a message of unknown keys


@dataclass(frozen=True, slots=True)
class Arrival:
    dedup_id: str
    lake_keys: tuple[str, ...]  # the objects holding its indexed events; () when none
    quarantined: str | None = None  # the reason, when the message could not be read


@dataclass(frozen=True, slots=True)
class StoredManifest:
    manifest: Manifest
    received_ms: int


@dataclass(frozen=True, slots=True)
class LostManifest:
    """A manifest from the cluster's own principal that could not be read (quarantined)."""

    received_ms: int
    message_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class Position:
    """Every event up to and including (txid, event_index) is applied, but for `walk`, the subtree
    walk of the last one if it is unfinished; txid None: nothing applied yet."""

    txid: int | None
    event_index: int = TXID_DONE  # the event's position within its txid (HdfsEvent.index)
    walk: SubtreeOp | None = None

    @property
    def next_txid(self) -> int | None:
        """The first txid that may still have events to apply."""
        if self.txid is None:
            return None
        return self.txid + 1 if self.event_index == TXID_DONE else self.txid

    def before(self, event: HdfsEvent) -> bool:
        return self.txid is None or (event.txid, event.index) > (self.txid, self.event_index)


@dataclass(frozen=True, slots=True)
class Lease:
    """A hold of a cluster's lease: the position, and who took the lease before this holder
    (None: no one on record)."""

    position: Position
    taken_after: str | None


@dataclass(slots=True)
class _Kept:
    """What a hold that ended cleanly knew of the table: its owner, where it left the position,
    the entries it held."""

    owner: str
    position: Position
    held: HeldEntries


class SequenceStore(Protocol):
    def put_manifest(self, manifest: Manifest, *, received_ms: int) -> None: ...

    def manifests(self, cluster: str, *, ending_from: int, limit: int) -> list[StoredManifest]:
        """Stored manifest parts whose end >= `ending_from`, by end ascending."""
        ...

    def put_lost_manifest(self, cluster: str, lost: LostManifest) -> None: ...

    def lost_manifests(self, cluster: str, *, received_from_ms: int,
                       received_to_ms: int) -> list[LostManifest]:
        """Lost manifests received from one time to the other (both included), oldest
        first."""
        ...

    def put_arrival(self, cluster: str, arrival: Arrival) -> None: ...

    def arrivals(self, cluster: str, dedup_ids: Iterable[str]) -> dict[str, Arrival]: ...

    def acquire(self, cluster: str, owner: str, *, now_ms: int,
                until_ms: int) -> Lease | None:
        """The lease, if it is free, expired or already `owner`'s; else None."""
        ...

    def advance(self, cluster: str, owner: str, position: Position) -> None:
        """Saves the position while `owner` holds the lease; raises LeaseLost otherwise."""
        ...

    def release(self, cluster: str, owner: str) -> None: ...


class LeaseLost(RuntimeError):
    """Another invocation took the cluster's lease (this one outlived its deadline)."""


class LakeReader(Protocol):
    def events_by_object(self, keys: Sequence[str]) -> Iterator[list[HdfsEvent]]:
        """Each object's events, in `keys`' order, read as the caller takes them."""
        ...


@dataclass(slots=True)
class ApplyReport:
    ranges: int = 0
    events: int = 0
    skipped_messages: int = 0  # quarantined messages a manifest named: their events are lost
    # Ranges passed without (all of) their manifest, which was quarantined: (what, reason).
    bridged: list[tuple[str, str]] = field(default_factory=list)
    skipped_events: list[SkippedEvent] = field(default_factory=list)  # DynamoDB cannot hold them
    applied_timestamp_ms: int | None = None  # NameNode time of the last event applied
    waiting_for: str | None = None  # what the next range still needs
    waiting_since_ms: int | None = None  # when that range's manifest arrived
    more: bool = False  # stopped by the deadline with work left
    busy: bool = False  # another invocation holds the lease
    position: Position | None = None

    def add(self, found: ApplyReport) -> None:
        """What preparing a span found (kept apart while it ran beside the span before, and
        dropped with it when that span did not end where it began), as this report's."""
        self.skipped_messages += found.skipped_messages
        self.bridged += found.bridged
        self.skipped_events += found.skipped_events
        if found.waiting_for is not None:
            self.waiting_for, self.waiting_since_ms = found.waiting_for, found.waiting_since_ms

    def followed_by(self, later: ApplyReport) -> ApplyReport:
        """One invocation's looks as one report: what both did, and where the later left."""
        return ApplyReport(
            ranges=self.ranges + later.ranges, events=self.events + later.events,
            skipped_messages=self.skipped_messages + later.skipped_messages,
            bridged=[*self.bridged, *later.bridged],
            skipped_events=[*self.skipped_events, *later.skipped_events],
            applied_timestamp_ms=later.applied_timestamp_ms or self.applied_timestamp_ms,
            waiting_for=later.waiting_for, waiting_since_ms=later.waiting_since_ms,
            more=later.more, busy=later.busy, position=later.position or self.position)


@dataclass(slots=True)
class _Range:
    parts: list[StoredManifest]
    bridged: bool = False  # passed without all its manifest parts (one was lost)

    @property
    def manifest(self) -> Manifest:
        return self.parts[0].manifest

    @property
    def complete(self) -> bool:
        return self.bridged or len({p.manifest.part for p in self.parts}) == self.manifest.parts

    @property
    def ids(self) -> list[str]:
        return sorted({i for p in self.parts for i in p.manifest.messages})


@dataclass(slots=True)
class _Prepared:
    """A span ready to apply, its merge opened and its first chunk taken (lake objects read
    and decoded), or None when none is; and what preparing it found, in a report of its own."""

    span: _Span | None
    events: Iterator[HdfsEvent]
    fetched: list[HdfsEvent]
    found: ApplyReport


@dataclass(frozen=True, slots=True)
class _Span:
    """Consecutive complete ranges applied as one: `manifest` spans them (the first's `after`
    to the last's `end`), `arrivals` holds every message they name."""

    manifest: Manifest
    arrivals: dict[str, Arrival]
    ranges: int


def _following(first: _Range, stored: list[StoredManifest], budget: int) -> list[_Range]:
    """The stored ranges that continue `first` one after another (each `after` the previous
    `end`, every part stored), while their messages fit in `budget`. A range is one range id:
    a standby's overlapping range ends the chain, as does anything not plainly complete."""
    by_after: dict[int, dict[str, _Range]] = {}
    for part in stored:
        m = part.manifest
        if m.after is not None:
            by_after.setdefault(m.after, {}).setdefault(m.range_id, _Range([])).parts.append(part)
    chain: list[_Range] = []
    end = first.manifest.end
    while len(candidates := by_after.get(end, {})) == 1:
        (range_,) = candidates.values()
        if not range_.complete or (budget := budget - len(range_.ids)) < 0:
            break
        chain.append(range_)
        end = range_.manifest.end
    return chain


def _span(first: _Range, following: list[_Range], arrivals: dict[str, Arrival]) -> _Span:
    """`first` and the ranges of `following` whose messages have all arrived, up to the first
    that waits for one."""
    ranges = [first]
    for range_ in following:
        if not all(i in arrivals for i in range_.ids):
            break
        ranges.append(range_)
    names_ = {i for r in ranges for i in r.ids}
    held = {i: a for i, a in arrivals.items() if i in names_}
    if len(ranges) == 1:
        return _Span(first.manifest, held, 1)
    m, last = first.manifest, ranges[-1].manifest
    return _Span(Manifest(cluster=m.cluster, after=m.after, end=last.end, messages=(),
                          range_id=f"{m.range_id}..{last.range_id}"), held, len(ranges))


@dataclass(slots=True)
class IndexSequencer:
    store: SequenceStore
    index: NamespaceIndex
    lake: LakeReader
    clock_ms: Callable[[], int] = field(default=lambda: int(time.time() * 1000))
    chunk_events: int = CHUNK_EVENTS
    # Per cluster, what this sequencer's last hold knew of the table (a warm Lambda container
    # keeps it across invocations): its next hold starts from it when no one took the lease
    # in between. Holds end whenever the index catches up, every few chunks at a NameNode's
    # full speed, and each began by reading again what the last had read or written.
    _kept: dict[str, _Kept] = field(default_factory=dict, init=False, repr=False)

    # --- recording -------------------------------------------------------------------------

    def arrived(self, dedup_id: str, events: Sequence[HdfsEvent],
                lake_keys: Sequence[str]) -> None:
        indexed = any(self.index.relevant(e) for e in events)
        self.store.put_arrival(events[0].cluster,
                               Arrival(dedup_id, tuple(lake_keys) if indexed else ()))

    def quarantined(self, cluster: str, dedup_id: str, reason: str) -> None:
        self.store.put_arrival(cluster, Arrival(dedup_id, (), quarantined=reason))

    def manifest(self, manifest: Manifest) -> None:
        self.store.put_manifest(manifest, received_ms=self.clock_ms())

    def manifest_lost(self, cluster: str, message_id: str, reason: str) -> None:
        """The cluster's own manifest could not be read: its range must not wait for it."""
        self.store.put_lost_manifest(cluster, LostManifest(self.clock_ms(), message_id, reason))

    @contextmanager
    def holding(self, cluster: str, until_ms: int) -> Iterator[Position | None]:
        """The cluster's position with its lease held until `until_ms` (None: another
        invocation holds it). No range is being applied meanwhile, and every application
        reads its range's arrivals after taking the lease: an arrival stored now for events
        past the position is applied in txid order; for events at or before it, never."""
        owner = uuid.uuid4().hex
        lease = self.store.acquire(cluster, owner, now_ms=self.clock_ms(), until_ms=until_ms)
        try:
            yield None if lease is None else lease.position
        finally:
            if lease is not None:
                self.store.release(cluster, owner)

    # --- applying ranges -------------------------------------------------------------------

    def apply_ranges(self, cluster: str, deadline_ms: int) -> ApplyReport:
        """Applies complete ranges until `deadline_ms`: at least one chunk or walk step, so
        every call moves the index on, however late it starts."""
        report = ApplyReport()
        while True:
            owner = uuid.uuid4().hex
            lease = self.store.acquire(cluster, owner, now_ms=self.clock_ms(),
                                       until_ms=deadline_ms + LEASE_MARGIN_MS)
            if lease is None:
                report.busy = True
                break
            held = self._held_after(cluster, lease)
            try:
                position = self._apply_ranges_held(cluster, owner, lease.position, deadline_ms,
                                                   report, held)
            finally:
                self.store.release(cluster, owner)
            # Only a hold that ended cleanly is kept: one that failed part way may have
            # written part of a chunk that its entries do not show.
            self._kept[cluster] = _Kept(owner, position, held)
            report.position = position
            # Released: an arrival stored while the lease was held found it taken and left
            # its range to this holder. Look once more before leaving.
            if (report.more or report.waiting_for is None or self.clock_ms() >= deadline_ms
                    or self._next(cluster, position, report=None) is None):
                break
            report.waiting_for = report.waiting_since_ms = None
        if not report.more and report.waiting_for is None and not report.busy:
            report.more = self.clock_ms() >= deadline_ms and self._next(
                cluster, report.position or Position(None), report=None) is not None
        return report

    def ready(self, cluster: str, position: Position | None) -> bool:
        """Whether applying ranges from `position` (where the cluster's last hold left them)
        would find work: a complete range continuing from it, or a walk to go on with. Takes no
        lease, so a look that finds nothing costs a query, not the lease's two writes. When
        another holder has since moved the index on, its ranges from `position` are complete:
        true, and the lease then tells where the index is."""
        if position is None or position.walk is not None:
            return True
        return self._next(cluster, position, report=None) is not None

    def _held_after(self, cluster: str, lease: Lease) -> HeldEntries:
        """What the hold taking `lease` knows of the table: what this sequencer's last hold
        knew, when the lease was taken by no one since and the position is where it left it
        (the inventory job moves the position without the lease, after rewriting entries);
        else nothing yet."""
        kept = self._kept.pop(cluster, None)
        if (kept is not None and lease.taken_after == kept.owner
                and lease.position == kept.position):
            return kept.held
        return HeldEntries()

    def _apply_ranges_held(self, cluster: str, owner: str, position: Position, deadline_ms: int,
                           report: ApplyReport, held: HeldEntries) -> Position:
        """`held`: what the hold knows the table holds (HeldEntries), told what it reads and
        writes."""
        if position.walk is not None:
            held.entries.clear()  # the walk writes from the table, past what is held
            position = self._walk(cluster, owner, position, deadline_ms, report)
            if position.walk is not None:
                report.more = True
                return position
        # One thread reads ahead: the span's next chunk while a chunk applies, and during a
        # span's last chunk the next span (its manifests, arrivals and first chunk of lake
        # objects), which reads nothing the index writes. Those two steps were a third of each
        # span's time in bench.chain_speed (docs/bench.md, session 36). Waited for before the
        # merge is touched again; at most two chunks are held.
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="index-ahead") as ahead:
            prepared = self._prepare(cluster, position)
            while (span := prepared.span) is not None:
                position, upcoming = self._apply(cluster, owner, position, prepared,
                                                 deadline_ms, report, held, ahead)
                if (position.txid, position.event_index) != (span.manifest.end, TXID_DONE):
                    report.more = True  # out of time mid-span (or its walk left for later)
                    _drop(upcoming)
                    return position
                report.ranges += span.ranges
                if self.clock_ms() >= deadline_ms:
                    _drop(upcoming)
                    return position
                prepared = upcoming.result() if upcoming is not None else None
                if prepared is None or prepared.span is None:  # none then; look again now
                    prepared = self._prepare(cluster, position)
            report.add(prepared.found)  # what the range after the last one waits for
            return position

    def _prepare(self, cluster: str, position: Position) -> _Prepared:
        """The span that continues from `position`, its first chunk taken; or none yet, and
        what it waits for."""
        found = ApplyReport()
        span = self._next(cluster, position, report=found)
        if span is None:
            return _Prepared(None, iter(()), [], found)
        events = self._range_events(span.manifest, position, span.arrivals, found)
        return _Prepared(span, events, _take(events, self.chunk_events), found)

    def _next(self, cluster: str, position: Position,
              report: ApplyReport | None) -> _Span | None:
        """The complete range that continues from `position` and the complete ranges that
        follow it without a gap, with their arrivals; None (and what is missing, in `report`)
        when there is none yet."""
        want = position.next_txid
        # From the range that ends at the position (when still stored): when the manifest
        # after it was lost, that range's arrival time bounds when the loss happened.
        stored = self.store.manifests(cluster, ending_from=max((want or 1) - 1, 0),
                                      limit=MANIFEST_LOOKAHEAD)
        previous_ms = max((p.received_ms for p in stored
                           if want is not None and p.manifest.end == want - 1), default=0)
        stored = [p for p in stored if p.manifest.end >= (want or 0)]
        ranges: dict[tuple[int | None, int, str], _Range] = {}
        for part in stored:
            m = part.manifest
            if want is None or m.covers(want):
                ranges.setdefault((m.after, m.end, m.range_id), _Range([])).parts.append(part)
        if want is None and ranges:  # nothing applied yet: start at the first range stored
            first = min(ranges, key=lambda k: k[1])
            ranges = {first: ranges[first]}
        if want is not None and not ranges and stored:
            return self._bridge_hole(cluster, want, stored, previous_ms, report)
        # Caught up (nothing stored past the position) is not waiting; a later range stored
        # while none continues from here is a hole: its manifest is late or lost.
        waiting: tuple[str | None, int | None] = (
            (f"the manifest of txid {want}", min(p.received_ms for p in stored))
            if stored else (None, None))
        for range_ in sorted(ranges.values(), key=lambda r: r.manifest.end):
            m = range_.manifest
            since = min(p.received_ms for p in range_.parts)
            if not range_.complete:
                lost = self._lost_between(cluster, previous_ms, stored, after_end=m.end)
                if lost is None:
                    waiting = (f"{m.parts - len(range_.parts)} manifest part(s) of txids "
                               f"({m.after}, {m.end}]", since)
                    continue
                if report is not None:
                    report.bridged.append((f"txids ({m.after}, {m.end}]: "
                                           f"{m.parts - len(range_.parts)} of {m.parts} "
                                           "manifest parts lost, their messages not indexed",
                                           lost.reason))
                range_ = _Range(range_.parts, bridged=True)
            ids = range_.ids
            following = _following(range_, stored, SPAN_MESSAGES - len(ids))
            arrivals = self.store.arrivals(
                cluster, sorted({*ids, *(i for r in following for i in r.ids)}))
            if all(i in arrivals for i in ids):
                return _span(range_, following, arrivals)
            missing = [i for i in ids if i not in arrivals]
            waiting = (f"{len(missing)} message(s) of txids ({m.after}, {m.end}], e.g. "
                       f"{missing[0]}", since)
        if report is not None:
            report.waiting_for, report.waiting_since_ms = waiting
        return None

    def _bridge_hole(self, cluster: str, want: int, stored: list[StoredManifest],
                     previous_ms: int, report: ApplyReport | None) -> _Span | None:
        """No stored range continues from txid `want`, a later one is stored. When a manifest
        of the cluster's own was quarantined between the range before and the one after (SQS
        FIFO delivers the manifest group in order, so it is the missing one), the hole is
        passed as an empty range, reported; else the range waits (its manifest is late, or in
        the DLQ, from where it can be redriven)."""
        next_after = min((p.manifest.after for p in stored if p.manifest.after is not None),
                         default=None)
        lost = None if next_after is None else self._lost_between(
            cluster, previous_ms, stored, after_end=want - 1)
        if lost is None or next_after is None:
            if report is not None:
                report.waiting_for = f"the manifest of txid {want}"
                report.waiting_since_ms = min(p.received_ms for p in stored)
            return None
        hole = Manifest(cluster=cluster, after=want - 1, end=next_after, range_id="lost",
                        messages=(), part=0, parts=1)
        if report is not None:
            report.bridged.append((f"txids ({want - 1}, {next_after}]: manifest lost, "
                                   "their events not indexed", lost.reason))
        return _Span(hole, {}, 1)

    def _lost_between(self, cluster: str, previous_ms: int, stored: list[StoredManifest], *,
                      after_end: int) -> LostManifest | None:
        """A lost manifest received after the range ending at the position and before the
        first range stored past `after_end`: the one a hole or a range's part waits for. The
        bounds include their millisecond: one Lambda batch can hold a manifest group's
        messages in order within the same millisecond."""
        later = [p.received_ms for p in stored if p.manifest.end > after_end]
        if not later:
            return None  # nothing after it yet: the manifest may still come
        lost = self.store.lost_manifests(cluster, received_from_ms=previous_ms,
                                         received_to_ms=min(later))
        return lost[0] if lost else None

    def _apply(self, cluster: str, owner: str, position: Position, prepared: _Prepared,
               deadline_ms: int, report: ApplyReport, held: HeldEntries,
               ahead: ThreadPoolExecutor) -> tuple[Position, Future[_Prepared] | None]:
        """Applies the prepared span from `position`; also the next span being prepared on
        `ahead` (from the span's end) once the merge ran dry, if it did."""
        assert prepared.span is not None
        manifest, events, fetched = prepared.span.manifest, prepared.events, prepared.fetched
        prepared.fetched = []  # held by `fetched` alone: freed as it is applied
        dry = len(fetched) < self.chunk_events  # the merge has nothing after `fetched`
        upcoming: Future[_Prepared] | None = None
        try:
            while pending := fetched[:self.chunk_events]:
                following = None
                if len(fetched) < 2 * self.chunk_events and not dry:
                    following = ahead.submit(_take, events, self.chunk_events)
                elif len(fetched) <= self.chunk_events and upcoming is None:
                    upcoming = ahead.submit(self._prepare, cluster,
                                            Position(manifest.end, TXID_DONE))
                applied = self.index.apply_until_walk(pending, held)
                walk, taken = applied.walk, pending[:applied.taken]
                more = following.result() if following is not None else []
                dry = dry or len(more) < self.chunk_events
                fetched = fetched[applied.taken:] + more
                report.events += len(taken)
                report.skipped_events += applied.skipped
                stamped = [e.timestamp for e in taken if e.timestamp]
                if stamped:
                    report.applied_timestamp_ms = max(stamped)
                position = Position(taken[-1].txid, taken[-1].index, walk)
                if walk is not None or fetched:
                    self.store.advance(cluster, owner, position)
                if walk is not None:
                    held.entries.clear()  # the walk writes from the table, past the chunk
                    position = self._walk(cluster, owner, position, deadline_ms, report)
                    if position.walk is not None:
                        return position, upcoming
                if fetched and self.clock_ms() >= deadline_ms:
                    return position, upcoming
        finally:
            report.add(prepared.found)
        position = Position(manifest.end, TXID_DONE)
        self.store.advance(cluster, owner, position)
        return position, upcoming

    def _range_events(self, manifest: Manifest, position: Position,
                      arrivals: dict[str, Arrival], report: ApplyReport) -> Iterator[HdfsEvent]:
        """The range's events past `position`, in (txid, index) order, each key once.

        A merge, not a sort: a first-start snapshot puts a million records in one txid, in
        a thousand messages, more than the Lambda's memory holds decoded. Each message's objects
        are in key order and its deduplication id names its first and last key, so an object is
        fetched and decoded only when the merge reaches its first key, objects wholly before the
        position not at all: messages disjoint in key order, as the agent packs them, are held
        one at a time."""
        done = (-1, -1) if position.txid is None else (position.txid, position.event_index)

        def wanted(e: HdfsEvent) -> bool:
            # A message straddling a range's end is named by both ranges: each takes its own
            # txids.
            return manifest.covers(e.txid) and (e.txid, e.index) > done

        unread: list[tuple[tuple[int, int], tuple[int, int], str]] = []
        for dedup_id, arrival in sorted(arrivals.items()):
            if arrival.quarantined is not None:
                report.skipped_messages += 1
            else:
                # An id of another shape names no keys: its objects are read first.
                first, last = deduplication_range(dedup_id) or (_NO_KEY, _LAST_KEY)
                if (last > done and first[0] <= manifest.end
                        and (manifest.after is None or last[0] > manifest.after)):
                    unread += ((first, last, key) for key in arrival.lake_keys)
        unread.sort()
        objects = (self.lake.events_by_object([key for _, _, key in unread]) if unread
                   else iter(()))
        fronts: list[tuple[tuple[int, int], int, HdfsEvent, Iterator[HdfsEvent]]] = []

        def enter(source: Iterator[HdfsEvent], order: int) -> None:
            e = next(source, None)
            if e is not None:
                heapq.heappush(fronts, ((e.txid, e.index), order, e, source))

        opened, emitted = 0, done
        while True:
            while opened < len(unread) and (not fronts or unread[opened][0] <= fronts[0][0]):
                first, _, key = unread[opened]
                read = sorted((e for e in next(objects) if self.index.relevant(e) and wanted(e)),
                              key=_event_key)
                late = [e for e in read if _event_key(e) < emitted]
                # Only a message whose events contradict its own id has any: it cannot be
                # placed any more, and must not stop the index.
                report.skipped_events += (SkippedEvent(
                    e.cluster, e.txid, e.index, e.path,
                    f"lake object {key} holds it, before {first}, the first (txid, index) its "
                    "deduplication id names: read after the index had passed it") for e in late)
                enter(islice(read, len(late), None), opened)
                del read  # held by its place in the merge only, freed once merged
                opened += 1
            if not fronts:
                return
            at, order, e, source = heapq.heappop(fronts)
            enter(source, order)
            if at != emitted:  # a re-packed duplicate (a standby resending) is applied once
                emitted = at
                yield e

    def _walk(self, cluster: str, owner: str, position: Position, deadline_ms: int,
              report: ApplyReport) -> Position:
        """Goes on with the position's subtree walk, step by step, until it ends or time does."""
        walk = position.walk
        while walk is not None:
            walk, refused = self.index.resume(walk)
            report.skipped_events += refused
            position = Position(position.txid, position.event_index, walk)
            self.store.advance(cluster, owner, position)
            if walk is not None and self.clock_ms() >= deadline_ms:
                break
        return position


def _event_key(e: HdfsEvent) -> tuple[int, int]:
    return e.txid, e.index


def _take(events: Iterator[HdfsEvent], count: int) -> list[HdfsEvent]:
    return list(islice(events, count))


def _drop(upcoming: Future[_Prepared] | None) -> None:
    """A span prepared after one that did not end where it began: not applied, and what its
    preparing found is not reported."""
    if upcoming is not None:
        upcoming.cancel()
