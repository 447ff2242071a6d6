"""A correctness fix for moto 5.2's DynamoDB behind a threaded server: one DynamoDB request at a
time in the process.

Why: moto's `Table.items` is a `defaultdict(dict)` of partitions, and `Table.put_item` (every
item of a BatchWriteItem) stores through `self.items[hash_key][range_key] = item`. When two
requests write the first items of one partition at once, each can miss the partition, create a
dict of its own and store it; the later store replaces the earlier dict with the items already
written into it (`DynamoType.__hash__` is Python code, so the GIL can pass between the miss and
the store). ThreadedMotoServer serves each request in its own thread, and the consumer writes
an index chunk as 16 parallel BatchWriteItem calls, so a directory whose children straddle two
calls could lose the first call's share: the kit's 300k-file bench found 8 and 16 entries
missing in two of five runs, a run of children of one directory each time, while every event
had reached the consumer. tests/unit/kit/test_moto_dynamodb_lock.py shows the loss in moto's
own Table and none through the server with this lock.

What changes: nothing in what moto answers, only when: `DynamoHandler.call_action` (one
request's whole handling) runs under one process-wide lock. moto's handling is Python under
the GIL either way, so this costs little throughput; the HTTP parsing and sockets stay
concurrent. AWS's DynamoDB never loses an acknowledged write, which is what the index's
exactly-once proof assumes.

Scope: `apply()` patches the class for the whole process, once; every place that starts a moto
server calls it first, through tests/kit/moto_fixes.py, and so does every bench that writes the
index in parallel to moto in-process, directly (bench/hot_directory.py, bench/index_apply.py:
moto's in-process mock dispatches through the same handler).
"""

from __future__ import annotations

import threading

from moto.dynamodb.responses import DynamoHandler

from tests.kit.moto_fixes import under_lock

_lock = threading.Lock()


def apply() -> None:
    """Serialize moto's DynamoDB request handling in this process (idempotent)."""
    under_lock(DynamoHandler, "call_action", lambda _: _lock)
