"""The index table's entries: DynamoIndexStore (index_view.IndexStore) and the batched reads
the sequencer's store shares (sequence_store.py keeps its items in the same table). The item
format is the contract's (hdfs_events/index_item.py): the `index` CLI reads what this writes.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

from botocore.config import Config
from botocore.exceptions import ClientError

from hdfs_events import names
from hdfs_events.dynamodb_json import from_wire, to_wire
from hdfs_events.index_item import (
    IndexItem,
    child_partitions,
    newest_by_name,
    partition_page,
    wire_key,
    wire_keys,
)
from lambdas.ingest.clients import client
from lambdas.ingest.index_model import Entry
from lambdas.ingest.index_view import Refused

BATCH_GET_LIMIT = 100  # DynamoDB BatchGetItem keys per call
BATCH_WRITE_LIMIT = 25  # DynamoDB BatchWriteItem items per call
# Index calls in flight at once (BatchWriteItem, BatchGetItem pages, a walk's Queries): 16 x 25
# items is one wave for a chunk of CHUNK_EVENTS. Not TransactWriteItems: a transaction costs
# 2 WCU per item instead of 1 (index writes are most of the table's bill). An entry's partition
# is its parent directory, and one partition key takes at most 1,000 WCU/s.
WRITE_CONCURRENCY = 16


def batch_get(ddb: Any, table: str, keys: Sequence[Mapping[str, Any]],
              pool: ThreadPoolExecutor | None = None) -> list[dict[str, Any]]:
    """The items (wire format) stored under `keys`, strongly consistent, BATCH_GET_LIMIT keys
    per call (on `pool`, the pages at once); keys DynamoDB leaves unprocessed (throttling) are
    asked again with backoff."""
    pages = [list(keys[i:i + BATCH_GET_LIMIT]) for i in range(0, len(keys), BATCH_GET_LIMIT)]
    if pool is None or len(pages) <= 1:
        return [item for page in pages for item in _get_page(ddb, table, page)]
    return [item for got in pool.map(lambda p: _get_page(ddb, table, p), pages) for item in got]


def _get_page(ddb: Any, table: str, keys: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    request = {table: {"Keys": keys, "ConsistentRead": True}}
    for attempt in range(8):
        response = ddb.batch_get_item(RequestItems=request)
        items += response.get("Responses", {}).get(table, [])
        request = response.get("UnprocessedKeys") or {}
        if not request:
            return items
        time.sleep(min(0.05 * 2**attempt, 1.0))
    raise RuntimeError(f"DynamoDB left {len(request[table]['Keys'])} keys unprocessed after retries")



def entry_to_item(entry: Entry, *, now_s: int) -> dict[str, Any]:
    return IndexItem(entry.cluster, entry.path, entry.attrs, entry.version[0], entry.version[1],
                     entry.deleted, entry.moved_to, entry.walk, entry.shards,
                     entry.in_shard).to_item(now_s=now_s)


def item_to_entry(item: Mapping[str, Any]) -> Entry:
    i = IndexItem.from_item(item)
    return Entry(i.cluster, i.path, i.attrs, (i.last_txid, i.last_index), i.deleted,
                 i.moved_to, i.subtree_op, i.shards, i.in_shard)


def entry_name(entry: Entry) -> str:
    return entry.path.rsplit("/", 1)[1]


def entry_version(entry: Entry) -> tuple[int, int]:
    return entry.version


def newer_of(held: Entry | None, entry: Entry) -> Entry:
    """One path's items in both places: the later write is the entry, marked as having a twin."""
    if held is None:
        return entry
    newer = entry if held.version < entry.version else held
    return newer.placed(shards=newer.shards, in_shard=newer.in_shard, twin=True)


def with_twins(streams: Sequence[Sequence[Entry]], merged: list[Entry]) -> list[Entry]:
    """The merged entries, those whose name more than one partition holds marked twin."""
    seen = Counter(entry_name(e) for stream in streams for e in stream)
    return [e.placed(shards=e.shards, in_shard=e.in_shard, twin=True)
            if seen[entry_name(e)] > 1 else e for e in merged]


def shard_counts(store: Any, cluster: str, parents: Sequence[tuple[str, str | None]],
                 shards: Sequence[int | None] | None) -> list[int]:
    """Each parent's shard count: as the caller holds it, or read from its item (one
    get_many for those not held)."""
    counts = list(shards) if shards is not None else [None] * len(parents)
    unknown = [p for (p, _), n in zip(parents, counts, strict=True) if n is None]
    found = store.get_many(cluster, unknown) if unknown else {}
    return [n if n is not None else (found[p].shards if p in found else 0)
            for (p, _), n in zip(parents, counts, strict=True)]


class DynamoIndexStore:
    """IndexStore on the index table. Reads are strongly consistent (a walk reads what the
    chunk before it wrote). Calls go out on a thread pool (boto3 clients are thread-safe; the
    pool lives as long as the store, across warm invocations): BatchGetItem pages, BatchWriteItem
    calls and a walk's Queries, WRITE_CONCURRENCY at once."""

    def __init__(self, table: str, dynamodb: Any | None = None,
                 clock: Any = time.time) -> None:
        self.table, self.clock = table, clock
        # No client-side parameter validation: every request here is built from the contract's
        # wire items (hdfs_events.dynamodb_json), and DynamoDB validates each one again (its
        # ValidationException is what _write_batch acts on). botocore's walk of a 25-item
        # BatchWriteItem against its model was half the call's CPU: 2.1-2.4 -> 1.0-1.1 ms
        # (docs/bench.md), in the one lease holder that applies the index.
        self.ddb = dynamodb or client("dynamodb", Config(
            max_pool_connections=WRITE_CONCURRENCY, parameter_validation=False))
        self._pool = ThreadPoolExecutor(max_workers=WRITE_CONCURRENCY,
                                        thread_name_prefix="index-ddb")

    def get_many(self, cluster: str, paths: Iterable[str]) -> dict[str, Entry]:
        keys = [k for p in dict.fromkeys(paths) for k in wire_keys(cluster, p)]
        found: dict[str, Entry] = {}
        for raw in batch_get(self.ddb, self.table, keys, pool=self._pool):
            entry = item_to_entry(from_wire(raw))
            found[entry.path] = newer_of(found.get(entry.path), entry)
        return found

    def put_many(self, entries: Sequence[Entry]) -> list[Refused]:
        now_s = int(self.clock())
        items = {(e.cluster, e.path): e for e in entries}  # BatchWriteItem refuses a key twice
        requests = []
        for e in items.values():
            requests.append((e, {"PutRequest": {"Item": to_wire(entry_to_item(e, now_s=now_s))}}))
            if e.twin:
                requests.append((e, {"DeleteRequest": {"Key": wire_key(
                    e.cluster, e.path, in_shard=not e.in_shard)}}))
        batches = [requests[i:i + BATCH_WRITE_LIMIT]
                   for i in range(0, len(requests), BATCH_WRITE_LIMIT)]
        futures = [self._pool.submit(self._write_batch, b) for b in batches]
        wait(futures)  # every write has finished (or failed) before anything is raised
        errors = [exc for f in futures if (exc := f.exception()) is not None]
        if errors:
            raise errors[0]
        return [r for f in futures for r in f.result()]

    def _write_batch(self, batch: list[tuple[Entry, dict[str, Any]]]) -> list[Refused]:
        request = {self.table: [r for _, r in batch]}
        try:
            for attempt in range(8):
                response = self.ddb.batch_write_item(RequestItems=request)
                request = response.get("UnprocessedItems") or {}
                if not request:
                    return []
                time.sleep(min(0.05 * 2**attempt, 1.0))  # throttled: back off, send the rest
        except ClientError as exc:
            if _error_code(exc) != "ValidationException":
                raise
            return self._write_one_by_one(batch)  # which one DynamoDB cannot take
        raise RuntimeError(f"DynamoDB left {len(request[self.table])} writes unprocessed")

    def _write_one_by_one(self, batch: list[tuple[Entry, dict[str, Any]]]) -> list[Refused]:
        refused = []
        for entry, r in batch:
            try:
                if "PutRequest" in r:
                    self.ddb.put_item(TableName=self.table, Item=r["PutRequest"]["Item"])
                else:  # a twin's key, read from the table: valid; BatchWriteItem's grant
                    self._delete_one(r)
            except ClientError as exc:
                if _error_code(exc) != "ValidationException":
                    raise
                refused.append(Refused(entry, f"DynamoDB refused the entry: {exc}"))
        return refused

    def _delete_one(self, request: dict[str, Any]) -> None:
        pending = {self.table: [request]}
        for attempt in range(8):
            pending = self.ddb.batch_write_item(RequestItems=pending).get("UnprocessedItems")
            if not pending:
                return
            time.sleep(min(0.05 * 2**attempt, 1.0))
        raise RuntimeError("DynamoDB left a delete of a sharded entry's twin unprocessed")

    def children_many(self, cluster: str, parents: Sequence[tuple[str, str | None]], *,
                      limit: int,
                      shards: Sequence[int | None] | None = None) -> list[list[Entry]]:
        """Every partition of every parent is read at once (one wave of Queries); a sharded
        parent's partitions are read ~2 x limit / partitions each (names spread evenly by
        hash), and one read further only when the merge runs short of `limit` before them."""
        counts = shard_counts(self, cluster, parents, shards)
        tasks = []  # (parent's position, partition, after, page)
        for i, ((parent, after), n) in enumerate(zip(parents, counts, strict=True)):
            page = partition_page(limit, n)
            tasks += [(i, pk, after, page) for pk in child_partitions(cluster, parent, n)]
        got = list(self._pool.map(lambda t: self._query(t[1], t[2], t[3]), tasks))
        reads: list[list[_PartitionRead]] = [[] for _ in parents]
        for (i, pk, _, page), entries in zip(tasks, got, strict=True):
            reads[i].append(_PartitionRead(pk, page, entries))
        return [self._merged(r, limit) for r in reads]

    def _merged(self, reads: list[_PartitionRead], limit: int) -> list[Entry]:
        while True:
            # Past the last name read of a partition that holds more, the merge is not sure.
            cut = min((r.entries[-1].path.rsplit("/", 1)[1] for r in reads if r.more),
                      default=None)
            streams = [[e for e in r.entries if cut is None or entry_name(e) <= cut]
                       for r in reads]
            merged = with_twins(streams, list(newest_by_name(streams, entry_name, entry_version)))
            if len(merged) >= limit or cut is None:
                return merged[:limit]
            for r in reads:
                if r.more and entry_name(r.entries[-1]) == cut:
                    more = self._query(r.partition, cut, r.page)
                    r.entries += more
                    r.more = len(more) >= r.page

    def _query(self, partition: str, after: str | None, limit: int) -> list[Entry]:
        names_ = {"#pk": names.INDEX_PK}
        values: dict[str, Any] = {":pk": {"S": partition}}
        condition = "#pk = :pk"
        if after is not None:
            names_["#sk"] = names.INDEX_SK
            values[":after"] = {"S": after}
            condition += " AND #sk > :after"
        request: dict[str, Any] = {
            "TableName": self.table, "ConsistentRead": True,
            "KeyConditionExpression": condition, "ExpressionAttributeNames": names_,
            "ExpressionAttributeValues": values}
        entries: list[Entry] = []
        # A Query page also stops at 1 MB: read on until `limit` or the partition's end, or
        # the walk would take a short page for the end.
        while len(entries) < limit:
            response = self.ddb.query(**request, Limit=limit - len(entries))
            entries += [item_to_entry(from_wire(raw)) for raw in response["Items"]]
            if "LastEvaluatedKey" not in response:
                break
            request["ExclusiveStartKey"] = response["LastEvaluatedKey"]
        return entries


@dataclass(slots=True)
class _PartitionRead:
    """One partition's children read so far, in name order."""

    partition: str
    page: int
    entries: list[Entry]
    more: bool = False

    def __post_init__(self) -> None:
        self.more = len(self.entries) >= self.page


def _error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))
