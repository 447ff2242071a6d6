"""The compaction watermark: every raw object already compacted, with the size and mtime it had.

One JSON document per raw (cluster, dt) partition, {"hour=HH/<name>": [size, mtime_ms, outcome]},
so a run rewrites only the documents of partitions that changed. An object is read again when it
is new or its size or mtime changed (a redelivered SQS message overwrites its own object): the
dedup makes a re-read harmless, the watermark makes it rare. Glue job bookmarks would do the
same on Glue, but not locally, and they cannot tell a quarantined object from a compacted one.

The watermark is written after the catalog switch: a crash in between re-reads those objects
next run, finds every key already curated, and publishes nothing.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from glue_jobs.layout import AUDIT_STATE_PREFIX, STATE_PREFIX, audit_state_key, state_key
from glue_jobs.storage import LakeStore, ObjectInfo
from hdfs_events.lake_layout import RawKey, parse_audit_raw_key, parse_raw_key

OUTCOME_COMPACTED = "compacted"

PartitionKey = tuple[str, str]
Members = dict[str, list]  # member -> [size, mtime_ms, outcome]


@dataclass(frozen=True, slots=True)
class Tracked:
    """Which raw objects a watermark tracks (their key layout) and where its documents live."""
    state_prefix: str
    parse: Callable[[str], RawKey | None]
    state_key: Callable[[str, str], str]


RAW_EVENTS = Tracked(STATE_PREFIX, parse_raw_key, state_key)  # compact_events
RAW_AUDIT = Tracked(AUDIT_STATE_PREFIX, parse_audit_raw_key, audit_state_key)  # compact_audit


@dataclass(frozen=True, slots=True)
class RawObject:
    info: ObjectInfo
    key: RawKey


def load(store: LakeStore, tracked: Tracked = RAW_EVENTS) -> dict[PartitionKey, Members]:
    docs: dict[PartitionKey, Members] = {}
    for obj in store.list_objects(tracked.state_prefix):
        rest = obj.key[len(tracked.state_prefix):]  # cluster=<c>/dt=<d>.json
        if not rest.endswith(".json"):
            continue
        cluster_part, _, dt_part = rest[:-len(".json")].partition("/")
        key = (cluster_part.removeprefix("cluster="), dt_part.removeprefix("dt="))
        raw = store.read_bytes(obj.key)
        if raw is not None:
            docs[key] = json.loads(raw)
    return docs


def pending(listing: Iterable[ObjectInfo], known: Mapping[PartitionKey, Members],
            tracked: Tracked = RAW_EVENTS) -> tuple[list[RawObject], list[ObjectInfo]]:
    """(raw objects new or changed since their last run, objects outside the raw layout)."""
    todo: list[RawObject] = []
    strays: list[ObjectInfo] = []
    for info in listing:
        key = tracked.parse(info.key)
        if key is None:
            strays.append(info)
            continue
        seen = known.get(key.partition, {}).get(key.member)
        if seen is None or seen[0] != info.size or seen[1] != info.mtime_ms:
            todo.append(RawObject(info, key))
    return todo, strays


def advance(store: LakeStore, known: Mapping[PartitionKey, Members],
            outcomes: Mapping[str, tuple[RawObject, str]], tracked: Tracked = RAW_EVENTS) -> int:
    """Records each object's outcome (OUTCOME_COMPACTED or a quarantine reason); returns the
    number of state documents written."""
    by_partition: dict[PartitionKey, Members] = defaultdict(dict)
    for obj, outcome in outcomes.values():
        by_partition[obj.key.partition][obj.key.member] = [obj.info.size, obj.info.mtime_ms,
                                                           outcome]
    for (cluster, dt), members in sorted(by_partition.items()):
        doc = dict(known.get((cluster, dt), {}))
        doc.update(members)
        store.write_bytes(tracked.state_key(cluster, dt),
                          json.dumps(dict(sorted(doc.items())), separators=(",", ":")).encode())
    return len(by_partition)
