"""boto3 behind small interfaces: the lake bucket, the index table, the event queue (drain
requests).

Clients are passed in (or made plainly from the standard chain), so the same code reaches AWS,
moto in-process and moto server. Transient failures (throttling, 5xx, connection errors) are
retried by botocore's standard retry mode and then raised: the record fails and SQS redelivers
it. Only a failed write condition is an expected outcome here, returned as False.
"""

from __future__ import annotations

import gzip
import json
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from decimal import Decimal
from typing import Any

import boto3
from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.config import Config
from botocore.exceptions import ClientError

from hdfs_events import names
from hdfs_events.event import HdfsEvent
from hdfs_events.ids import sqs_safe_id
from hdfs_events.manifest import KIND_ATTRIBUTE
from lambdas.ingest.index_model import ATTRIBUTES, At, End, Entry, Life, Version

# botocore standard mode: exponential backoff with jitter on throttling and 5xx; max_attempts
# counts retries, so a request is tried 4 times in all.
CLIENT_CONFIG = Config(retries={"mode": "standard", "max_attempts": 3})
INDEX_RADIX = 1_000_000  # seq = txid * radix + index: an EventBatch never holds 10^6 events
DELETE_MARKER_TTL_SECONDS = 30 * 86_400  # beyond SQS's 14-day retention plus a DLQ redrive
BATCH_GET_LIMIT = 100  # DynamoDB BatchGetItem keys per call
# Conditional PutItems in flight at once. Not TransactWriteItems: a transaction costs 2 WCU per
# item instead of 1 (index writes are most of the table's bill) and one failed condition cancels
# all 100, while separate puts land what they can and the retry rewrites only the refused. An
# entry's partition is its parent directory, and one partition key takes at most 1,000 WCU/s,
# so more threads than this buy little on the usual directory-heavy workload.
WRITE_CONCURRENCY = 16
KIND_DRAIN = "drain"  # `kind` of a request to go on applying a cluster's ranges to the index
# Lake objects a drain reads at once: messages it did not receive itself, ~10-60 KB each.
READ_CONCURRENCY = 8


def batch_get(ddb: Any, table: str, keys: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The items (wire format) stored under `keys`, strongly consistent, BATCH_GET_LIMIT keys
    per call; keys DynamoDB leaves unprocessed (throttling) are asked again with backoff."""
    items: list[dict[str, Any]] = []
    for start in range(0, len(keys), BATCH_GET_LIMIT):
        request = {table: {"Keys": list(keys[start:start + BATCH_GET_LIMIT]),
                           "ConsistentRead": True}}
        for attempt in range(8):
            response = ddb.batch_get_item(RequestItems=request)
            items += response.get("Responses", {}).get(table, [])
            request = response.get("UnprocessedKeys") or {}
            if not request:
                break
            time.sleep(min(0.05 * 2**attempt, 1.0))
        else:
            raise RuntimeError(f"DynamoDB left {len(request)} keys unprocessed after retries")
    return items


def client(service: str) -> Any:
    return boto3.client(service, config=CLIENT_CONFIG)  # type: ignore[call-overload]


class S3Lake:
    def __init__(self, bucket: str, s3: Any | None = None) -> None:
        self.bucket, self.s3 = bucket, s3 or client("s3")
        self._pool: ThreadPoolExecutor | None = None

    def put(self, key: str, body: bytes, content_type: str) -> None:
        self.s3.put_object(Bucket=self.bucket, Key=key, Body=body, ContentType=content_type)

    def events(self, keys: Sequence[str]) -> list[HdfsEvent]:
        """The events of raw lake objects (gzip JSON lines), read READ_CONCURRENCY at a time."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=READ_CONCURRENCY,
                                            thread_name_prefix="lake-get")
        bodies = self._pool.map(
            lambda key: self.s3.get_object(Bucket=self.bucket, Key=key)["Body"].read(), keys)
        return [HdfsEvent.from_dict(json.loads(line))
                for body in bodies for line in gzip.decompress(body).splitlines() if line]


class SqsDrainRequests:
    def __init__(self, queue_url: str, sqs: Any | None = None) -> None:
        self.queue_url, self.sqs = queue_url, sqs or client("sqs")

    def send_drain(self, cluster: str, *, key: str) -> None:
        """Asks a later invocation to go on draining `cluster`'s index (`key` tells requests
        apart; the same key within SQS's 5-minute deduplication window is sent once)."""
        self.sqs.send_message(
            QueueUrl=self.queue_url, MessageBody=json.dumps({"cluster": cluster}),
            MessageGroupId=sqs_safe_id(f"{cluster}:#drain"),
            MessageDeduplicationId=sqs_safe_id(f"{cluster}-drain-{key}"),
            MessageAttributes={KIND_ATTRIBUTE: {"DataType": "String", "StringValue": KIND_DRAIN}},
        )


class IamUsers:
    def __init__(self, iam: Any | None = None) -> None:
        self.iam = iam or client("iam")

    def unique_id(self, user_name: str) -> str:
        """The user's IAM unique id ("AIDA..."), what SQS reports as a message's SenderId."""
        return str(self.iam.get_user(UserName=user_name)["User"]["UserId"])


# --- the index table ---------------------------------------------------------------------------

def seq(version: Version) -> int:
    return version[0] * INDEX_RADIX + version[1]


def unseq(value: Any) -> Version:
    n = int(value)
    return n // INDEX_RADIX, n % INDEX_RADIX


def seq_at(at: At) -> list[int]:
    return [seq(v) for v in at]


def unseq_at(value: Any) -> At:
    return tuple(unseq(v) for v in value)


def index_key(cluster: str, path: str) -> dict[str, str]:
    parent, name = names.split_path(path)
    return {names.INDEX_PK: names.index_partition(cluster, parent), names.INDEX_SK: name}


def entry_to_item(entry: Entry, *, now_s: int) -> dict[str, Any]:
    item: dict[str, Any] = {**index_key(entry.cluster, entry.path), "cluster": entry.cluster,
                            "path": entry.path, "rev": entry.rev,
                            "last_txid": entry.last[0], "last_index": entry.last[1],
                            "deleted": entry.end is not None}
    item.update({k: v for k, v in entry.values.items()})
    item["versions"] = {k: seq(v) for k, v in entry.versions.items()}
    if entry.landed:
        item["landed"] = {k: seq_at(v) for k, v in entry.landed.items()}
    if entry.born is not None:
        item["born"] = seq_at(entry.born)
    if entry.end is not None:
        item["end"] = _end_to_map(entry.end)
        item[names.TTL_ATTRIBUTE] = now_s + DELETE_MARKER_TTL_SECONDS
    if entry.prev_ends:
        item["prev_ends"] = [_end_to_map(e) for e in entry.prev_ends]
    if entry.older:
        item["older"] = [_life_to_map(life) for life in entry.older]
    if entry.subtree_op is not None:
        item["subtree_op"] = dict(entry.subtree_op)
    return item


def item_to_entry(item: Mapping[str, Any]) -> Entry:
    versions = {k: unseq(v) for k, v in item.get("versions", {}).items()}
    return Entry(
        cluster=item["cluster"], path=item["path"],
        values={k: _plain(item.get(k)) for k in versions if k in ATTRIBUTES},
        versions=versions,
        landed={k: unseq_at(v) for k, v in item.get("landed", {}).items()},
        born=unseq_at(item["born"]) if "born" in item else None,
        end=_map_to_end(item["end"]) if "end" in item else None,
        prev_ends=tuple(_map_to_end(e) for e in item.get("prev_ends", [])),
        older=tuple(_map_to_life(x) for x in item.get("older", [])),
        last=(int(item.get("last_txid", -1)), int(item.get("last_index", -1))),
        rev=int(item.get("rev", 0)),
        subtree_op=_plain(item["subtree_op"]) if "subtree_op" in item else None,
    )


def _end_to_map(end: End) -> dict[str, Any]:
    d: dict[str, Any] = {"at": seq_at(end.at), "moved_to": end.moved_to, "type": end.type}
    if end.born is not None:
        d["born"] = seq_at(end.born)
    return d


def _map_to_end(d: Mapping[str, Any]) -> End:
    return End(born=unseq_at(d["born"]) if d.get("born") is not None else None,
               at=unseq_at(d["at"]),
               moved_to=d.get("moved_to"), type=d.get("type"))


def _life_to_map(life: Life) -> dict[str, Any]:
    d: dict[str, Any] = {"values": dict(life.values),
                         "versions": {k: seq(v) for k, v in life.versions.items()},
                         "landed": {k: seq_at(v) for k, v in life.landed.items()}}
    if life.born is not None:
        d["born"] = seq_at(life.born)
    return d


def _map_to_life(d: Mapping[str, Any]) -> Life:
    return Life(born=unseq_at(d["born"]) if d.get("born") is not None else None,
                values={k: _plain(v) for k, v in d.get("values", {}).items()},
                versions={k: unseq(v) for k, v in d.get("versions", {}).items()},
                landed={k: unseq_at(v) for k, v in d.get("landed", {}).items()})


def _plain(value: Any) -> Any:
    """DynamoDB numbers come back as Decimal; the index holds only whole numbers."""
    if isinstance(value, Decimal):
        return int(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


class DynamoIndexStore:
    """IndexStore on the index table. Reads are strongly consistent: a subtree walk must see
    the entries it has just written. A message's writes go out on a small thread pool (boto3
    clients are thread-safe; the pool lives as long as the store, i.e. across warm
    invocations), as many at once as the client has connections."""

    def __init__(self, table: str, dynamodb: Any | None = None,
                 clock: Any = time.time) -> None:
        self.table, self.clock = table, clock
        self.ddb = dynamodb or boto3.client(  # type: ignore[call-overload]
            "dynamodb", config=CLIENT_CONFIG.merge(
                Config(max_pool_connections=WRITE_CONCURRENCY)))
        self._ser, self._de = TypeSerializer(), TypeDeserializer()
        self._pool: ThreadPoolExecutor | None = None

    def _to_wire(self, item: Mapping[str, Any]) -> dict[str, Any]:
        return {k: self._ser.serialize(v) for k, v in item.items()}

    def _from_wire(self, item: Mapping[str, Any]) -> dict[str, Any]:
        return {k: self._de.deserialize(v) for k, v in item.items()}

    def get_many(self, cluster: str, paths: Iterable[str]) -> dict[str, Entry]:
        keys = {tuple(index_key(cluster, p).values()): p for p in paths}
        wire_keys = [self._to_wire(dict(zip((names.INDEX_PK, names.INDEX_SK), k, strict=True)))
                     for k in keys]
        found: dict[str, Entry] = {}
        for raw in batch_get(self.ddb, self.table, wire_keys):
            entry = item_to_entry(self._from_wire(raw))
            found[entry.path] = entry
        return found

    def put(self, entry: Entry, *, expected_rev: int) -> bool:
        item = entry_to_item(entry, now_s=int(self.clock()))
        if expected_rev == 0:
            condition, values = "attribute_not_exists(#pk)", {}
            attr_names = {"#pk": names.INDEX_PK}
        else:
            condition, values = "#rev = :rev", {":rev": {"N": str(expected_rev)}}
            attr_names = {"#rev": "rev"}
        try:
            self.ddb.put_item(TableName=self.table, Item=self._to_wire(item),
                              ConditionExpression=condition, ExpressionAttributeNames=attr_names,
                              **({"ExpressionAttributeValues": values} if values else {}))
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def put_many(self, writes: Sequence[tuple[Entry, int]]) -> list[str]:
        if len(writes) <= 1:
            return [e.path for e, rev in writes if not self.put(e, expected_rev=rev)]
        if self._pool is None:
            workers = min(WRITE_CONCURRENCY, self.ddb.meta.config.max_pool_connections)
            self._pool = ThreadPoolExecutor(max_workers=workers,
                                            thread_name_prefix="index-put")
        futures = [self._pool.submit(self.put, e, expected_rev=rev) for e, rev in writes]
        wait(futures)  # every write has finished (or failed) before anything is raised
        errors = [exc for f in futures if (exc := f.exception()) is not None]
        if errors:
            raise errors[0]
        return [e.path for (e, _), f in zip(writes, futures, strict=True) if not f.result()]

    def children(self, cluster: str, parent: str, *, after: str | None,
                 limit: int) -> list[Entry]:
        names_ = {"#pk": names.INDEX_PK, "#sk": names.INDEX_SK}
        values: dict[str, Any] = {":pk": {"S": names.index_partition(cluster, parent)}}
        if after is not None:
            values[":after"] = {"S": after}
        else:
            del names_["#sk"]
        request: dict[str, Any] = {
            "TableName": self.table, "ConsistentRead": True,
            "KeyConditionExpression": "#pk = :pk" + (" AND #sk > :after" if after is not None else ""),
            "ExpressionAttributeNames": names_, "ExpressionAttributeValues": values}
        entries: list[Entry] = []
        # A Query page also stops at 1 MB: with large items (long `older` histories, up to
        # DynamoDB's 400 KB each) it holds fewer than `limit` although more follow, and the
        # walk takes a short page for the partition's end. Read on until `limit` or the end.
        while len(entries) < limit:
            response = self.ddb.query(**request, Limit=limit - len(entries))
            entries += [item_to_entry(self._from_wire(raw)) for raw in response["Items"]]
            if "LastEvaluatedKey" not in response:
                break
            request["ExclusiveStartKey"] = response["LastEvaluatedKey"]
        return entries
