"""The sync's state in DynamoDB (the sync state table of the storage stack), one partition per
cluster, items prefixed by the destination so several syncs of one cluster never meet:

- `checkpoint`: the replicated txid T (every window up to T has run), running totals, and
  `listed_through`, the NameNode's txid when the last listing ended (renames up to it relist
  their destination: onprem_agent.sync.plan); written with a condition so it never moves
  backwards.
- `window`: the running window (first/last txid, steps, started) while it runs: pending and
  running actions as `sync status` shows them; removed when the window ends.
- `pending|<path>`: a step that found no closed file at its HDFS path, carried into the next window
  (onprem_agent.sync.plan); kept here so a restart carries it too.
- `parked|<path>`: a path given up on, with the reason; a later successful step removes it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from hdfs_events.names import SYNC_PK, SYNC_SK

PENDING_COPY, PENDING_RELIST = "copy", "relist"


@dataclass(frozen=True, slots=True)
class Parked:
    path: str
    reason: str
    txid: int
    attempts: int
    parked_at: str


@dataclass(frozen=True, slots=True)
class SyncStatus:
    txid: int | None
    listed_through: int | None
    saved_at: str | None
    totals: dict[str, int]
    window: dict[str, Any] | None
    pending: dict[str, str]
    parked: list[Parked]


class SyncState:
    def __init__(self, table: str, cluster: str, destination: str, client: Any = None) -> None:
        if client is None:
            import boto3

            client = boto3.client("dynamodb")
        self.table, self.cluster, self.destination = table, cluster, destination
        self._ddb = client

    def _key(self, item: str) -> dict[str, Any]:
        return {SYNC_PK: {"S": self.cluster}, SYNC_SK: {"S": f"{self.destination}|{item}"}}

    # -- checkpoint --------------------------------------------------------------------------------
    def load_txid(self) -> int | None:
        item = self._ddb.get_item(TableName=self.table, Key=self._key("checkpoint"),
                                  ConsistentRead=True).get("Item")
        return int(item["txid"]["N"]) if item and "txid" in item else None

    def save_txid(self, txid: int, totals: dict[str, int], *,
                  listed_through: int | None = None) -> None:
        names = {f"#t{i}": k for i, k in enumerate(totals)}
        values = {f":t{i}": {"N": str(v)} for i, v in enumerate(totals.values())}
        sets = [f"#t{i} = if_not_exists(#t{i}, :zero) + :t{i}" for i in range(len(totals))]
        if listed_through is not None:
            sets.append("listed_through = :listed")
            values[":listed"] = {"N": str(listed_through)}
        try:
            self._ddb.update_item(
                TableName=self.table, Key=self._key("checkpoint"),
                UpdateExpression=", ".join(["SET txid = :txid, saved_at = :now", *sets]),
                ConditionExpression="attribute_not_exists(txid) OR txid < :txid",
                ExpressionAttributeNames=names or None,
                ExpressionAttributeValues={":txid": {"N": str(txid)}, ":now": {"S": _now()},
                                           ":zero": {"N": "0"}, **values})
        except self._ddb.exceptions.ConditionalCheckFailedException:
            return  # already at or past txid (a replayed window)

    # -- the running window --------------------------------------------------------------------------
    def window_started(self, first_txid: int | None, last_txid: int, steps: int) -> None:
        self._ddb.put_item(TableName=self.table, Item={
            **self._key("window"), "first_txid": {"N": str(first_txid or last_txid)},
            "last_txid": {"N": str(last_txid)}, "steps": {"N": str(steps)},
            "started_at": {"S": _now()},
            "started_ms": {"N": str(int(time.time() * 1000))}})

    def window_done(self) -> None:
        self._ddb.delete_item(TableName=self.table, Key=self._key("window"))

    # -- pending and parked paths ----------------------------------------------------------------------
    def set_pending(self, paths: dict[str, str], previous: dict[str, str]) -> None:
        """Replaces the pending set `previous` by `paths` (path -> PENDING_COPY |
        PENDING_RELIST), writing only what changed: a file open for hours stays pending."""
        for path in set(previous) - set(paths):
            self._ddb.delete_item(TableName=self.table, Key=self._key(f"pending|{path}"))
        for path, kind in paths.items():
            if previous.get(path) == kind:
                continue
            self._ddb.put_item(TableName=self.table,
                               Item={**self._key(f"pending|{path}"), "kind": {"S": kind}})

    def park(self, path: str, reason: str, txid: int, attempts: int) -> None:
        self._ddb.put_item(TableName=self.table, Item={
            **self._key(f"parked|{path}"), "reason": {"S": reason[:2000]},
            "txid": {"N": str(txid)}, "attempts": {"N": str(attempts)},
            "parked_at": {"S": _now()}})

    def unpark(self, path: str) -> None:
        self._ddb.delete_item(TableName=self.table, Key=self._key(f"parked|{path}"))

    def status(self) -> SyncStatus:
        items = []
        kwargs: dict[str, Any] = {
            "TableName": self.table, "ConsistentRead": True,
            "KeyConditionExpression": "#pk = :pk AND begins_with(#sk, :d)",
            "ExpressionAttributeNames": {"#pk": SYNC_PK, "#sk": SYNC_SK},
            "ExpressionAttributeValues": {":pk": {"S": self.cluster},
                                          ":d": {"S": f"{self.destination}|"}}}
        while True:
            page = self._ddb.query(**kwargs)
            items.extend(page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        checkpoint, window, pending, parked = None, None, {}, []
        for item in items:
            kind, _, path = item[SYNC_SK]["S"][len(self.destination) + 1:].partition("|")
            if kind == "checkpoint":
                checkpoint = item
            elif kind == "window":
                window = {k: _plain(v) for k, v in item.items() if k not in (SYNC_PK, SYNC_SK)}
            elif kind == "pending":
                pending[path] = item["kind"]["S"]
            elif kind == "parked":
                parked.append(Parked(path, item["reason"]["S"], int(item["txid"]["N"]),
                                     int(item["attempts"]["N"]), item["parked_at"]["S"]))
        totals = {k: int(v["N"]) for k, v in (checkpoint or {}).items()
                  if "N" in v and k not in ("txid", "listed_through")}
        listed = (checkpoint or {}).get("listed_through")
        return SyncStatus(
            txid=int(checkpoint["txid"]["N"]) if checkpoint else None,
            listed_through=int(listed["N"]) if listed else None,
            saved_at=checkpoint["saved_at"]["S"] if checkpoint else None,
            totals=totals, window=window, pending=pending, parked=parked)


def _plain(value: dict[str, Any]) -> Any:
    if "N" in value:
        return int(value["N"])
    return value.get("S")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")
