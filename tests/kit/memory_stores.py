"""In-memory stores with DynamoDB's semantics that matter here: partition = parent, items
sorted by name within it, DynamoDB's key limits; the sequencer's lease conditions."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from hdfs_events import names
from hdfs_events.manifest import Manifest
from lambdas.ingest.index import MAX_NAME_BYTES
from lambdas.ingest.index_model import Entry
from lambdas.ingest.index_view import Refused
from lambdas.ingest.sequencer import (
    Arrival,
    LeaseLost,
    LostManifest,
    Position,
    StoredManifest,
)


class MemoryIndexStore:
    def __init__(self) -> None:
        self.partitions: dict[str, dict[str, Entry]] = {}
        self.calls = {"get": 0, "put": 0, "query": 0}
        self.puts = 0

    @staticmethod
    def key(cluster: str, path: str) -> tuple[str, str]:
        parent, name = names.split_path(path)
        return names.index_partition(cluster, parent), name

    def get_many(self, cluster: str, paths: Iterable[str]) -> dict[str, Entry]:
        self.calls["get"] += 1
        found = {}
        for path in paths:
            pk, name = self.key(cluster, path)
            entry = self.partitions.get(pk, {}).get(name)
            if entry is not None:
                found[path] = entry
        return found

    def put_many(self, entries: Sequence[Entry]) -> list[Refused]:
        self.calls["put"] += 1
        refused = []
        for entry in entries:
            pk, name = self.key(entry.cluster, entry.path)
            if len(name.encode()) > MAX_NAME_BYTES:
                refused.append(Refused(entry, "sort key over 1024 bytes"))
                continue
            self.partitions.setdefault(pk, {})[name] = entry
            self.puts += 1
        return refused

    def children_many(self, cluster: str, parents: Sequence[tuple[str, str | None]], *,
                      limit: int) -> list[list[Entry]]:
        self.calls["query"] += 1
        out = []
        for parent, after in parents:
            part = self.partitions.get(names.index_partition(cluster, parent), {})
            chosen = sorted(n for n in part if after is None or n > after)[:limit]
            out.append([part[n] for n in chosen])
        return out

    def entries(self) -> list[Entry]:
        return [e for part in self.partitions.values() for e in part.values()]

    def live(self, cluster: str) -> dict[str, dict]:
        """What a user sees: path -> attributes of every live entry."""
        return {e.path: dict(e.attrs) for e in self.entries()
                if e.cluster == cluster and e.alive}


class MemorySequenceStore:
    """sequencer.SequenceStore in memory, with the lease's conditions."""

    def __init__(self) -> None:
        self.manifest_parts: dict[tuple[str, int, str, int], StoredManifest] = {}
        self.arrived: dict[tuple[str, str], Arrival] = {}
        self.lost: dict[str, list[LostManifest]] = {}
        self.positions: dict[str, Position] = {}
        self.leases: dict[str, tuple[str, int]] = {}

    def put_manifest(self, manifest: Manifest, *, received_ms: int) -> None:
        key = (manifest.cluster, manifest.end,
               f"{manifest.after}.{manifest.range_id}", manifest.part)
        self.manifest_parts.setdefault(key, StoredManifest(manifest, received_ms))

    def manifests(self, cluster: str, *, ending_from: int, limit: int) -> list[StoredManifest]:
        keys = sorted(k for k in self.manifest_parts if k[0] == cluster and k[1] >= ending_from)
        return [self.manifest_parts[k] for k in keys[:limit]]

    def put_lost_manifest(self, cluster: str, lost: LostManifest) -> None:
        self.lost.setdefault(cluster, []).append(lost)

    def lost_manifests(self, cluster: str, *, received_from_ms: int,
                       received_to_ms: int) -> list[LostManifest]:
        return sorted(lost for lost in self.lost.get(cluster, [])
                      if received_from_ms <= lost.received_ms <= received_to_ms)

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
