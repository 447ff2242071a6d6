"""A backlog the namespace index must catch up on: jobs as a busy cluster runs them, every
message arrived and every range closed while the index was not applying ranges. The unit test
(tests/unit/ingest/test_index_backlog.py) applies one at a size that crosses many chunks and
messages; bench.index_backlog applies a million events for the rate."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

from hdfs_events.event import EventType, HdfsEvent, INodeType
from hdfs_events.ids import deduplication_id
from hdfs_events.manifest import manifests_for
from lambdas.ingest.index import NamespaceIndex
from lambdas.ingest.sequencer import IndexSequencer
from tests.kit.memory_stores import MemoryIndexStore, MemorySequenceStore

CLUSTER = "prod"
T0 = 1_700_000_000_000
INDEXED = "/data"


def jobs(events: int) -> Iterator[HdfsEvent]:
    """Jobs as a busy cluster runs them: part files written under `_temporary`, appended to,
    renamed into place, `_temporary` deleted, and every tenth job's output (a directory at
    depth 4) renamed into an archive, every fifth archive deleted."""
    txid = itertools.count(1)

    def ev(type_: EventType, path: str, **kw: object) -> HdfsEvent:
        t = next(txid)
        return HdfsEvent(CLUSTER, t, 0, type_, path, timestamp=T0 + t, **kw)  # type: ignore[arg-type]

    def mk(path: str, kind: INodeType) -> HdfsEvent:
        return ev(EventType.CREATE, path, inode_type=kind, ctime=T0, owner="etl",
                  group="etl", perms="0755" if kind == INodeType.DIRECTORY else "0644",
                  replication=3 if kind == INodeType.FILE else None)

    n = 0
    yield mk("/data", INodeType.DIRECTORY)
    yield mk("/data/archive", INodeType.DIRECTORY)
    for job in itertools.count():
        out = f"/data/t{job % 7}/j{job}"
        if job < 7:
            yield mk(f"/data/t{job}", INodeType.DIRECTORY)
        yield mk(out, INodeType.DIRECTORY)
        yield mk(f"{out}/_temporary", INodeType.DIRECTORY)
        for part in range(8):
            tmp = f"{out}/_temporary/part-{part:05d}"
            yield mk(tmp, INodeType.FILE)
            yield ev(EventType.CLOSE, tmp, size=100 * part)
            yield ev(EventType.APPEND, tmp)
            yield ev(EventType.CLOSE, tmp, size=100 * part + 7)
            yield ev(EventType.RENAME, tmp, dst_path=f"{out}/part-{part:05d}")
        yield ev(EventType.UNLINK, f"{out}/_temporary")
        yield mk(f"{out}/_SUCCESS", INodeType.FILE)
        yield ev(EventType.CLOSE, f"{out}/_SUCCESS", size=0)
        n += 46
        if job % 10 == 9:
            yield ev(EventType.RENAME, out, dst_path=f"/data/archive/j{job}")
        if job % 50 == 49:
            yield ev(EventType.UNLINK, f"/data/archive/j{job - 40}")
        if n >= events:
            return


class ObjectLake:
    """The lake objects of the backlog's messages, read back as applying ranges asks."""

    def __init__(self) -> None:
        self.objects: dict[str, list[HdfsEvent]] = {}
        self.reads = 0

    def events_by_object(self, keys: Sequence[str]) -> Iterator[list[HdfsEvent]]:
        for key in keys:
            self.reads += 1
            yield list(self.objects[key])


def backlog(events: list[HdfsEvent], per_message: int = 1000,
            store: MemorySequenceStore | None = None) -> IndexSequencer:
    """Every message arrived (its lake object written) and every range closed while the index
    was not applying ranges (a range a message)."""
    store, lake = store or MemorySequenceStore(), ObjectLake()
    sequencer = IndexSequencer(store, NamespaceIndex(MemoryIndexStore(), [INDEXED]), lake)
    after = None
    for start in range(0, len(events), per_message):
        chunk = events[start:start + per_message]
        dedup = deduplication_id(CLUSTER, (chunk[0].txid, chunk[0].index),
                                 (chunk[-1].txid, chunk[-1].index), len(chunk))
        lake.objects[f"raw/{dedup}"] = chunk
        sequencer.arrived(dedup, chunk, [f"raw/{dedup}"])
        for manifest in manifests_for(CLUSTER, after, chunk[-1].txid, [dedup]):
            sequencer.manifest(manifest)
        after = chunk[-1].txid
    return sequencer
