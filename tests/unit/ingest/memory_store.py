"""An in-memory IndexStore with DynamoDB's semantics that matter here: partition = parent,
items sorted by name within it, compare-and-set on rev."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from hdfs_events import names
from lambdas.ingest.index_model import Entry


class MemoryIndexStore:
    def __init__(self) -> None:
        self.items: dict[tuple[str, str], Entry] = {}
        self.puts = self.flushes = 0

    @staticmethod
    def key(cluster: str, path: str) -> tuple[str, str]:
        parent, name = names.split_path(path)
        return names.index_partition(cluster, parent), name

    def get_many(self, cluster: str, paths: Iterable[str]) -> dict[str, Entry]:
        found = {}
        for path in paths:
            entry = self.items.get(self.key(cluster, path))
            if entry is not None:
                found[path] = entry
        return found

    def put(self, entry: Entry, *, expected_rev: int) -> bool:
        key = self.key(entry.cluster, entry.path)
        current = self.items.get(key)
        if (current.rev if current else 0) != expected_rev:
            return False
        self.items[key] = entry
        self.puts += 1
        return True

    def put_many(self, writes: Sequence[tuple[Entry, int]]) -> list[str]:
        self.flushes += 1
        return [e.path for e, rev in writes if not self.put(e, expected_rev=rev)]

    def children(self, cluster: str, parent: str, *, after: str | None,
                 limit: int) -> list[Entry]:
        pk = names.index_partition(cluster, parent)
        names_ = sorted(n for p, n in self.items if p == pk and (after is None or n > after))
        return [self.items[(pk, n)] for n in names_[:limit]]

    def live(self, cluster: str) -> dict[str, dict]:
        """What a user sees: path -> attributes of every live entry."""
        return {e.path: dict(e.values) for e in self.items.values()
                if e.cluster == cluster and e.alive}
