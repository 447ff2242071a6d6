"""A DynamoDB double for benches of the consumer at DynamoDB's latency (named as one): tables
held in memory, answering DynamoDB's JSON 1.0 requests (the operation and its parameters as
the wire carries them). tests/kit/dynamodb_server.py serves it over HTTP to any number of
processes, so the product's own clients, parameter checks, serialization and reply parsing all
run; only the service is replaced. Requests are answered one at a time under one lock (the
server waits its latency outside it, so calls in flight overlap as they do on DynamoDB).

Why not moto: its dispatch, expression parsing and reply serialization cost 1-10 ms of CPU a
call (a 100-key BatchGetItem ~10 ms), and calls in parallel must hold a lock in moto
in-process (moto_dynamodb_lock), so at hundreds of calls a second the figure becomes moto's.

It answers exactly the requests lambdas/ingest and `hdfs-events-agent verify` make, and refuses
anything else loudly (NotImplementedError): GetItem, PutItem, UpdateItem (SET and REMOVE,
ReturnValues ALL_NEW or ALL_OLD), Query (`#pk = :pk` with an optional sort key comparison, BETWEEN or
begins_with; Limit, ExclusiveStartKey, ProjectionExpression), BatchGetItem, BatchWriteItem
(puts and deletes); conditions are ORs of attribute_exists / attribute_not_exists /
comparisons. Sort keys are strings (the index table's), ordered by code point as DynamoDB
orders UTF-8 bytes. Not modelled: throttling, item size and key length limits, TTL.
"""

from __future__ import annotations

import bisect
import re
import threading
from decimal import Decimal
from typing import Any

from hdfs_events import names

Item = dict[str, dict[str, Any]]
_COMPARE = {"=": lambda a, b: a == b, "<": lambda a, b: a < b, "<=": lambda a, b: a <= b,
            ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}


class ConditionFailed(Exception):
    pass


def _value(wire: dict[str, Any]) -> Any:
    """A wire value as something that compares as DynamoDB compares it."""
    (kind, raw), = wire.items()
    return Decimal(raw) if kind == "N" else raw


class _Partition:
    def __init__(self) -> None:
        self.keys: list[str] = []
        self.items: dict[str, Item] = {}

    def put(self, sk: str, item: Item) -> None:
        if sk not in self.items:
            bisect.insort(self.keys, sk)
        self.items[sk] = item

    def delete(self, sk: str) -> None:
        if self.items.pop(sk, None) is not None:
            del self.keys[bisect.bisect_left(self.keys, sk)]


class MemoryDynamoDB:
    def __init__(self) -> None:
        self.tables: dict[str, dict[str, _Partition]] = {}
        self._lock = threading.Lock()

    def answer(self, operation: str, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """The HTTP status and JSON body DynamoDB replies to `operation` with `params`."""
        handler = getattr(self, f"_op_{operation}", None)
        if handler is None:
            raise NotImplementedError(f"MemoryDynamoDB does not answer {operation}")
        with self._lock:
            try:
                return 200, handler(params)
            except ConditionFailed:
                return 400, {
                    "__type": "com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException",
                    "message": "The conditional request failed"}

    # --- operations -------------------------------------------------------------------------

    def _partition(self, table: str, pk: str) -> _Partition:
        return self.tables.setdefault(table, {}).setdefault(pk, _Partition())

    def _get(self, table: str, key: Item) -> Item | None:
        part = self.tables.get(table, {}).get(key[names.INDEX_PK]["S"])
        return None if part is None else part.items.get(key[names.INDEX_SK]["S"])

    def _put(self, table: str, item: Item) -> None:
        self._partition(table, item[names.INDEX_PK]["S"]).put(item[names.INDEX_SK]["S"], item)

    def _op_GetItem(self, p: dict[str, Any]) -> dict[str, Any]:
        item = self._get(p["TableName"], p["Key"])
        return {} if item is None else {"Item": _project(item, p)}

    def _op_PutItem(self, p: dict[str, Any]) -> dict[str, Any]:
        item = p["Item"]
        _check(p, self._get(p["TableName"], item))
        self._put(p["TableName"], item)
        return {}

    def _op_UpdateItem(self, p: dict[str, Any]) -> dict[str, Any]:
        key = p["Key"]
        old = self._get(p["TableName"], key)
        _check(p, old)
        item = dict(old or key)
        text = _named(p["UpdateExpression"], p)
        values = p.get("ExpressionAttributeValues", {})
        for clause in re.split(r"\s*(?=\b(?:SET|REMOVE)\b)", text.strip()):
            if not clause:
                continue
            verb, _, rest = clause.partition(" ")
            for part in (x.strip() for x in rest.split(",")):
                if verb == "SET":
                    name, _, value = (x.strip() for x in part.partition("="))
                    item[name] = values[value]
                elif verb == "REMOVE":
                    item.pop(part, None)
                else:
                    raise NotImplementedError(f"update clause {clause!r}")
        self._put(p["TableName"], item)
        returned = {"ALL_NEW": item, "ALL_OLD": old}.get(p.get("ReturnValues", "NONE"))
        return {"Attributes": returned} if returned else {}

    def _op_Query(self, p: dict[str, Any]) -> dict[str, Any]:
        text = _named(p["KeyConditionExpression"], p)
        values = p["ExpressionAttributeValues"]
        pk_part, _, sk_part = text.partition(" AND ")
        name, op, ref = pk_part.split()
        if name != names.INDEX_PK or op != "=":
            raise NotImplementedError(f"key condition {text!r}")
        part = self.tables.get(p["TableName"], {}).get(values[ref]["S"])
        keys = [] if part is None else part.keys
        lo, hi = 0, len(keys)
        if sk_part:
            lo, hi = _sort_key_range(keys, sk_part.strip(), values)
        start = p.get("ExclusiveStartKey")
        if start is not None:
            lo = max(lo, bisect.bisect_right(keys, start[names.INDEX_SK]["S"]))
        if not p.get("ScanIndexForward", True):
            raise NotImplementedError("Query backwards")
        limit = p.get("Limit", hi - lo)
        chosen = keys[lo:min(hi, lo + limit)]
        assert part is not None or not chosen
        out: dict[str, Any] = {"Items": [_project(part.items[k], p) for k in chosen]
                               if part else []}
        out["Count"] = out["ScannedCount"] = len(chosen)
        if chosen and lo + limit < hi:
            last = part.items[chosen[-1]] if part else {}
            out["LastEvaluatedKey"] = {k: last[k] for k in (names.INDEX_PK, names.INDEX_SK)}
        return out

    def _op_BatchGetItem(self, p: dict[str, Any]) -> dict[str, Any]:
        responses: dict[str, list[Item]] = {}
        for table, request in p["RequestItems"].items():
            got = [self._get(table, key) for key in request["Keys"]]
            responses[table] = [_project(i, request) for i in got if i is not None]
        return {"Responses": responses, "UnprocessedKeys": {}}

    def _op_BatchWriteItem(self, p: dict[str, Any]) -> dict[str, Any]:
        for table, requests in p["RequestItems"].items():
            for r in requests:
                if "PutRequest" in r:
                    self._put(table, r["PutRequest"]["Item"])
                else:
                    key = r["DeleteRequest"]["Key"]
                    part = self.tables.get(table, {}).get(key[names.INDEX_PK]["S"])
                    if part is not None:
                        part.delete(key[names.INDEX_SK]["S"])
        return {"UnprocessedItems": {}}


# --- expressions ------------------------------------------------------------------------------

def _named(text: str, p: dict[str, Any]) -> str:
    """`#name` placeholders replaced by the attribute names they stand for."""
    aliases = p.get("ExpressionAttributeNames", {})
    return re.sub(r"#\w+", lambda m: aliases[m.group(0)], text)


def _check(p: dict[str, Any], item: Item | None) -> None:
    """ConditionExpression (an OR of simple terms) against the item as stored (None: none)."""
    if "ConditionExpression" not in p:
        return
    values = p.get("ExpressionAttributeValues", {})
    for term in _named(p["ConditionExpression"], p).split(" OR "):
        term = term.strip()
        if m := re.fullmatch(r"attribute_(not_)?exists\((\w+)\)", term):
            if (item is not None and m.group(2) in item) != bool(m.group(1)):
                return
        elif m := re.fullmatch(r"(\w+) (=|<|<=|>|>=) (:\w+)", term):
            if (item is not None and m.group(1) in item
                    and _COMPARE[m.group(2)](_value(item[m.group(1)]),
                                             _value(values[m.group(3)]))):
                return
        else:
            raise NotImplementedError(f"condition term {term!r}")
    raise ConditionFailed


def _sort_key_range(keys: list[str], text: str, values: dict[str, Any]) -> tuple[int, int]:
    """The slice of `keys` (sorted) a sort key condition selects."""
    if m := re.fullmatch(rf"{names.INDEX_SK} BETWEEN (:\w+) AND (:\w+)", text):
        return (bisect.bisect_left(keys, values[m.group(1)]["S"]),
                bisect.bisect_right(keys, values[m.group(2)]["S"]))
    if m := re.fullmatch(rf"begins_with\({names.INDEX_SK}, (:\w+)\)", text):
        prefix = values[m.group(1)]["S"]
        lo = bisect.bisect_left(keys, prefix)
        hi = lo
        while hi < len(keys) and keys[hi].startswith(prefix):
            hi += 1
        return lo, hi
    if m := re.fullmatch(rf"{names.INDEX_SK} (=|<|<=|>|>=) (:\w+)", text):
        v, op = values[m.group(2)]["S"], m.group(1)
        left, right = bisect.bisect_left(keys, v), bisect.bisect_right(keys, v)
        return {"=": (left, right), "<": (0, left), "<=": (0, right), ">": (right, len(keys)),
                ">=": (left, len(keys))}[op]
    raise NotImplementedError(f"sort key condition {text!r}")


def _project(item: Item, p: dict[str, Any]) -> Item:
    if "ProjectionExpression" not in p:
        return item
    wanted = {x.strip() for x in _named(p["ProjectionExpression"], p).split(",")}
    return {k: v for k, v in item.items() if k in wanted}
