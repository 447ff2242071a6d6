"""tests/kit/moto_fast_scan.py changes how fast moto answers a base-table Scan, never what it
answers: the same Scans against moto's own Table.scan and against the extension must return the
same responses, page by page; and a page touches the items it returns, not the table."""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.dynamodb.models.dynamo_type import Item
from moto.dynamodb.models.table import Table

from tests.kit import moto_fast_scan
from tests.kit.dynamodb_pages import all_pages

RANGED, NUMBERED, EMPTY = "ranged", "numbered", "empty"
# Written out of order, so the table's order comes from moto's sort, not from insertion.
PARTS = (7, 3, 11, 0, 5, 9, 1, 10, 2, 8, 4, 6)
DIRS = ("/a", "/a/b", "/z", "/m")
# Out of order, and ordered differently as numbers and as strings (9 < 10 < 100).
NUMBERS = [str((k * 37) % 101) for k in range(41)] + ["2.5"]


def _ranged(ddb: Any, name: str, *, big: bool) -> None:
    """A hash+range table with a GSI and an LSI: 4 directories of 12 parts, 16 of 2 (many
    partitions, so every segment of 7 gets some), and with `big` 7 items of ~300 KB, which moto's
    1 MB page cuts before any Limit."""
    ddb.create_table(
        TableName=name, BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                   {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                              {"AttributeName": "sk", "AttributeType": "S"},
                              {"AttributeName": "owner", "AttributeType": "S"},
                              {"AttributeName": "size", "AttributeType": "N"}],
        GlobalSecondaryIndexes=[{"IndexName": "by-owner",
                                 "KeySchema": [{"AttributeName": "owner", "KeyType": "HASH"}],
                                 "Projection": {"ProjectionType": "ALL"}}],
        LocalSecondaryIndexes=[{"IndexName": "by-size",
                                "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"},
                                              {"AttributeName": "size", "KeyType": "RANGE"}],
                                "Projection": {"ProjectionType": "ALL"}}])
    for n in PARTS:
        for dir_ in DIRS:
            ddb.put_item(TableName=name, Item={
                "pk": {"S": dir_}, "sk": {"S": f"part-{n:05d}"}, "size": {"N": str(n * 10)},
                "owner": {"S": ("etl", "hive")[n % 2]}})
    for d in range(15, -1, -1):
        for sk in ("y", "x"):
            ddb.put_item(TableName=name, Item={"pk": {"S": f"/d{d:02d}"}, "sk": {"S": sk}})
    for n in range(7 if big else 0):
        ddb.put_item(TableName=name, Item={"pk": {"S": "/big"}, "sk": {"S": f"b{n}"},
                                           "blob": {"S": "x" * 300_000}})


def _numbered(ddb: Any, name: str, numbers: list[str]) -> None:
    """A hash-only table keyed by a number."""
    ddb.create_table(TableName=name, BillingMode="PAY_PER_REQUEST",
                     KeySchema=[{"AttributeName": "n", "KeyType": "HASH"}],
                     AttributeDefinitions=[{"AttributeName": "n", "AttributeType": "N"}])
    for n in numbers:
        ddb.put_item(TableName=name, Item={"n": {"N": n}, "label": {"S": f"item {n}"}})


def _pages(ddb: Any, between: Callable[[int], None] = lambda _: None,
           **scan: Any) -> list[dict[str, Any]]:
    return all_pages(ddb.scan, between, **scan)


def _keys(pages: list[dict[str, Any]]) -> list[str]:
    return [json.dumps({k: v for k, v in item.items() if k in ("pk", "sk", "n")},
                       sort_keys=True) for page in pages for item in page["Items"]]


def _segmented(table: str, **scan: Any) -> list[dict[str, Any]]:
    return [{"TableName": table, "Segment": s, "TotalSegments": total, **scan}
            for total in (1, 2, 4, 7) for s in range(total)]


SIZE_OVER = {"FilterExpression": "#s > :min", "ExpressionAttributeNames": {"#s": "size"},
             "ExpressionAttributeValues": {":min": {"N": "35"}}}
RANGED_ITEMS = 4 * 12 + 16 * 2 + 7  # in order: /a, /a/b, /big, /d00../d15, /m, /z
WHOLE = {"TableName": RANGED}
ONE_BY_ONE = {"TableName": RANGED, "Limit": 1}
EMPTY_SHARE = {"TableName": EMPTY, "Limit": 3, "Segment": 1, "TotalSegments": 2}
# Start keys as a caller may give them (an item's, between two items, past the end), with the
# items a Scan from them returns.
STARTS: list[tuple[dict[str, Any], int]] = [
    ({"TableName": RANGED, "Limit": 5,
      "ExclusiveStartKey": {"pk": {"S": "/a"}, "sk": {"S": "part-00006"}}}, RANGED_ITEMS - 7),
    ({"TableName": RANGED, "Limit": 5,
      "ExclusiveStartKey": {"pk": {"S": "/a"}, "sk": {"S": "part-00006x"}}}, RANGED_ITEMS - 7),
    ({"TableName": RANGED, "Limit": 5,
      "ExclusiveStartKey": {"pk": {"S": "/b"}, "sk": {"S": "a"}}}, RANGED_ITEMS - 24),
    ({"TableName": RANGED, "ExclusiveStartKey": {"pk": {"S": "~"}, "sk": {"S": "~"}}}, 0),
    ({"TableName": NUMBERED, "Limit": 4, "ExclusiveStartKey": {"n": {"N": "50"}}},
     sum(Decimal(n) > 50 for n in NUMBERS)),
    ({"TableName": NUMBERED, "Limit": 4, "ExclusiveStartKey": {"n": {"N": "49.5"}}},
     sum(Decimal(n) > Decimal("49.5") for n in NUMBERS)),
]
SEGMENTED = [*_segmented(RANGED), *_segmented(RANGED, Limit=4), *_segmented(NUMBERED, Limit=5)]
SCANS: list[dict[str, Any]] = [
    WHOLE,
    ONE_BY_ONE,
    {"TableName": RANGED, "Limit": 7},
    {"TableName": RANGED, "ConsistentRead": True, "Limit": 10},
    {"TableName": RANGED, **SIZE_OVER, "Limit": 9},
    {"TableName": RANGED, **SIZE_OVER, "ConsistentRead": True},
    {"TableName": RANGED, "ProjectionExpression": "pk, sk, #s",
     "ExpressionAttributeNames": {"#s": "size"}, "Limit": 8},
    {"TableName": RANGED, "Select": "COUNT", "Limit": 11},
    {"TableName": RANGED, "ScanFilter": {"owner": {"AttributeValueList": [{"S": "etl"}],
                                                   "ComparisonOperator": "EQ"}}, "Limit": 5},
    # The inventory job's request (glue_jobs/indexed_entries.py), on this table's names.
    *_segmented(RANGED, ConsistentRead=True, Limit=6,
                FilterExpression="begins_with(#pk, :dir) AND "
                                 "(attribute_not_exists(#owner) OR #owner = :owner)",
                ProjectionExpression="#pk, sk, #s",
                ExpressionAttributeNames={"#pk": "pk", "#owner": "owner", "#s": "size"},
                ExpressionAttributeValues={":dir": {"S": "/"}, ":owner": {"S": "hive"}}),
    *(scan for scan, _ in STARTS),
    {"TableName": RANGED, "Segment": 2, "TotalSegments": 4, "Limit": 3,
     "ExclusiveStartKey": {"pk": {"S": "/d07"}, "sk": {"S": "x"}}},
    *SEGMENTED,
    {"TableName": RANGED, "IndexName": "by-owner", "Limit": 7},
    {"TableName": RANGED, "IndexName": "by-owner", "Segment": 1, "TotalSegments": 2},
    {"TableName": RANGED, "IndexName": "by-size", "Limit": 7, "ConsistentRead": True},
    {"TableName": NUMBERED},
    {"TableName": NUMBERED, "Limit": 6},
    {"TableName": NUMBERED, "FilterExpression": "n < :n",
     "ExpressionAttributeValues": {":n": {"N": "30"}}, "Limit": 10},
    {"TableName": EMPTY},
    EMPTY_SHARE,
]


@pytest.fixture
def ddb() -> Iterator[Any]:
    moto_fast_scan.apply()
    with mock_aws():
        client = boto3.client("dynamodb", region_name="eu-west-1")
        _ranged(client, RANGED, big=True)
        _numbered(client, NUMBERED, NUMBERS)
        client.create_table(
            TableName=EMPTY, BillingMode="PAY_PER_REQUEST",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                       {"AttributeName": "sk", "KeyType": "RANGE"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                                  {"AttributeName": "sk", "AttributeType": "S"}])
        yield client


def _moto_own(monkeypatch: pytest.MonkeyPatch) -> None:
    # The extension's all_items serves only a Scan it runs itself; put_item and delete_item
    # only note that a write happened.
    monkeypatch.setattr(Table, "scan", Table.scan.__wrapped__)


def test_every_scan_answers_as_moto_itself_does(ddb: Any,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    fast = [_pages(ddb, **s) for s in SCANS]
    with monkeypatch.context() as moto_own:
        _moto_own(moto_own)
        own = [_pages(ddb, **s) for s in SCANS]
    for scan, mine, theirs in zip(SCANS, fast, own, strict=True):
        assert mine == theirs, scan

    # The cases are not vacuous: pages were cut by moto's 1 MB alone and by Limit, start keys
    # led where they should, segments were paged, the indexes and the empty table answered.
    def pages_of(scan: dict[str, Any]) -> list[dict[str, Any]]:
        return own[SCANS.index(scan)]
    assert len(pages_of(WHOLE)) == 3 and len(_keys(pages_of(WHOLE))) == RANGED_ITEMS
    assert len(pages_of(ONE_BY_ONE)) == RANGED_ITEMS
    assert [len(_keys(pages_of(scan))) for scan, _ in STARTS] == [n for _, n in STARTS]
    assert sum(len(pages_of(scan)) > 1 for scan in SEGMENTED) > len(SEGMENTED) // 2
    assert all(pages_of(scan)[0]["Count"] for scan in SCANS if "IndexName" in scan)
    assert pages_of(EMPTY_SHARE) == [{"Items": [], "Count": 0, "ScannedCount": 0}]


def test_segments_are_disjoint_and_cover_the_table(ddb: Any) -> None:
    for table in (RANGED, NUMBERED):
        whole = _keys(_pages(ddb, TableName=table))
        for total in (1, 2, 4, 7):
            shares = [_keys(_pages(ddb, TableName=table, Segment=s, TotalSegments=total,
                                   Limit=4)) for s in range(total)]
            together = [key for share in shares for key in share]
            assert sorted(together) == sorted(whole), (table, total)
            assert len(set(together)) == len(together), (table, total)
            assert sum(bool(share) for share in shares) > total // 2, (table, total)


@pytest.mark.parametrize("segment", [{}, {"Segment": 0, "TotalSegments": 2}])
def test_writes_between_pages_are_seen_as_moto_sees_them(
        ddb: Any, monkeypatch: pytest.MonkeyPatch, segment: dict[str, int]) -> None:
    def scan_while_writing(table: str) -> list[dict[str, Any]]:
        _ranged(ddb, table, big=False)

        def key(pk: str, sk: str) -> dict[str, Any]:
            return {"pk": {"S": pk}, "sk": {"S": sk}}

        writes: list[Callable[[], object]] = [
            # Ahead of the scan: a new item, a removed one, a replaced one, one updated in place.
            lambda: ddb.put_item(TableName=table, Item={**key("/m", "part-00003x"),
                                                        "size": {"N": "1"}}),
            lambda: ddb.delete_item(TableName=table, Key=key("/z", "part-00005")),
            lambda: ddb.put_item(TableName=table, Item={**key("/z", "part-00007"),
                                                        "size": {"N": "999"}}),
            lambda: ddb.update_item(TableName=table, Key=key("/z", "part-00009"),
                                    UpdateExpression="SET #s = :s",
                                    ExpressionAttributeNames={"#s": "size"},
                                    ExpressionAttributeValues={":s": {"N": "-1"}}),
            # Behind it: a new partition and a removed item.
            lambda: ddb.put_item(TableName=table, Item=key("/0", "x")),
            lambda: ddb.delete_item(TableName=table, Key=key("/a", "part-00000")),
        ]

        def between(page: int) -> None:
            if page < len(writes):
                writes[page]()
        return _pages(ddb, between, TableName=table, Limit=5, **segment)

    fast = scan_while_writing("written-fast")
    with monkeypatch.context() as moto_own:
        _moto_own(moto_own)
        own = scan_while_writing("written-own")
    assert fast == own
    assert len(own) > 6  # every write happened mid-scan


def test_a_page_touches_the_items_it_returns_not_the_table(
        ddb: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Counted, not timed. moto's loop asks every item it walks for its segment
    (`Item.is_within_segment`, even in a Scan without segments) and compares every item of the
    segment before the start key with it (`Table._item_comes_before_dct`); moto walks from the
    table's first item to its page's end on every page (after sorting the whole table). With
    the extension a page walks its own items and the one that ends it, after a bisection for
    the start key; a segment's first page also picks the segment's share, once."""
    items, limit = 1000, 25
    _numbered(ddb, "counted", [str(n) for n in range(items)])
    touched: Counter[str] = Counter()

    def counting(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def counted(*args: Any, **kwargs: Any) -> Any:
            touched[name] += 1
            return method(*args, **kwargs)
        return counted

    monkeypatch.setattr(Item, "is_within_segment", counting("walked", Item.is_within_segment))
    monkeypatch.setattr(Table, "_item_comes_before_dct",
                        counting("compared", Table._item_comes_before_dct))

    def per_page(scan: dict[str, Any]) -> tuple[list[dict[str, Any]], list[Counter[str]]]:
        counts: list[Counter[str]] = []

        def between(_: int) -> None:
            counts.append(touched.copy())
            touched.clear()
        touched.clear()
        pages = _pages(ddb, between, TableName="counted", Limit=limit, **scan)
        between(len(pages) - 1)
        return pages, counts

    scans = {"whole": {}, "share": {"Segment": 1, "TotalSegments": 4}}
    fast = {name: per_page(scan) for name, scan in scans.items()}
    with monkeypatch.context() as moto_own:
        _moto_own(moto_own)
        own = {name: per_page(scan) for name, scan in scans.items()}

    bisection = math.ceil(math.log2(items + 1))
    for name in scans:
        pages, counts = fast[name]
        returned = len(_keys(pages))
        assert pages == own[name][0] and len(pages) == math.ceil(returned / limit) > 5
        assert all(c["walked"] <= limit + 1 for c in counts[1:])
        assert all(c["compared"] <= bisection + 1 for c in counts)
        assert sum(c["walked"] for c in counts[1:]) <= returned + len(pages)
        # moto: the last page walks the whole table, and compares all of its segment but a page.
        assert own[name][1][-1]["walked"] == items
        assert own[name][1][-1]["compared"] >= returned - limit
    assert fast["whole"][1][0]["walked"] <= limit + 1
    assert fast["share"][1][0]["walked"] <= items + limit + 1


def test_applying_twice_patches_once() -> None:
    moto_fast_scan.apply()
    scan = Table.scan
    moto_fast_scan.apply()
    assert Table.scan is scan and Table.scan.__wrapped__.__module__ == Table.__module__
