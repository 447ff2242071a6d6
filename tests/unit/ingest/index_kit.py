"""Building index inputs by hand, applying them as the sequencer does (in order, a chunk at a
time, every walk finished before what follows), reading the table back, failing its writes."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from botocore.awsrequest import AWSResponse

from hdfs_events.event import EventType, HdfsEvent, INodeType
from hdfs_events.index_item import from_wire
from lambdas.ingest.index import NamespaceIndex, SkippedEvent
from lambdas.ingest.index_table import item_to_entry


def ev(txid: int, type_: EventType, path: str, **kw) -> HdfsEvent:
    return HdfsEvent(cluster="prod", txid=txid, index=0, type=type_, path=path,
                     timestamp=1_700_000_000_000 + txid, **kw)


def mkdir(txid: int, path: str) -> HdfsEvent:
    return ev(txid, EventType.CREATE, path, inode_type=INodeType.DIRECTORY, ctime=txid,
              owner="etl", group="etl", perms="0755")


def mkfile(txid: int, path: str) -> HdfsEvent:
    return ev(txid, EventType.CREATE, path, inode_type=INodeType.FILE, ctime=txid,
              owner="etl", group="etl", perms="0644", replication=3)


def apply_in_order(index: NamespaceIndex, events: Sequence[HdfsEvent],
                   chunk: int = 1000) -> list[SkippedEvent]:
    """What applying one range does, without the sequencer's bookkeeping."""
    skipped: list[SkippedEvent] = []
    done = 0
    while done < len(events):
        applied = index.apply_until_walk(events[done:done + chunk])
        done += applied.taken
        skipped += applied.skipped
        walk = applied.walk
        while walk is not None:
            walk, refused = index.resume(walk)
            skipped += refused
    return skipped


def live(ddb: Any, table: str = "hdfs-events-index") -> dict[str, dict]:
    pages = ddb.get_paginator("scan").paginate(TableName=table)
    entries = [item_to_entry(from_wire(i)) for page in pages for i in page["Items"]
               if "!" not in i["parent"]["S"].partition("#")[0]]
    return {e.path: dict(e.attrs) for e in entries if e.alive}



class _Body:
    """The raw body botocore reads a response from."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self.data


class FailWrites:
    """Answers the first `times` BatchWriteItem calls holding one of `paths` with an error, as
    DynamoDB does under throttling (a hot partition). Registered first on the client's
    `before-send`, so botocore's retry handler sees the error as if it came over the wire (moto
    in-process applies the request anyway: only its response is lost, the harder case)."""

    THROTTLED = (400, "ProvisionedThroughputExceededException",
                 "The level of configured provisioned throughput for the table was exceeded")

    def __init__(self, ddb: Any, paths: Sequence[str], times: int) -> None:
        self.paths, self.left = set(paths), times
        self.failed = 0
        status, code, message = self.THROTTLED
        self.status = status
        self.body = json.dumps({"__type": f"com.amazonaws.dynamodb.v20120810#{code}",
                                "message": message}).encode()
        self._lock = threading.Lock()
        self._ddb = ddb
        ddb.meta.events.register_first("before-send.dynamodb.BatchWriteItem", self)

    def __call__(self, request: Any, **_: Any) -> AWSResponse | None:
        written = {r["PutRequest"]["Item"]["path"]["S"]
                   for rs in json.loads(request.body)["RequestItems"].values() for r in rs}
        with self._lock:
            if not written & self.paths or self.left <= 0:
                return None
            self.left -= 1
            self.failed += 1
        return AWSResponse(request.url, self.status,
                           {"Content-Type": "application/x-amz-json-1.0"}, _Body(self.body))

    def lift(self) -> None:
        self._ddb.meta.events.unregister("before-send.dynamodb.BatchWriteItem", self)


