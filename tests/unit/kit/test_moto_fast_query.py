"""tests/kit/moto_fast_query.py changes how fast moto answers a base-table Query, never what it
answers: the same Queries against moto's own Table.query and against the extension must return
the same responses, page by page."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.dynamodb.models.table import Table

from tests.kit import moto_fast_query
from tests.kit.dynamodb_pages import all_pages

RANGED, HASH_ONLY = "ranged", "hash-only"


def _create(ddb: Any) -> None:
    ddb.create_table(
        TableName=RANGED, BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                   {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                              {"AttributeName": "sk", "AttributeType": "S"},
                              {"AttributeName": "owner", "AttributeType": "S"}],
        GlobalSecondaryIndexes=[{"IndexName": "by-owner",
                                 "KeySchema": [{"AttributeName": "owner", "KeyType": "HASH"}],
                                 "Projection": {"ProjectionType": "ALL"}}])
    ddb.create_table(
        TableName=HASH_ONLY, BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}])
    # Written out of order, so a partition's order comes from the sort, not from insertion.
    for n in (7, 3, 11, 0, 5, 9, 1, 10, 2, 8, 4, 6):
        for dir_ in ("/a", "/a/b", "/z", "/m"):
            ddb.put_item(TableName=RANGED, Item={
                "pk": {"S": dir_}, "sk": {"S": f"part-{n:05d}"}, "size": {"N": str(n * 10)},
                "owner": {"S": ("etl", "hive")[n % 2]}})
        ddb.put_item(TableName=HASH_ONLY, Item={"pk": {"S": f"/k{n}"}, "n": {"N": str(n)}})
    # Items of ~300 KB: moto cuts a page at 1 MB before any Limit.
    for n in range(7):
        ddb.put_item(TableName=RANGED, Item={"pk": {"S": "/big"}, "sk": {"S": f"b{n}"},
                                             "blob": {"S": "x" * 300_000}})


def _pages(ddb: Any, **query: Any) -> list[dict[str, Any]]:
    return all_pages(ddb.query, **query)


def _key(pk: str, condition: str = "", **values: str) -> dict[str, Any]:
    names = {":p": {"S": pk}, **{f":{k}": {"S": v} for k, v in values.items()}}
    return {"KeyConditionExpression": "pk = :p" + condition,
            "ExpressionAttributeValues": names}


QUERIES: list[dict[str, Any]] = [
    {"TableName": RANGED, **_key("/a")},
    {"TableName": RANGED, **_key("/a/b", " AND sk > :x", x="part-00004")},
    {"TableName": RANGED, **_key("/z", " AND sk BETWEEN :x AND :y", x="part-00002",
                                 y="part-00009")},
    {"TableName": RANGED, **_key("/m", " AND begins_with(sk, :x)", x="part-0000")},
    {"TableName": RANGED, **_key("/a"), "Limit": 5},
    {"TableName": RANGED, **_key("/a", " AND sk >= :x", x="part-00003"), "Limit": 4},
    {"TableName": RANGED, **_key("/z"), "Limit": 5, "ScanIndexForward": False},
    {"TableName": RANGED, **_key("/z", " AND sk < :x", x="part-00010"), "Limit": 3,
     "ScanIndexForward": False},
    {"TableName": RANGED, "KeyConditionExpression": "pk = :p", "Limit": 4,
     "FilterExpression": "#s > :min", "ExpressionAttributeNames": {"#s": "size"},
     "ExpressionAttributeValues": {":p": {"S": "/a/b"}, ":min": {"N": "35"}}},
    {"TableName": RANGED, **_key("/m"), "ProjectionExpression": "sk, #s",
     "ExpressionAttributeNames": {"#s": "size"}, "Limit": 5},
    {"TableName": RANGED, **_key("/a"), "Select": "COUNT"},
    {"TableName": RANGED, **_key("/big")},
    {"TableName": RANGED, **_key("/big"), "ScanIndexForward": False},
    {"TableName": RANGED, **_key("/nothing-here")},
    {"TableName": RANGED, **_key("/a"), "ExclusiveStartKey": {
        "pk": {"S": "/a"}, "sk": {"S": "part-00006"}}},
    {"TableName": RANGED, "IndexName": "by-owner",
     "KeyConditionExpression": "#o = :o", "ExpressionAttributeNames": {"#o": "owner"},
     "ExpressionAttributeValues": {":o": {"S": "hive"}}, "Limit": 7},
    {"TableName": HASH_ONLY, **_key("/k3")},
    {"TableName": HASH_ONLY, **_key("/missing")},
]


@pytest.fixture
def ddb() -> Iterator[Any]:
    moto_fast_query.apply()
    with mock_aws():
        client = boto3.client("dynamodb", region_name="eu-west-1")
        _create(client)
        yield client


def test_every_query_answers_as_moto_itself_does(ddb: Any,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    fast = [_pages(ddb, **q) for q in QUERIES]
    with monkeypatch.context() as moto_own:
        moto_own.setattr(Table, "query", Table.query.__wrapped__)
        moto_own.setattr(Table, "all_items", Table.all_items.__wrapped__)
        own = [_pages(ddb, **q) for q in QUERIES]
    for query, mine, theirs in zip(QUERIES, fast, own, strict=True):
        assert mine == theirs, query
    # The cases are not vacuous: pages were cut, by Limit and by moto's 1 MB, and items found.
    assert len(own[4]) == 3 and len(own[11]) == 3 and own[10][0]["Count"] == 12
    assert [i["sk"]["S"] for i in own[6][0]["Items"]] == [
        f"part-{n:05d}" for n in (11, 10, 9, 8, 7)]


def test_a_query_adds_no_partition_and_scan_still_sees_every_item(ddb: Any) -> None:
    def scan() -> list[dict[str, Any]]:
        return ddb.get_paginator("scan").paginate(TableName=RANGED).build_full_result()["Items"]

    before = scan()
    assert ddb.query(TableName=RANGED, **_key("/nothing-here"))["Items"] == []
    assert scan() == before and len(before) == 4 * 12 + 7
    assert ddb.describe_table(TableName=RANGED)["Table"]["ItemCount"] == 4 * 12 + 7


def test_applying_twice_patches_once() -> None:
    moto_fast_query.apply()
    query = Table.query
    moto_fast_query.apply()
    assert Table.query is query and Table.query.__wrapped__.__module__ == Table.__module__
