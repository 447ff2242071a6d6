"""Generated contract events: a deterministic mix of file life cycles across days, for tests
that need more events than the sample edit log holds."""

from __future__ import annotations

import random

from hdfs_events.event import EventType, HdfsEvent, INodeType, MetadataType

DAY_MS = 86_400_000


def generated_events(cluster: str, *, count: int, start_ms: int, span_ms: int,
                     first_txid: int = 1000, seed: int = 7) -> list[HdfsEvent]:
    """`count` events, txids rising from first_txid, NameNode times spread over span_ms.
    APPEND and METADATA carry no timestamp, as in Hadoop."""
    rng = random.Random(seed)
    events: list[HdfsEvent] = []
    txid = first_txid
    step = max(1, span_ms // max(1, count))
    while len(events) < count:
        ts = start_ms + (txid - first_txid) * step
        path = f"/data/team{rng.randrange(3)}/part-{txid:06d}"
        owner = f"user{rng.randrange(3)}"
        kind = rng.random()
        if kind < 0.35:
            batch = [HdfsEvent(cluster, txid, 0, EventType.CREATE, path, timestamp=ts,
                               inode_type=INodeType.FILE, ctime=ts, replication=3, owner=owner,
                               group="hadoop", perms="0644", overwrite=False,
                               block_size=134217728, erasure_coded=False)]
        elif kind < 0.6:
            batch = [HdfsEvent(cluster, txid, 0, EventType.CLOSE, path, timestamp=ts,
                               size=rng.randrange(0, 5_000_000))]
        elif kind < 0.7:
            batch = [HdfsEvent(cluster, txid, 0, EventType.RENAME, path, dst_path=path + ".done",
                               timestamp=ts)]
        elif kind < 0.8:
            batch = [HdfsEvent(cluster, txid, 0, EventType.UNLINK, path, timestamp=ts)]
        elif kind < 0.9:
            batch = [HdfsEvent(cluster, txid, 0, EventType.METADATA, path,
                               metadata_type=MetadataType.TIMES, mtime=ts, atime=ts)]
        else:  # a concat: APPEND, UNLINK of a source, CLOSE with -1, all under one txid
            batch = [HdfsEvent(cluster, txid, 0, EventType.APPEND, path, new_block=False),
                     HdfsEvent(cluster, txid, 1, EventType.UNLINK, path + ".src", timestamp=ts),
                     HdfsEvent(cluster, txid, 2, EventType.CLOSE, path, timestamp=ts, size=-1)]
        events.extend(batch)
        txid += 1
    return events[:count]
