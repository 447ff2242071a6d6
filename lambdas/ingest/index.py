"""The namespace index: a cluster's events applied in order, a chunk at a time (the sequencer
decides which and when). Only paths under the configured prefixes are indexed; a RENAME out
of them counts as a delete, one into them as a create of unknown type.

A chunk costs about as many round trips as its deepest subtree walk has levels, whatever the
number of walks: the chunk runs in memory (index_rules; walks over held children, subtree) on
a view of the table (index_view), and each run notes what the view lacked: entries to read,
directories to list. Those are fetched in one wave of parallel BatchGetItem pages and
Queries, and the chunk runs again from its start, until a run lacks nothing (a walk over a
directory listed in one wave lists its subdirectories in the next). Then one wave of parallel
BatchWriteItem calls writes each changed entry once, in its final state. A path first met as
the target of a CREATE, SNAPSHOT or RENAME is not read (whatever it held is replaced), and a
directory the chunk created or moved in needs no listing. Listings are bounded per chunk
(`listing_budget` entries): a walk over more ends the chunk, having done what the chunk listed,
and goes on from the table at the directories it did not reach, a level of them a step, saved
and resumed by the sequencer.

Applied again after a crash (its position was not saved), a chunk finds some entries in their
final state: the rules leave an entry alone whose version is not older than the event's, and
a RENAME's delete marker keeps the attributes it moved. That holds while a chunk never touches
a RENAME's source (or anything beneath it) again, so such an event starts the next chunk.

An event DynamoDB could never store (a name over its key limits, a RENAME into its own
subtree) is skipped with its reason and the chunk goes on: content never stalls the index.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from hdfs_events import names
from hdfs_events.event import EventType, HdfsEvent, INodeType
from hdfs_events.index_item import INDEX_SHARDS
from lambdas.ingest.index_model import Entry
from lambdas.ingest.index_rules import apply_event
from lambdas.ingest.index_view import IndexStore, IndexView, Refused
from lambdas.ingest.settings import is_under
from lambdas.ingest.subtree import SubtreeOp, frontier_cursor, walk_held, walk_step

DEFAULT_SUBTREE_PAGE = 500  # children per directory page a resumed walk reads (Query Limit)
# Entries a chunk may list for its walks, and a resumed walk's step may read (~200 B each in
# memory): a subtree larger than this is walked from the table by the sequencer, a step at a
# time, every directory of a level in one step while the level's pages fit in it.
LISTED_PAGES = 40  # DEFAULT_SUBTREE_PAGE x 40 = 20,000 entries
# DynamoDB's limits: a partition key holds at most 2,048 bytes, a sort key 1,024, an item
# 400 KB (names and values together); the other attributes of an entry stay far below this.
MAX_PARTITION_BYTES = 2048
MAX_NAME_BYTES = 1024
MAX_ITEM_BYTES = 400_000
WRITE_ORDER: tuple[EventType, ...] = (EventType.CREATE, EventType.SNAPSHOT)


@dataclass(frozen=True, slots=True)
class SkippedEvent:
    cluster: str
    txid: int
    event_index: int  # the event's position within its txid (HdfsEvent.index)
    path: str
    reason: str


# Entries a lease hold remembers (HeldEntries), ~300 B each. Every full collection of Python's
# garbage collector walks them: at 100,000 the one lease holder stopped 260 ms (p50) every ~3 s
# in bench.chain_speed. A chunk needs those of the last few chunks (a create/rename/delete
# load's ~1,500 entries); more cost pauses, not reads.
HELD_ENTRIES_LIMIT = 20_000


@dataclass(slots=True)
class HeldEntries:
    """What one lease hold of the sequencer knows the table holds: the entries its chunks read,
    listed or wrote. The hold's next chunks take them from here instead of reading them again:
    the UNLINK or RENAME of a file an earlier chunk wrote, and the parents every chunk looks
    at (bench.chain_speed: ~250 files a chunk, a wave of BatchGetItem pages before the chunk
    could run). Valid while the hold lasts, the lease making its holder the table's one writer,
    so nothing changes what it read or wrote but itself; and into the same sequencer's next
    hold when no one took the lease in between (sequencer.IndexSequencer._held_after). What a
    chunk knows of a directory's children (a listing) is the chunk's own, and the sequencer
    forgets everything when a walk goes on from the table (its writes bypass the chunk)."""

    entries: dict[str, Entry] = field(default_factory=dict)

    def of(self, events: Sequence[HdfsEvent]) -> list[Entry]:
        """The held entries of the events' paths and of their parents."""
        held = self.entries
        if not held:
            return []
        seen: set[str] = set()
        for e in events:
            for path in (e.path, e.dst_path):
                while path and path not in seen:
                    seen.add(path)
                    path = path[:path.rfind("/")]
        return [held[p] for p in seen if p in held]

    def note(self, entries: Iterable[Entry]) -> None:
        held = self.entries
        held.update((e.path, e) for e in entries)
        if len(held) > HELD_ENTRIES_LIMIT:
            held.clear()


@dataclass(slots=True)
class Applied:
    taken: int  # events of the chunk applied (or skipped), from the first
    walk: SubtreeOp | None = None  # the directory operation's walk, to finish next
    skipped: list[SkippedEvent] = field(default_factory=list)


class NamespaceIndex:
    def __init__(self, store: IndexStore, prefixes: Sequence[str], *,
                 subtree_budget: int = DEFAULT_SUBTREE_PAGE,
                 listing_budget: int | None = None) -> None:
        self.store, self.prefixes = store, tuple(prefixes)
        self.subtree_budget = subtree_budget
        self.listing_budget = listing_budget or subtree_budget * LISTED_PAGES
        self.reads = self.writes = 0

    def indexed(self, path: str) -> bool:
        return is_under(path, self.prefixes)

    def relevant(self, event: HdfsEvent) -> bool:
        """Whether the event changes the index: it touches an indexed path (a GAP does not)."""
        return event.type != EventType.GAP and (self.indexed(event.path) or (
            event.dst_path is not None and self.indexed(event.dst_path)))

    def apply_until_walk(self, events: Sequence[HdfsEvent],
                         held: HeldEntries | None = None) -> Applied:
        """Applies events of one cluster in order: all of them, or up to the first that
        touches a RENAME's source again, or up to and including one whose walk is over the
        listing budget (done over what the chunk listed, returned to be resumed from the
        directories it did not reach). `held`: what the caller's lease hold knows of the table,
        taken as known, and told what this chunk learnt."""
        if not events:
            return Applied(0)
        view = IndexView(self.store, events[0].cluster)
        if held is not None:
            view.seed(held.of(events))  # before the blind ones: known beats assumed
        view.assume_absent(self._blind(events))
        cut: int | None = None  # the event whose walk goes on from the table
        while True:
            done, first_short = self._run(view, events, cut)
            if view.complete:
                break
            if first_short is not None and view.listed_entries >= self.listing_budget:
                cut = first_short  # over the budget: that walk is the sequencer's
                continue
            view.fetch(listing_budget=self.listing_budget)
        done.skipped += [_refused(r) for r in view.flush()]
        if held is not None:
            held.note(view.table())
        self.reads += view.reads
        self.writes += view.writes
        return done

    def _run(self, view: IndexView, events: Sequence[HdfsEvent],
             cut: int | None) -> tuple[Applied, int | None]:
        """One pass over the chunk on the view; also the first event whose walk lacked a
        listing (None: none did)."""
        view.begin()
        done = Applied(len(events))
        first_short: int | None = None
        renamed: set[str] = set()
        for position, event in enumerate(events):
            if not self.relevant(event):
                continue
            if _under(event.path, renamed) or (event.dst_path and _under(event.dst_path, renamed)):
                done.taken = position
                break
            if (reason := unstorable(event)) is not None:
                done.skipped.append(_skipped(event, reason))
                continue
            walk = apply_event(view, event, self.indexed)
            if event.type == EventType.RENAME and self.indexed(event.path):
                renamed.add(event.path)
            if walk is None:
                continue
            # The cut walk takes what the view holds, listing nothing more: the table walk
            # goes on from there.
            writes, frontier = walk_held(
                view.held_children if position == cut else view.children, walk)
            for entry in writes:
                view.put(entry)
            if position == cut:
                done.taken = position + 1
                if frontier:
                    done.walk = replace(walk, cursor=frontier_cursor(walk, frontier))
                    break
            if frontier:
                first_short = position if first_short is None else first_short
                continue
            for path in (walk.dst, walk.src):  # done within the chunk: readers need no marker
                if path is not None and (entry := view.get(path)).walk == walk.marker():
                    view.put(entry.marked(None))
            if position == cut:
                break
        return done, first_short

    def _blind(self, events: Sequence[HdfsEvent]) -> list[str]:
        """Paths first met as the target of a CREATE, SNAPSHOT or RENAME: replaced whatever
        they held, so not read. But for a directory's SNAPSHOT: its walk ends the children
        it held, and finds those in shards only by the shard count its item holds (written
        unread, the count would be lost before a walk from the table reads it)."""
        first: dict[str, bool] = {}  # path -> blind
        for e in events:
            if not self.relevant(e):
                continue
            if e.type == EventType.RENAME and e.dst_path is not None:
                first.setdefault(e.path, False)
                _parents_read(first, e.dst_path)
                first.setdefault(e.dst_path, True)
            else:
                if e.type != EventType.UNLINK:
                    _parents_read(first, e.path)
                first.setdefault(e.path, e.type in WRITE_ORDER and not (
                    e.type == EventType.SNAPSHOT and e.inode_type == INodeType.DIRECTORY))
        return [p for p, blind in first.items() if blind and self.indexed(p)]

    def resume(self, op: SubtreeOp) -> tuple[SubtreeOp | None, list[SkippedEvent]]:
        """One step of a subtree walk; the walk left (None: done) and any entries refused."""
        writes, left = walk_step(self.store, op, page=self.subtree_budget,
                                 budget=self.listing_budget)
        refused = self.store.put_many(writes) if writes else []
        self.writes += len(writes)
        if left is None:  # the roots' markers go once every child is written
            view = IndexView(self.store, op.cluster)
            roots = [p for p in (op.dst, op.src) if p is not None]
            view.read(roots)
            for path in roots:
                if (entry := view.get(path)).walk == op.marker():
                    view.put(entry.marked(None))
            refused += view.flush()
            self.reads += view.reads
            self.writes += view.writes
        return left, [_refused(r) for r in refused]


def unstorable(event: HdfsEvent) -> str | None:
    """Why DynamoDB could never hold this event's entries, if so."""
    for path in (event.path, event.dst_path):
        if path is None or 4 * (len(path) + len(event.cluster)) < MAX_NAME_BYTES:
            continue  # UTF-8 takes at most 4 bytes a character: well within both key limits
        parent, name = names.split_path(path)
        if len(name.encode()) > MAX_NAME_BYTES:
            return (f"name of {path[:80]!r}... is {len(name.encode())} bytes; a DynamoDB sort "
                    f"key holds at most {MAX_NAME_BYTES}")
        # The longest key it may get: its parent's last shard, should the parent get hot.
        partition = names.index_shard_partition(event.cluster, parent, INDEX_SHARDS - 1)
        if len(partition.encode()) > MAX_PARTITION_BYTES:
            return (f"parent directory of {path[:80]!r}... makes a {len(partition.encode())}-"
                    f"byte partition key; DynamoDB takes at most {MAX_PARTITION_BYTES}")
    if len((event.symlink_target or "").encode()) > MAX_ITEM_BYTES // 2:
        return f"symlink target of {len(event.symlink_target or '')} bytes: over an item's limit"
    if (event.type == EventType.RENAME and event.dst_path is not None
            and event.dst_path.startswith(event.path.rstrip("/") + "/")):
        return f"RENAME of {event.path!r} into its own subtree {event.dst_path!r} (HDFS refuses it)"
    return None


def _parents_read(first: dict[str, bool], path: str) -> None:
    """The parents of what an event changes are looked at (index_rules._parents): read."""
    cut = path.rfind("/")
    while cut > 0:
        first.setdefault(path[:cut], False)
        cut = path.rfind("/", 0, cut)


def _under(path: str, roots: set[str]) -> bool:
    """`path` is one of `roots` or beneath one."""
    if path in roots:
        return True
    cut = path.rfind("/")
    while cut > 0:
        if path[:cut] in roots:
            return True
        cut = path.rfind("/", 0, cut)
    return False


def _skipped(event: HdfsEvent, reason: str) -> SkippedEvent:
    return SkippedEvent(event.cluster, event.txid, event.index, event.path, reason)


def _refused(refused: Refused) -> SkippedEvent:
    e = refused.entry
    return SkippedEvent(e.cluster, e.version[0], e.version[1], e.path, refused.reason)
