"""In-memory stores with DynamoDB's semantics that matter here: partition = parent (or a shard
of a hot parent, hdfs_events/index_item.py), items sorted by name within it, DynamoDB's key
limits and per-partition write limit; the sequencer's lease conditions."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence

from hdfs_events import index_item, names
from hdfs_events.manifest import Manifest
from lambdas.ingest.index import MAX_NAME_BYTES
from lambdas.ingest.index_model import Entry
from lambdas.ingest.index_table import (
    entry_name,
    entry_version,
    newer_of,
    shard_counts,
    with_twins,
)
from lambdas.ingest.index_view import Refused
from lambdas.ingest.sequencer import (
    Arrival,
    Lease,
    LeaseLost,
    LostManifest,
    Position,
    StoredManifest,
)


class PartitionLimit:
    """DynamoDB's per-partition write limit on a simulated clock: 1,000 WCU/s per partition
    key; writes beyond it within one second of `now_s` count as throttled."""

    def __init__(self, per_second: int = 1000) -> None:
        self.per_second = per_second
        self.now_s = 0.0
        self.throttled = 0
        self._second: Counter[tuple[str, int]] = Counter()

    def __call__(self, partition: str) -> None:
        key = (partition, int(self.now_s))
        self._second[key] += 1
        if self._second[key] > self.per_second:
            self.throttled += 1


class MemoryIndexStore:
    def __init__(self, on_write: Callable[[str], None] | None = None) -> None:
        self.partitions: dict[str, dict[str, Entry]] = {}
        self.calls = {"get": 0, "put": 0, "query": 0}
        self.puts = 0
        self.on_write = on_write  # each item written, by its partition key

    @staticmethod
    def key(entry: Entry) -> tuple[str, str]:
        k = index_item.item_key(entry.cluster, entry.path, in_shard=entry.in_shard)
        return k[names.INDEX_PK], k[names.INDEX_SK]

    def get_many(self, cluster: str, paths: Iterable[str]) -> dict[str, Entry]:
        self.calls["get"] += 1
        found: dict[str, Entry] = {}
        for path in paths:
            parent, name = names.split_path(path)
            for pk in (names.index_partition(cluster, parent),
                       names.index_shard_partition(cluster, parent, index_item.shard_of(name))):
                entry = self.partitions.get(pk, {}).get(name)
                if entry is not None:
                    found[path] = newer_of(found.get(path), entry)
        return found

    def put_many(self, entries: Sequence[Entry]) -> list[Refused]:
        self.calls["put"] += 1
        refused = []
        for entry in entries:
            pk, name = self.key(entry)
            if len(name.encode()) > MAX_NAME_BYTES:
                refused.append(Refused(entry, "sort key over 1024 bytes"))
                continue
            self.partitions.setdefault(pk, {})[name] = entry.placed(
                shards=entry.shards, in_shard=entry.in_shard)  # stored: no twin left
            self.puts += 1
            if self.on_write is not None:
                self.on_write(pk)
            if entry.twin:  # the copy in the other place goes with this write
                other = index_item.item_key(entry.cluster, entry.path,
                                            in_shard=not entry.in_shard)[names.INDEX_PK]
                self.partitions.get(other, {}).pop(name, None)
                self.puts += 1
                if self.on_write is not None:
                    self.on_write(other)
        return refused

    def children_many(self, cluster: str, parents: Sequence[tuple[str, str | None]], *,
                      limit: int, shards: Sequence[int | None] | None = None,
                      ) -> list[list[Entry]]:
        counts = shard_counts(self, cluster, parents, shards)
        self.calls["query"] += 1
        out = []
        for (parent, after), n in zip(parents, counts, strict=True):
            streams = []
            for pk in index_item.child_partitions(cluster, parent, n):
                part = self.partitions.get(pk, {})
                streams.append([part[name] for name in sorted(part)
                                if after is None or name > after])
            merged = with_twins(streams, list(index_item.newest_by_name(
                streams, entry_name, entry_version)))
            out.append(merged[:limit])
        return out

    def entries(self) -> list[Entry]:
        """Every path's entry: the newest of its items (a sharded directory's child may have
        one in the parent's partition and one in its shard)."""
        newest: dict[tuple[str, str], Entry] = {}
        for part in self.partitions.values():
            for e in part.values():
                held = newest.get((e.cluster, e.path))
                if held is None or held.version < e.version:
                    newest[(e.cluster, e.path)] = e
        return list(newest.values())

    def expire_delete_markers(self) -> None:
        """What DynamoDB's TTL does DELETE_MARKER_TTL_SECONDS after a delete: the markers go."""
        for part in self.partitions.values():
            for name in [n for n, e in part.items() if e.deleted]:
                del part[name]

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
        self.taken_by: dict[str, str] = {}  # who took each cluster's lease last

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
                until_ms: int) -> Lease | None:
        held = self.leases.get(cluster)
        if held is not None and held[0] != owner and held[1] >= now_ms:
            return None
        self.leases[cluster] = (owner, until_ms)
        taken_after, self.taken_by[cluster] = self.taken_by.get(cluster), owner
        return Lease(self.positions.get(cluster, Position(None)), taken_after)

    def advance(self, cluster: str, owner: str, position: Position) -> None:
        if self.leases.get(cluster, ("",))[0] != owner:
            raise LeaseLost(cluster)
        self.positions[cluster] = position

    def release(self, cluster: str, owner: str) -> None:
        if self.leases.get(cluster, ("",))[0] == owner:
            del self.leases[cluster]
