"""The index as the logic sees it: a small store interface and a per-invocation cache.

The store is DynamoDB in production (dal.DynamoIndexStore) and a dict in the logic's tests.
Writes are deferred and coalesced: an entry changed by several events of a message (CREATE then
CLOSE, say) is written once, when the message is done or before a subtree walk reads a
partition. Each write is compare-and-set on the entry's `rev`: a concurrent invocation that
changed the same entry since it was read makes the flush fail with ConcurrentUpdate, and the
message's events are applied again from fresh reads (every merge is idempotent).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Protocol

from hdfs_events import names
from lambdas.ingest.index_model import Entry, empty_entry


class ConcurrentUpdate(RuntimeError):
    """Another writer changed an entry between our read and our write."""


class IndexStore(Protocol):
    def get_many(self, cluster: str, paths: Iterable[str]) -> dict[str, Entry]:
        """Stored entries among `paths` (absent ones are left out)."""
        ...

    def put(self, entry: Entry, *, expected_rev: int) -> bool:
        """Writes `entry` if the stored rev is `expected_rev` (0: not stored); False if not."""
        ...

    def children(self, cluster: str, parent: str, *, after: str | None,
                 limit: int) -> list[Entry]:
        """Entries whose parent directory is `parent`, by name, after `after`."""
        ...


def child_path(parent: str, name: str) -> str:
    return f"/{name}" if parent == "/" else f"{parent}/{name}"


def name_of(path: str) -> str:
    return names.split_path(path)[1]


class IndexView:
    """Entries of one cluster read at most once per invocation, and written only on change."""

    def __init__(self, store: IndexStore, cluster: str) -> None:
        self.store, self.cluster = store, cluster
        self._cache: dict[str, Entry] = {}
        self._dirty: dict[str, int] = {}  # path -> rev stored in the table (0: not stored)
        self.reads = self.writes = 0

    def prefetch(self, paths: Iterable[str]) -> None:
        missing = [p for p in dict.fromkeys(paths) if p not in self._cache]
        if not missing:
            return
        self.reads += len(missing)
        found = self.store.get_many(self.cluster, missing)
        for path in missing:
            self._cache[path] = found.get(path) or empty_entry(self.cluster, path)

    def get(self, path: str) -> Entry:
        if path not in self._cache:
            self.prefetch([path])
        return self._cache[path]

    def save(self, old: Entry, new: Entry) -> Entry:
        if new.same_state(old):
            return old
        base = self._dirty.setdefault(old.path, old.rev)
        saved = replace(new, rev=base + 1)
        self._cache[old.path] = saved
        return saved

    def flush(self) -> None:
        for path, base in list(self._dirty.items()):
            self.writes += 1
            if not self.store.put(self._cache[path], expected_rev=base):
                self.forget()
                raise ConcurrentUpdate(f"index entry {self.cluster}:{path} changed meanwhile")
            del self._dirty[path]

    def children(self, parent: str, *, after: str | None, limit: int) -> list[Entry]:
        self.flush()  # the table must hold what this invocation changed before it is read
        self.reads += 1
        page = self.store.children(self.cluster, parent, after=after, limit=limit)
        for entry in page:
            if entry.path not in self._dirty:
                self._cache[entry.path] = entry
        return page

    def forget(self) -> None:
        self._cache.clear()
        self._dirty.clear()
