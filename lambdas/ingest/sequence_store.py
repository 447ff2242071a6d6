"""The sequencer's state in the index table, beside the entries (sequencer.SequenceStore).

Keys never meet an entry's: an entry's partition is "<cluster>#<parent dir>" and a parent
directory starts with "/", these start with "<cluster>!".

- "<cluster>!manifests" / "<end>.<after>.<range id>.<part>": one item per manifest part; ends
  zero-padded so a Query reads ranges in txid order from a position onwards.
- "<cluster>!arrived#<dedup id>" / "-": one item per message (its own partition: arrivals come
  at the message rate, and one partition takes at most 1,000 writes/s).
- "<cluster>!lost-manifests" / "<received ms>.<message id>": manifests of the cluster's own
  principal that were quarantined (so the range they closed is passed, not waited for).
- "<cluster>!position" / "-": the position (txid, idx, and `walk`: an unfinished subtree walk
  as its JSON) and its lease.

Manifests and arrivals expire (TTL) after 30 days like delete markers: beyond SQS's 14-day
retention plus a DLQ redrive, so a message redriven late still finds its range.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from botocore.exceptions import ClientError

from hdfs_events import names
from hdfs_events.index_item import DELETE_MARKER_TTL_SECONDS
from hdfs_events.manifest import Manifest, decode_manifest
from lambdas.ingest.clients import client
from lambdas.ingest.index_table import batch_get
from lambdas.ingest.sequencer import (
    Arrival,
    LeaseLost,
    LostManifest,
    Position,
    StoredManifest,
)
from lambdas.ingest.subtree import SubtreeOp


class DynamoSequenceStore:
    def __init__(self, table: str, dynamodb: Any | None = None,
                 clock: Any = time.time) -> None:
        self.table, self.ddb, self.clock = table, dynamodb or client("dynamodb"), clock

    def _expires(self) -> dict[str, str]:
        return {"N": str(int(self.clock()) + DELETE_MARKER_TTL_SECONDS)}

    # --- manifests -------------------------------------------------------------------------

    def put_manifest(self, manifest: Manifest, *, received_ms: int) -> None:
        after = "-" if manifest.after is None else str(manifest.after)
        item = {
            names.INDEX_PK: {"S": names.manifests_partition(manifest.cluster)},
            names.INDEX_SK: {"S": f"{manifest.end:020d}.{after}.{manifest.range_id}."
                                  f"{manifest.part:05d}"},
            "manifest": {"S": manifest.to_json()},
            "received_ms": {"N": str(received_ms)},
            names.TTL_ATTRIBUTE: self._expires(),
        }
        # A redelivered manifest keeps its first arrival time (how long the range waited).
        try:
            self.ddb.put_item(TableName=self.table, Item=item,
                              ConditionExpression="attribute_not_exists(#pk)",
                              ExpressionAttributeNames={"#pk": names.INDEX_PK})
        except ClientError as exc:
            if not _condition_failed(exc):
                raise

    def manifests(self, cluster: str, *, ending_from: int, limit: int) -> list[StoredManifest]:
        response = self.ddb.query(
            TableName=self.table, ConsistentRead=True, Limit=limit,
            KeyConditionExpression="#pk = :pk AND #sk >= :from",
            ExpressionAttributeNames={"#pk": names.INDEX_PK, "#sk": names.INDEX_SK},
            ExpressionAttributeValues={":pk": {"S": names.manifests_partition(cluster)},
                                       ":from": {"S": f"{ending_from:020d}"}})
        return [StoredManifest(decode_manifest(i["manifest"]["S"]), int(i["received_ms"]["N"]))
                for i in response["Items"]]

    def put_lost_manifest(self, cluster: str, lost: LostManifest) -> None:
        self.ddb.put_item(TableName=self.table, Item={
            names.INDEX_PK: {"S": names.lost_manifests_partition(cluster)},
            names.INDEX_SK: {"S": f"{lost.received_ms:015d}.{lost.message_id}"},
            "reason": {"S": lost.reason[:1000]},
            names.TTL_ATTRIBUTE: self._expires(),
        })

    def lost_manifests(self, cluster: str, *, received_from_ms: int,
                       received_to_ms: int) -> list[LostManifest]:
        if received_to_ms < received_from_ms:
            return []  # BETWEEN with its bounds crossed is a ValidationException
        # Sort keys "<ms, 15 digits>.<message id>": "/" sorts after ".", so the upper bound
        # takes every id of its millisecond.
        response = self.ddb.query(
            TableName=self.table, ConsistentRead=True,
            KeyConditionExpression="#pk = :pk AND #sk BETWEEN :from AND :to",
            ExpressionAttributeNames={"#pk": names.INDEX_PK, "#sk": names.INDEX_SK},
            ExpressionAttributeValues={
                ":pk": {"S": names.lost_manifests_partition(cluster)},
                ":from": {"S": f"{received_from_ms:015d}"},
                ":to": {"S": f"{received_to_ms:015d}/"}})
        lost = []
        for item in response["Items"]:
            received, _, message_id = item[names.INDEX_SK]["S"].partition(".")
            lost.append(LostManifest(int(received), message_id, item["reason"]["S"]))
        return lost

    # --- arrivals --------------------------------------------------------------------------

    def put_arrival(self, cluster: str, arrival: Arrival) -> None:
        item: dict[str, Any] = {
            **_arrival_key(cluster, arrival.dedup_id),
            "lake_keys": {"L": [{"S": k} for k in arrival.lake_keys]},
            names.TTL_ATTRIBUTE: self._expires(),
        }
        if arrival.quarantined is not None:
            item["quarantined"] = {"S": arrival.quarantined[:1000]}
        self.ddb.put_item(TableName=self.table, Item=item)

    def arrivals(self, cluster: str, dedup_ids: Iterable[str]) -> dict[str, Arrival]:
        found: dict[str, Arrival] = {}
        for item in batch_get(self.ddb, self.table,
                              [_arrival_key(cluster, i) for i in dedup_ids]):
            dedup_id = item[names.INDEX_PK]["S"].split("#", 1)[1]
            found[dedup_id] = Arrival(dedup_id, tuple(k["S"] for k in item["lake_keys"]["L"]),
                                      item.get("quarantined", {}).get("S"))
        return found

    # --- the position and its lease ---------------------------------------------------------

    def acquire(self, cluster: str, owner: str, *, now_ms: int,
                until_ms: int) -> Position | None:
        try:
            response = self.ddb.update_item(
                TableName=self.table, Key=_position_key(cluster),
                UpdateExpression="SET lease_owner = :me, lease_until_ms = :until",
                ConditionExpression=("attribute_not_exists(lease_owner) OR lease_owner = :me "
                                     "OR lease_until_ms < :now"),
                ExpressionAttributeValues={":me": {"S": owner}, ":until": {"N": str(until_ms)},
                                           ":now": {"N": str(now_ms)}},
                ReturnValues="ALL_NEW")
        except ClientError as exc:
            if _condition_failed(exc):
                return None
            raise
        item = response["Attributes"]
        if "txid" not in item:
            return Position(None)
        walk = SubtreeOp.from_json(item["walk"]["S"]) if "walk" in item else None
        return Position(int(item["txid"]["N"]), int(item["idx"]["N"]), walk)

    def advance(self, cluster: str, owner: str, position: Position) -> None:
        assert position.txid is not None
        values = {":me": {"S": owner}, ":txid": {"N": str(position.txid)},
                  ":idx": {"N": str(position.event_index)}}
        update = "SET txid = :txid, idx = :idx"
        if position.walk is not None:
            update += ", walk = :walk"
            values[":walk"] = {"S": position.walk.to_json()}
        else:
            update += " REMOVE walk"
        try:
            self.ddb.update_item(
                TableName=self.table, Key=_position_key(cluster), UpdateExpression=update,
                ConditionExpression="lease_owner = :me", ExpressionAttributeValues=values)
        except ClientError as exc:
            if _condition_failed(exc):
                raise LeaseLost(f"cluster {cluster}: the index lease passed to another "
                                "invocation") from exc
            raise

    def release(self, cluster: str, owner: str) -> None:
        try:
            self.ddb.update_item(
                TableName=self.table, Key=_position_key(cluster),
                UpdateExpression="REMOVE lease_owner, lease_until_ms",
                ConditionExpression="lease_owner = :me",
                ExpressionAttributeValues={":me": {"S": owner}})
        except ClientError as exc:
            if not _condition_failed(exc):
                raise


def _arrival_key(cluster: str, dedup_id: str) -> dict[str, dict[str, str]]:
    return {names.INDEX_PK: {"S": names.arrival_partition(cluster, dedup_id)},
            names.INDEX_SK: {"S": names.SEQUENCER_SK}}


def _position_key(cluster: str) -> dict[str, dict[str, str]]:
    return {names.INDEX_PK: {"S": names.position_partition(cluster)},
            names.INDEX_SK: {"S": names.SEQUENCER_SK}}


def _condition_failed(exc: ClientError) -> bool:
    return exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException"
