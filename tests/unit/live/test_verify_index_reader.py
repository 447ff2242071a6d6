"""verify's reader of the DynamoDB index (in-process moto): a directory's children in pages of
at most QUERY_PAGE_ITEMS, each item carrying only the attributes verify compares."""

from __future__ import annotations

from typing import Any

import boto3
from moto import mock_aws

from hdfs_events import names
from hdfs_events.index_item import IndexItem, to_wire
from onprem_agent.verify import QUERY_PAGE_ITEMS, DynamoIndexReader, IndexedEntry
from tests.kit.ingest_aws import TABLE, create_resources

C = "prod"


def _put(ddb: Any, path: str, attrs: dict[str, Any], txid: int, *, deleted: bool = False) -> None:
    item = IndexItem(C, path, attrs, txid, 0, deleted=deleted).to_item(now_s=1_700_000_000)
    ddb.put_item(TableName=TABLE, Item=to_wire(item))


@mock_aws
def test_a_large_directory_is_read_in_bounded_pages_of_the_compared_attributes():
    ddb = boto3.client("dynamodb", region_name="eu-west-1")
    create_resources(boto3.client("s3", region_name="eu-west-1"), ddb,
                     boto3.client("sqs", region_name="eu-west-1"))
    files = 2 * QUERY_PAGE_ITEMS + 500
    for i in range(files):
        _put(ddb, f"/land/f{i:05d}", {"type": "FILE", "size": i, "mtime": 1000 + i, "atime": 7,
                                      "owner": "etl", "group": "hadoop", "perms": "644",
                                      "replication": 3}, txid=10 + i)
    _put(ddb, "/land/sub", {"type": "DIRECTORY", "owner": "etl", "group": "hadoop"}, txid=5)
    _put(ddb, "/land/gone", {"type": "FILE", "size": 1}, txid=9, deleted=True)
    pages: list[list[dict[str, Any]]] = []
    ddb.meta.events.register("after-call.dynamodb.Query",
                             lambda parsed, **_: pages.append(parsed["Items"]))

    entries = list(DynamoIndexReader(TABLE, ddb).children(C, "/land"))

    assert len(entries) == files + 1  # the delete marker is not a live entry
    assert [e.path for e in entries] == sorted(e.path for e in entries)
    assert entries[0] == IndexedEntry("/land/f00000", "FILE", 0, 1000, 10)
    assert IndexedEntry("/land/sub", "DIRECTORY", None, None, 5) in entries
    assert [len(p) for p in pages] == [QUERY_PAGE_ITEMS, QUERY_PAGE_ITEMS, 502]
    assert {key for page in pages for item in page for key in item} == {
        names.INDEX_SK, "type", "size", "mtime", "last_txid", "deleted"}
