"""The index as one chunk of events sees it: a store interface and the chunk's entries.

The store is DynamoDB in production (index_table.DynamoIndexStore) and a dict in the logic's tests.
The view holds two layers. The *base* is the table as it stood before the chunk: entries read
(BatchGetItem pages), whole directory partitions listed (Queries), and paths the chunk first
meets as the target of a CREATE, SNAPSHOT or RENAME, taken as absent unread ("blind": whatever
the table held there is replaced). The *changes* are what the chunk's events did to it, in
memory, reset before every pass over the chunk (index.NamespaceIndex runs the chunk until a
pass needs nothing the base lacks; each pass's misses are read in one wave, in parallel).

A directory's children are known when its partition was listed, or when the chunk made it a
new incarnation (created, moved in, learnt): the table's older content there is dead, so
nothing beneath it needs a listing. Writes carry no condition; one invocation applying ranges
at a time holds the cluster's lease (lambdas/ingest/sequencer.py), and Lambda stops an
invocation at its deadline, before the lease expires.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

from hdfs_events import names
from hdfs_events.index_item import INDEX_SHARDS
from hdfs_events.snapshot_index import SHARD_AFTER_WRITES
from lambdas.ingest.index_model import Entry
from lambdas.ingest.subtree import ChildPages


@dataclass(frozen=True, slots=True)
class Refused:
    """An entry DynamoDB cannot store (a key or item over its limits): skipped, not retried."""

    entry: Entry
    reason: str


class IndexStore(ChildPages, Protocol):
    def get_many(self, cluster: str, paths: Iterable[str]) -> dict[str, Entry]:
        """Stored entries among `paths` (absent ones are left out)."""
        ...

    def put_many(self, entries: Sequence[Entry]) -> list[Refused]:
        """Writes every entry; returns those DynamoDB refused as invalid. Any other error is
        raised once every write has finished."""
        ...


def parent_of(path: str) -> str:
    return names.split_path(path)[0]


class IndexView:
    """Entries of one cluster: the table before the chunk, and the chunk's changes."""

    def __init__(self, store: IndexStore, cluster: str) -> None:
        self.store, self.cluster = store, cluster
        self._base: dict[str, Entry] = {}
        self._known: set[str] = set()  # base paths whose table state was read or listed
        self._listed: set[str] = set()  # directories whose whole partition is in the base
        self._base_kids: defaultdict[str, set[str]] = defaultdict(set)
        self.listed_entries = 0
        self.reads = self.writes = 0
        self.begin()

    # --- the base ----------------------------------------------------------------------------

    def assume_absent(self, paths: Iterable[str]) -> None:
        """Blind: `paths` are taken as absent, unread (the chunk replaces what they held)."""
        for path in paths:
            if path not in self._base:
                self._hold(Entry(self.cluster, path), known=False)

    def seed(self, entries: Iterable[Entry]) -> None:
        """Known without a read: `entries` as the table holds them (the lease holder read or
        wrote them earlier in its hold, index.HeldEntries)."""
        for entry in entries:
            self._hold(entry, known=True)

    def read(self, paths: Iterable[str]) -> None:
        """Reads `paths` not held yet (one store call)."""
        missing = [p for p in dict.fromkeys(paths) if p not in self._base]
        if missing:
            self.reads += len(missing)
            found = self.store.get_many(self.cluster, missing)
            for path in missing:
                self._hold(found.get(path) or Entry(self.cluster, path), known=True)

    def fetch(self, *, listing_budget: int) -> None:
        """Reads the last pass's missing entries (one wave of parallel BatchGetItem pages),
        then lists its missing directories (one wave of parallel Queries); a directory over
        the budget left is not held, those that fit are (the walk over it is then handed to
        the sequencer, which goes on from the directories not held). Not both in
        one wave: moto, which the tests and the bench run against, breaks on a Query while
        a BatchGetItem of a new partition key runs (it iterates the table's dict of
        partitions as a get adds to it); DynamoDB would take them together."""
        points, dirs = sorted(self.missing_points), sorted(self.missing_dirs)
        left = listing_budget - self.listed_entries
        if dirs and left <= 0:
            dirs = []
        self.read(points)
        # A path the pass had to take as absent (hence of unknown type) starts a walk when it
        # goes (an UNLINK, a RENAME away); the read may show it a file: no listing then (the
        # next pass walks only what is still a directory, and asks for it then).
        read_now = set(points)
        dirs = [d for d in dirs if d not in read_now or self._base[d].may_have_children]
        shards = [self._base[d].shards if d in self._known else None for d in dirs]
        listings = (self.store.children_many(self.cluster, [(d, None) for d in dirs],
                                             limit=left + 1, shards=shards) if dirs else [])
        over = False
        for directory, children in zip(dirs, listings, strict=True):
            if self.listed_entries + len(children) > listing_budget:
                over = True
                continue
            self.listed_entries += len(children)
            self.reads += len(children)
            for child in children:
                if child.path not in self._known:  # read ones are the same; blind ones learn
                    self._hold(child, known=True)
            self._listed.add(directory)
            self._known.update(self._base_kids[directory])  # the rest: absent
        if over:
            self.listed_entries = listing_budget  # no more listings this chunk

    def _hold(self, entry: Entry, *, known: bool) -> None:
        self._base[entry.path] = entry
        self._base_kids[parent_of(entry.path)].add(entry.path)
        if known:
            self._known.add(entry.path)

    # --- a pass over the chunk ---------------------------------------------------------------

    def begin(self) -> None:
        """Forgets the changes of the last pass (the base stays)."""
        self._changed: dict[str, Entry] = {}
        self._changed_kids: defaultdict[str, set[str]] = defaultdict(set)
        self._fresh: set[str] = set()  # directories made new incarnations by this pass
        self.missing_points: set[str] = set()
        self.missing_dirs: set[str] = set()

    @property
    def complete(self) -> bool:
        return not (self.missing_points or self.missing_dirs)

    def get(self, path: str) -> Entry:
        """The entry as the chunk has it so far; one the base lacks is noted as missing and
        taken as absent for the rest of this pass."""
        if (entry := self._changed.get(path) or self._base.get(path)) is not None:
            return entry
        self.missing_points.add(path)
        return Entry(self.cluster, path)

    def put(self, entry: Entry, *, old_children: bool = False) -> None:
        before = self._changed.get(entry.path) or self._base.get(entry.path)
        if entry.alive and not old_children and (before is None or not before.alive):
            self._fresh.add(entry.path)  # a new incarnation: no child of the old one lives
        self._changed[entry.path] = entry
        self._changed_kids[parent_of(entry.path)].add(entry.path)

    def children(self, directory: str) -> list[Entry] | None:
        """The directory's children as the chunk has them so far; None (and the directory
        noted as missing) when its partition was not listed and it is no new incarnation."""
        held = self.held_children(directory)
        if held is None:
            self.missing_dirs.add(directory)
        return held

    def held_children(self, directory: str) -> list[Entry] | None:
        """As `children`, noting nothing: None when they are not held."""
        if directory not in self._listed and directory not in self._fresh:
            return None
        paths = self._base_kids.get(directory, set()) | self._changed_kids.get(directory, set())
        return [self._changed.get(p) or self._base[p] for p in sorted(paths)]

    # --- writing -----------------------------------------------------------------------------

    def flush(self) -> list[Refused]:
        """Writes every entry the chunk changed, once, in its final state; returns those
        refused. Not written: an entry left as the table holds it, and one the table does not
        hold that the chunk ended (born and gone within it: a temporary file renamed into
        place, a `_temporary` tree). A blind one of those is read first, beside the writes:
        the table holds it when an earlier run of this chunk, cut elsewhere, left it alive."""
        writes, unsure = [], []
        for path, entry in self._changed.items():
            base = self._base.get(path)
            if base == entry:
                continue
            if entry.deleted and base is not None and not base.stored:
                if path in self._known:
                    continue
                unsure.append(entry)
                continue
            writes.append(entry)
        self._changed = {}
        writes = self._placed(writes)
        if not writes and not unsure:
            return []
        with ThreadPoolExecutor(max_workers=1) as side:
            stored = (side.submit(self.store.get_many, self.cluster, [e.path for e in unsure])
                      if unsure else None)
            refused = self.store.put_many(writes) if writes else []
            held = stored.result() if stored is not None else {}
        self.reads += len(unsure)
        for path, entry in held.items():
            self._base[path] = entry  # where the table holds it: _placed removes a twin
        late = self._placed([e for e in unsure if e.path in held])
        if late:
            refused += self.store.put_many(late)
        self.writes += len(writes) + len(late)
        not_stored = {r.entry.path for r in refused}
        for entry in (*writes, *late):
            if entry.path not in not_stored:
                # Written with its twin's delete: the table holds this copy alone.
                self._base[entry.path] = entry.placed(shards=entry.shards,
                                                      in_shard=entry.in_shard)
                self._known.add(entry.path)
        return refused

    def table(self) -> list[Entry]:
        """After flush: every entry whose table state the view knows (read, listed, written)."""
        return [self._base[p] for p in self._known]

    def _placed(self, writes: list[Entry]) -> list[Entry]:
        """Shards a directory given more than SHARD_AFTER_WRITES child writes (its own item,
        written with them, records it), and puts each entry in its parent's shard when the
        parent is sharded. A child whose parent the chunk did not read goes to the parent's
        own partition, which every read looks in too."""
        counts: defaultdict[str, int] = defaultdict(int)
        for entry in writes:
            counts[parent_of(entry.path)] += 1
        own = {e.path: e for e in writes}
        for parent, count in counts.items():
            held = own.get(parent) or self._base.get(parent)
            if (count > SHARD_AFTER_WRITES and held is not None and held.alive
                    and held.shards == 0 and held.may_have_children):
                own[parent] = held.placed(shards=INDEX_SHARDS, in_shard=held.in_shard,
                                          twin=held.twin)
        placed = []
        for entry in own.values():
            parent = own.get(parent_of(entry.path)) or self._base.get(parent_of(entry.path))
            sharded = parent is not None and parent.shards > 0
            base = self._base.get(entry.path)
            # A copy left in the other place would outlive this write's delete marker.
            twin = base is not None and (base.twin or (base.stored and base.in_shard != sharded))
            placed.append(entry.placed(shards=entry.shards, in_shard=sharded, twin=twin))
        return placed
