"""Reading a range's raw objects back: in the order asked, a bounded number fetched ahead."""

from __future__ import annotations

import gzip
import io
import threading
from typing import Any

from hdfs_events.event import EventType, HdfsEvent
from lambdas.ingest.lake_store import READ_CONCURRENCY, S3Lake

OBJECTS = 5 * READ_CONCURRENCY


def event(txid: int) -> HdfsEvent:
    return HdfsEvent("prod", txid, 0, EventType.CREATE, f"/data/f{txid}", timestamp=1)


class S3Double:
    """get_object only, over bodies in memory; counts the GETs started."""

    def __init__(self, bodies: dict[str, bytes]) -> None:
        self.bodies, self.gets, self.lock = bodies, 0, threading.Lock()

    def get_object(self, *, Bucket: str, Key: str) -> dict[str, Any]:
        with self.lock:
            self.gets += 1
        return {"Body": io.BytesIO(self.bodies[Key])}


def test_objects_come_in_the_order_asked_and_fetching_stays_a_few_ahead() -> None:
    keys = [f"raw/cluster=prod/o{i}.jsonl.gz" for i in range(OBJECTS)]
    s3 = S3Double({k: gzip.compress((event(i).to_json() + "\n").encode())
                   for i, k in enumerate(keys)})
    lake = S3Lake("lake", s3)

    taken = []
    for events in lake.events_by_object(list(reversed(keys))):
        taken.append(events)
        assert s3.gets <= len(taken) + READ_CONCURRENCY  # not the whole range at once

    assert [e.txid for events in taken for e in events] == list(reversed(range(OBJECTS)))
