"""An in-memory IndexStore with DynamoDB's semantics that matter here: partition = parent,
items sorted by name within it, compare-and-set on rev."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from hdfs_events import names
from hdfs_events.manifest import Manifest
from lambdas.ingest.index_model import Entry
from lambdas.ingest.sequencer import Arrival, LeaseLost, Position, StoredManifest


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


class MemorySequenceStore:
    """sequencer.SequenceStore in memory, with the lease's conditions."""

    def __init__(self) -> None:
        self.manifest_parts: dict[tuple[str, int, str, int], StoredManifest] = {}
        self.arrived: dict[tuple[str, str], Arrival] = {}
        self.positions: dict[str, Position] = {}
        self.leases: dict[str, tuple[str, int]] = {}

    def put_manifest(self, manifest: Manifest, *, received_ms: int) -> None:
        key = (manifest.cluster, manifest.end,
               f"{manifest.after}.{manifest.range_id}", manifest.part)
        self.manifest_parts.setdefault(key, StoredManifest(manifest, received_ms))

    def manifests(self, cluster: str, *, ending_from: int, limit: int) -> list[StoredManifest]:
        keys = sorted(k for k in self.manifest_parts if k[0] == cluster and k[1] >= ending_from)
        return [self.manifest_parts[k] for k in keys[:limit]]

    def put_arrival(self, cluster: str, arrival: Arrival) -> None:
        self.arrived[(cluster, arrival.dedup_id)] = arrival

    def arrivals(self, cluster: str, dedup_ids: Iterable[str]) -> dict[str, Arrival]:
        return {i: a for i in dedup_ids if (a := self.arrived.get((cluster, i))) is not None}

    def acquire(self, cluster: str, owner: str, *, now_ms: int,
                until_ms: int) -> Position | None:
        held = self.leases.get(cluster)
        if held is not None and held[0] != owner and held[1] >= now_ms:
            return None
        self.leases[cluster] = (owner, until_ms)
        return self.positions.get(cluster, Position(None))

    def advance(self, cluster: str, owner: str, position: Position) -> None:
        if self.leases.get(cluster, ("",))[0] != owner:
            raise LeaseLost(cluster)
        self.positions[cluster] = position

    def release(self, cluster: str, owner: str) -> None:
        if self.leases.get(cluster, ("",))[0] == owner:
            del self.leases[cluster]
