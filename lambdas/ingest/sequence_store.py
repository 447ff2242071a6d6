"""The sequencer's state in the index table, beside the entries (sequencer.SequenceStore): the
items' keys and attributes are the contract's (hdfs_events/sequencer_items.py).

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
from hdfs_events.manifest import Manifest
from hdfs_events.sequencer_items import (
    LAKE_KEYS,
    LEASE_OWNER,
    LEASE_TAKEN_BY,
    LEASE_UNTIL_MS,
    MANIFEST,
    POSITION_INDEX,
    POSITION_TXID,
    POSITION_WALK,
    QUARANTINED,
    REASON,
    RECEIVED_MS,
    arrival_dedup_id,
    arrival_key,
    lost_manifest_key,
    lost_manifest_of,
    lost_manifests_between,
    manifest_key,
    manifests_ending_from,
    position_key,
    stored_manifest,
)
from lambdas.ingest.clients import client
from lambdas.ingest.index_table import batch_get
from lambdas.ingest.sequencer import (
    Arrival,
    Lease,
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
        item = {
            **manifest_key(manifest),
            MANIFEST: {"S": manifest.to_json()},
            RECEIVED_MS: {"N": str(received_ms)},
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
                                       ":from": manifests_ending_from(ending_from)})
        return [StoredManifest(*stored_manifest(i)) for i in response["Items"]]

    def put_lost_manifest(self, cluster: str, lost: LostManifest) -> None:
        self.ddb.put_item(TableName=self.table, Item={
            **lost_manifest_key(cluster, lost.received_ms, lost.message_id),
            REASON: {"S": lost.reason[:1000]},
            names.TTL_ATTRIBUTE: self._expires(),
        })

    def lost_manifests(self, cluster: str, *, received_from_ms: int,
                       received_to_ms: int) -> list[LostManifest]:
        if received_to_ms < received_from_ms:
            return []  # BETWEEN with its bounds crossed is a ValidationException
        low, high = lost_manifests_between(received_from_ms, received_to_ms)
        response = self.ddb.query(
            TableName=self.table, ConsistentRead=True,
            KeyConditionExpression="#pk = :pk AND #sk BETWEEN :from AND :to",
            ExpressionAttributeNames={"#pk": names.INDEX_PK, "#sk": names.INDEX_SK},
            ExpressionAttributeValues={
                ":pk": {"S": names.lost_manifests_partition(cluster)},
                ":from": low, ":to": high})
        return [LostManifest(*lost_manifest_of(item)) for item in response["Items"]]

    # --- arrivals --------------------------------------------------------------------------

    def put_arrival(self, cluster: str, arrival: Arrival) -> None:
        item: dict[str, Any] = {
            **arrival_key(cluster, arrival.dedup_id),
            LAKE_KEYS: {"L": [{"S": k} for k in arrival.lake_keys]},
            names.TTL_ATTRIBUTE: self._expires(),
        }
        if arrival.quarantined is not None:
            item[QUARANTINED] = {"S": arrival.quarantined[:1000]}
        self.ddb.put_item(TableName=self.table, Item=item)

    def arrivals(self, cluster: str, dedup_ids: Iterable[str]) -> dict[str, Arrival]:
        found: dict[str, Arrival] = {}
        for item in batch_get(self.ddb, self.table,
                              [arrival_key(cluster, i) for i in dedup_ids]):
            dedup_id = arrival_dedup_id(item)
            found[dedup_id] = Arrival(dedup_id, tuple(k["S"] for k in item[LAKE_KEYS]["L"]),
                                      item.get(QUARANTINED, {}).get("S"))
        return found

    # --- the position and its lease ---------------------------------------------------------

    def acquire(self, cluster: str, owner: str, *, now_ms: int,
                until_ms: int) -> Lease | None:
        try:
            # ALL_OLD: the position as it was (taking the lease does not move it) and who took
            # the lease before.
            response = self.ddb.update_item(
                TableName=self.table, Key=position_key(cluster),
                UpdateExpression=(f"SET {LEASE_OWNER} = :me, {LEASE_UNTIL_MS} = :until, "
                                  f"{LEASE_TAKEN_BY} = :me"),
                ConditionExpression=(f"attribute_not_exists({LEASE_OWNER}) OR {LEASE_OWNER} = :me "
                                     f"OR {LEASE_UNTIL_MS} < :now"),
                ExpressionAttributeValues={":me": {"S": owner}, ":until": {"N": str(until_ms)},
                                           ":now": {"N": str(now_ms)}},
                ReturnValues="ALL_OLD")
        except ClientError as exc:
            if _condition_failed(exc):
                return None
            raise
        item = response.get("Attributes", {})  # none: the cluster's first hold
        taken_after = item[LEASE_TAKEN_BY]["S"] if LEASE_TAKEN_BY in item else None
        if POSITION_TXID not in item:
            return Lease(Position(None), taken_after)
        walk = SubtreeOp.from_json(item[POSITION_WALK]["S"]) if POSITION_WALK in item else None
        return Lease(Position(int(item[POSITION_TXID]["N"]), int(item[POSITION_INDEX]["N"]), walk),
                     taken_after)

    def advance(self, cluster: str, owner: str, position: Position) -> None:
        assert position.txid is not None
        values = {":me": {"S": owner}, ":txid": {"N": str(position.txid)},
                  ":idx": {"N": str(position.event_index)}}
        update = f"SET {POSITION_TXID} = :txid, {POSITION_INDEX} = :idx"
        if position.walk is not None:
            update += f", {POSITION_WALK} = :walk"
            values[":walk"] = {"S": position.walk.to_json()}
        else:
            update += f" REMOVE {POSITION_WALK}"
        try:
            self.ddb.update_item(
                TableName=self.table, Key=position_key(cluster), UpdateExpression=update,
                ConditionExpression=f"{LEASE_OWNER} = :me", ExpressionAttributeValues=values)
        except ClientError as exc:
            if _condition_failed(exc):
                raise LeaseLost(f"cluster {cluster}: the index lease passed to another "
                                "invocation") from exc
            raise

    def release(self, cluster: str, owner: str) -> None:
        try:
            self.ddb.update_item(
                TableName=self.table, Key=position_key(cluster),
                UpdateExpression=f"REMOVE {LEASE_OWNER}, {LEASE_UNTIL_MS}",
                ConditionExpression=f"{LEASE_OWNER} = :me",
                ExpressionAttributeValues={":me": {"S": owner}})
        except ClientError as exc:
            if not _condition_failed(exc):
                raise


def _condition_failed(exc: ClientError) -> bool:
    return exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException"
