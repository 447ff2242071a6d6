"""The namespace index: a cluster's events applied in order, a chunk at a time (the sequencer
decides which and when). Only paths under the configured prefixes are indexed; a RENAME out
of them counts as a delete, one into them as a create of unknown type.

A chunk costs the fewest round trips its events allow: one parallel wave of BatchGetItem
pages for the entries whose old state matters (a path whose first event in the chunk is a
CREATE, a SNAPSHOT or a RENAME into it is written blind), the rules (index_rules) in memory,
and one parallel wave of BatchWriteItem calls for the entries it changed, each once. A
directory operation's subtree walk (subtree) runs before anything later: at once when it is
small, else the chunk ends there and the sequencer saves and resumes the walk.

Applied again after a crash (its position was not saved), a chunk finds some entries in their
final state: the rules leave an entry alone whose version is not older than the event's, and
a RENAME's delete marker keeps the attributes it moved. That holds while a chunk never touches
a RENAME's source (or anything beneath it) again, so such an event starts the next chunk.

An event DynamoDB could never store (a name over its key limits, a RENAME into its own
subtree) is skipped with its reason and the chunk goes on: content never stalls the index.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from hdfs_events import names
from hdfs_events.event import EventType, HdfsEvent
from lambdas.ingest.index_rules import apply_event, parents_of
from lambdas.ingest.index_view import IndexStore, IndexView, Refused
from lambdas.ingest.settings import is_under
from lambdas.ingest.subtree import SubtreeOp, walk_step

DEFAULT_SUBTREE_PAGE = 500  # children per directory page a walk reads (Query Limit)
WALK_WIDTH = 16  # directories a walk step reads at once (parallel Queries)
INLINE_WALK_STEPS = 4  # a walk longer than this is handed to the sequencer (saved, resumed)
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
    index: int
    path: str
    reason: str


@dataclass(slots=True)
class Applied:
    taken: int  # events of the chunk applied (or skipped), from the first
    walk: SubtreeOp | None = None  # the directory operation's walk, to finish next
    skipped: list[SkippedEvent] = field(default_factory=list)


class NamespaceIndex:
    def __init__(self, store: IndexStore, prefixes: Sequence[str], *,
                 subtree_budget: int = DEFAULT_SUBTREE_PAGE) -> None:
        self.store, self.prefixes = store, tuple(prefixes)
        self.subtree_budget = subtree_budget
        self.reads = self.writes = 0

    def indexed(self, path: str) -> bool:
        return is_under(path, self.prefixes)

    def relevant(self, event: HdfsEvent) -> bool:
        """Whether the event changes the index: it touches an indexed path (a GAP does not)."""
        return event.type != EventType.GAP and (self.indexed(event.path) or (
            event.dst_path is not None and self.indexed(event.dst_path)))

    def apply_until_walk(self, events: Sequence[HdfsEvent]) -> Applied:
        """Applies events of one cluster in order, up to and including the first that starts
        a subtree walk (or up to the first that touches a RENAME's source again)."""
        if not events:
            return Applied(0)
        view = IndexView(self.store, events[0].cluster)
        done = Applied(len(events))
        chunk = [(i, e) for i, e in enumerate(events) if self.relevant(e)]
        self._read(view, chunk)
        renamed: set[str] = set()
        for position, event in chunk:
            if _under(event.path, renamed) or (event.dst_path and _under(event.dst_path, renamed)):
                done.taken = position
                break
            if (reason := unstorable(event)) is not None:
                done.skipped.append(_skipped(event, reason))
                continue
            walk = apply_event(view, event, self.indexed)
            if event.type == EventType.RENAME and self.indexed(event.path):
                renamed.add(event.path)
            if walk is not None:
                walk = self._walk_inline(view, walk, done)
                if walk is not None:
                    done.taken, done.walk = position + 1, walk
                    break
        done.skipped += [_refused(r) for r in view.flush()]
        self.reads += view.reads
        self.writes += view.writes
        return done

    def _walk_inline(self, view: IndexView, walk: SubtreeOp, done: Applied) -> SubtreeOp | None:
        """Runs a small walk at once: what the chunk changed beneath the source is written
        first (the walk reads the table), the walk's own changes join the chunk's and are
        written with them, once. A large walk is handed back, unfinished, for the sequencer
        to save and go on with (its roots keep their markers until it ends)."""
        roots = [p for p in (walk.dst, walk.src) if p is not None]
        done.skipped += [_refused(r) for r in view.flush(under=walk.src)]
        for _ in range(INLINE_WALK_STEPS):
            writes, left = walk_step(self.store, walk, page=self.subtree_budget,
                                     width=WALK_WIDTH)
            for entry in writes:  # written with the rest of the chunk
                view.put(entry)
            if left is None:
                break
            walk = left
        else:
            return walk
        for path in roots:  # done within the chunk: readers need no marker
            view.put(view.get(path).marked(None))
        return None

    def _read(self, view: IndexView, chunk: list[tuple[int, HdfsEvent]]) -> None:
        """One read for the entries whose stored state the chunk needs: a path first met as
        the target of a CREATE, SNAPSHOT or RENAME is replaced whatever it held."""
        first: dict[str, bool] = {}  # path -> read it
        for _, e in chunk:
            if e.type == EventType.RENAME and e.dst_path is not None:
                if self.indexed(e.path):
                    first.setdefault(e.path, True)
                if self.indexed(e.dst_path):
                    self._with_parents(first, e.dst_path)
                    first.setdefault(e.dst_path, False)
            elif self.indexed(e.path):
                if e.type != EventType.UNLINK:
                    self._with_parents(first, e.path)
                first.setdefault(e.path, e.type not in WRITE_ORDER)
        view.prefetch([p for p, read in first.items() if read],
                      blind=[p for p, read in first.items() if not read])

    def _with_parents(self, first: dict[str, bool], path: str) -> None:
        """Parents are read with what is created under them (index_rules._parents)."""
        parent = names.split_path(path)[0]
        if parent not in first:  # its own parents came with it
            for p in parents_of(path, self.indexed):
                first.setdefault(p, True)

    def resume(self, op: SubtreeOp) -> tuple[SubtreeOp | None, list[SkippedEvent]]:
        """One step of a subtree walk; the walk left (None: done) and any entries refused."""
        writes, left = walk_step(self.store, op, page=self.subtree_budget, width=WALK_WIDTH)
        refused = self.store.put_many(writes) if writes else []
        self.writes += len(writes)
        if left is None:  # the roots' markers go once every child is written
            view = IndexView(self.store, op.cluster)
            roots = [p for p in (op.dst, op.src) if p is not None]
            view.prefetch(roots)
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
        partition = names.index_partition(event.cluster, parent)
        if len(partition.encode()) > MAX_PARTITION_BYTES:
            return (f"parent directory of {path[:80]!r}... makes a {len(partition.encode())}-"
                    f"byte partition key; DynamoDB takes at most {MAX_PARTITION_BYTES}")
    if len((event.symlink_target or "").encode()) > MAX_ITEM_BYTES // 2:
        return f"symlink target of {len(event.symlink_target or '')} bytes: over an item's limit"
    if (event.type == EventType.RENAME and event.dst_path is not None
            and event.dst_path.startswith(event.path.rstrip("/") + "/")):
        return f"RENAME of {event.path!r} into its own subtree {event.dst_path!r} (HDFS refuses it)"
    return None


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
