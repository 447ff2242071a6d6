"""The index as one chunk of events sees it: a store interface and the chunk's entries.

The store is DynamoDB in production (dal.DynamoIndexStore) and a dict in the logic's tests.
A chunk reads every entry its events touch at once (BatchGetItem pages, in parallel), applies
its events to them in memory, and writes each changed entry once, in its final state (a path
touched ten times in a chunk is one write): parallel BatchWriteItem calls. The writes carry no
condition; one drain at a time holds the cluster's lease (lambdas/ingest/sequencer.py), and
Lambda stops an invocation at its deadline, before the lease expires.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from hdfs_events import names
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


def ancestors(path: str) -> list[str]:
    """"/a/b/c" -> ["/", "/a", "/a/b"]."""
    parts = path.strip("/").split("/") if path != "/" else []
    return ["/", *("/" + "/".join(parts[:i]) for i in range(1, len(parts)))][:len(parts)]


def child_path(parent: str, name: str) -> str:
    return f"/{name}" if parent == "/" else f"{parent}/{name}"


def name_of(path: str) -> str:
    return names.split_path(path)[1]


class IndexView:
    """Entries of one cluster read at most once per chunk, written once, when changed."""

    def __init__(self, store: IndexStore, cluster: str) -> None:
        self.store, self.cluster = store, cluster
        self._entries: dict[str, Entry] = {}
        self._changed: dict[str, Entry] = {}
        self.reads = self.writes = 0

    def prefetch(self, paths: Iterable[str], *, blind: Iterable[str] = ()) -> None:
        """Reads `paths` (one store call); `blind` ones are taken as absent, unread."""
        for path in blind:
            if path not in self._entries:
                self._hold(Entry(self.cluster, path))
        missing = [p for p in dict.fromkeys(paths) if p not in self._entries]
        if not missing:
            return
        self.reads += len(missing)
        found = self.store.get_many(self.cluster, missing)
        for path in missing:
            self._hold(found.get(path) or Entry(self.cluster, path))

    def get(self, path: str) -> Entry:
        if path not in self._entries:
            self.prefetch([path])
        return self._entries[path]

    def held_under(self, root: str) -> list[Entry]:
        """The entries held beneath `root`, any depth."""
        below = root.rstrip("/") + "/"
        return [e for path, e in self._entries.items() if path.startswith(below)]

    def _hold(self, entry: Entry) -> None:
        self._entries[entry.path] = entry

    def put(self, entry: Entry) -> None:
        self._hold(entry)
        self._changed[entry.path] = entry

    def flush(self, under: str | None = None) -> list[Refused]:
        """Writes the changed entries (only those beneath `under`, if given: what a subtree
        walk is about to read from the table); returns those refused."""
        if under is None:
            writes = list(self._changed.values())
            self._changed.clear()
        else:
            writes = [e for e in self.held_under(under) if e.path in self._changed]
            for entry in writes:
                del self._changed[entry.path]
        if not writes:
            return []
        self.writes += len(writes)
        return self.store.put_many(writes)
