"""The DynamoDB double, over HTTP as the bench's processes reach it, answers the consumer's
and `verify`'s requests as moto does: the same calls on both, the same replies (items,
conditions failed, pages)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from hdfs_events import names
from tests.kit.dynamodb_server import DynamoDBServer
from tests.kit.index_table import create_index_table

T = "index"
PK, SK = names.INDEX_PK, names.INDEX_SK


def item(pk: str, sk: str, **attrs: Any) -> dict[str, Any]:
    return {PK: {"S": pk}, SK: {"S": sk},
            **{k: {"N": str(v)} if isinstance(v, int) else {"S": v} for k, v in attrs.items()}}


def key(pk: str, sk: str) -> dict[str, Any]:
    return {PK: {"S": pk}, SK: {"S": sk}}


def lease(owner: str, now: int) -> dict[str, Any]:
    return dict(TableName=T, Key=key("c!position", "-"),
                UpdateExpression="SET lease_owner = :me, lease_until_ms = :until",
                ConditionExpression=("attribute_not_exists(lease_owner) OR lease_owner = :me "
                                     "OR lease_until_ms < :now"),
                ExpressionAttributeValues={":me": {"S": owner}, ":until": {"N": str(now + 10)},
                                           ":now": {"N": str(now)}}, ReturnValues="ALL_NEW")


def query(condition: str, **values: str) -> dict[str, Any]:
    return dict(TableName=T, ConsistentRead=True, KeyConditionExpression=condition,
                ExpressionAttributeNames={n: a for n, a in (("#pk", PK), ("#sk", SK))
                                          if n in condition},
                ExpressionAttributeValues={k: {"S": v} for k, v in values.items()})


STEPS: list[tuple[str, dict[str, Any]]] = [
    ("batch_write_item", {"RequestItems": {T: [
        {"PutRequest": {"Item": item("c#/d", f"f{i:02d}", size=i, owner="u")}}
        for i in range(20)]}}),
    ("batch_write_item", {"RequestItems": {T: [
        {"DeleteRequest": {"Key": key("c#/d", "f03")}},
        {"PutRequest": {"Item": item("c#/d", "é", size=1)}}]}}),
    ("put_item", {"TableName": T, "Item": item("c!manifests", "001.-.r.00000", m="a"),
                  "ConditionExpression": "attribute_not_exists(#pk)",
                  "ExpressionAttributeNames": {"#pk": PK}}),
    ("put_item", {"TableName": T, "Item": item("c!manifests", "001.-.r.00000", m="b"),
                  "ConditionExpression": "attribute_not_exists(#pk)",
                  "ExpressionAttributeNames": {"#pk": PK}}),
    ("put_item", {"TableName": T, "Item": item("c!manifests", "002.1.r.00000", m="c")}),
    ("update_item", lease("me", 100)),
    ("update_item", lease("other", 105)),
    ("update_item", lease("other", 111)),
    ("update_item", {"TableName": T, "Key": key("c!position", "-"),
                     "UpdateExpression": "SET txid = :txid, idx = :idx, walk = :walk",
                     "ConditionExpression": "lease_owner = :me",
                     "ExpressionAttributeValues": {":me": {"S": "other"}, ":txid": {"N": "7"},
                                                   ":idx": {"N": "2"}, ":walk": {"S": "{}"}}}),
    ("update_item", {"TableName": T, "Key": key("c!position", "-"),
                     "UpdateExpression": "SET txid = :txid, idx = :idx REMOVE walk",
                     "ConditionExpression": "lease_owner = :me",
                     "ExpressionAttributeValues": {":me": {"S": "me"}, ":txid": {"N": "8"},
                                                   ":idx": {"N": "0"}}}),
    ("update_item", {"TableName": T, "Key": key("c!position", "-"),
                     "UpdateExpression": "REMOVE lease_owner, lease_until_ms",
                     "ConditionExpression": "lease_owner = :me",
                     "ExpressionAttributeValues": {":me": {"S": "other"}},
                     "ReturnValues": "ALL_NEW"}),
    ("get_position", {}),
    ("query", query("#pk = :pk", **{":pk": "c#/d"})),
    ("query", {**query("#pk = :pk AND #sk > :after", **{":pk": "c#/d", ":after": "f05"}),
               "Limit": 4}),
    ("query", {**query("#pk = :pk AND #sk > :after", **{":pk": "c#/d", ":after": "f05"}),
               "Limit": 4, "ExclusiveStartKey": key("c#/d", "f09")}),
    ("query", {**query("#pk = :pk AND #sk > :after", **{":pk": "c#/d", ":after": "f15"}),
               "Limit": 4}),
    ("query", query("#pk = :pk AND #sk >= :from", **{":pk": "c!manifests", ":from": "002"})),
    ("query", query("#pk = :pk AND #sk BETWEEN :from AND :to",
                    **{":pk": "c#/d", ":from": "f07", ":to": "f10/"})),
    ("query", {**query("#pk = :pk", **{":pk": "c#/d"}), "ProjectionExpression": "#sk, #size",
               "ExpressionAttributeNames": {"#pk": PK, "#sk": SK, "#size": "size"}}),
    ("query", query("#pk = :pk", **{":pk": "c#/nothing"})),
    ("get_item", {"TableName": T, "Key": key("c#/d", "f01"), "ConsistentRead": True}),
    ("get_item", {"TableName": T, "Key": key("c#/d", "f03"), "ConsistentRead": True}),
    ("get_item", {"TableName": T, "Key": key("c#/d", "f02"), "ProjectionExpression": "#size",
                  "ExpressionAttributeNames": {"#size": "size"}}),
    ("batch_get_item", {"RequestItems": {T: {"Keys": [key("c#/d", "f01"), key("c#/d", "f03"),
                                                      key("c!manifests", "001.-.r.00000")],
                                             "ConsistentRead": True}}}),
]


def replies(client: Any) -> list[Any]:
    out = []
    for name, params in STEPS:
        if name == "get_position":
            name, params = "batch_get_item", {"RequestItems": {T: {
                "Keys": [key("c!position", "-")], "ConsistentRead": True}}}
        try:
            reply = getattr(client, name)(**params)
        except ClientError as exc:
            out.append(exc.response["Error"]["Code"])
            continue
        reply.pop("ResponseMetadata", None)
        reply.pop("ConsumedCapacity", None)
        reply.pop("ItemCollectionMetrics", None)
        if name == "batch_get_item":  # DynamoDB returns a batch's items in no set order
            reply["Responses"] = {t: sorted(items, key=lambda i: (i[PK]["S"], i[SK]["S"]))
                                  for t, items in reply["Responses"].items()}
        out.append(reply)
    return out


@pytest.fixture
def moto_replies(monkeypatch: pytest.MonkeyPatch) -> Callable[[], list[Any]]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")

    def run() -> list[Any]:
        with mock_aws():
            ddb = boto3.client("dynamodb")
            create_index_table(ddb, T)
            return replies(ddb)
    return run


@pytest.fixture
def double() -> Iterator[Any]:
    """A client of the double served on a free loopback port, as tests.kit.dynamodb_server's
    process serves it (here in a thread of the test's process)."""
    with DynamoDBServer(("127.0.0.1", 0)) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        yield boto3.client("dynamodb", region_name="eu-west-1", endpoint_url=server.endpoint)
        server.shutdown()
        thread.join()


def test_the_double_answers_the_consumers_requests_as_moto_does(double, moto_replies) -> None:
    ours = replies(double)
    expected = moto_replies()
    assert "ConditionalCheckFailedException" in ours
    assert ours == expected


def test_the_double_refuses_a_request_it_does_not_model(double) -> None:
    with pytest.raises(ClientError, match="does not answer Scan"):
        double.scan(TableName=T)
