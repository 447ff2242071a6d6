"""verify's reader of the DynamoDB index (in-process moto): a directory's children in pages of
at most QUERY_PAGE_ITEMS, each item carrying only the attributes verify compares; a sharded
(hot) directory's children from all its partitions."""

from __future__ import annotations

from typing import Any

import boto3
from moto import mock_aws

from hdfs_events import names
from hdfs_events.dynamodb_json import to_wire
from hdfs_events.index_item import INDEX_SHARDS, IndexItem
from onprem_agent.verify import QUERY_PAGE_ITEMS, DynamoIndexReader, IndexedEntry
from tests.kit.ingest_aws import TABLE, create_resources

C = "prod"


def _item(path: str, attrs: dict[str, Any], txid: int, *, deleted: bool = False) -> dict[str, Any]:
    return to_wire(IndexItem(C, path, attrs, txid, 0, deleted=deleted).to_item(now_s=1_700_000_000))


def _put(ddb: Any, path: str, attrs: dict[str, Any], txid: int, *, deleted: bool = False) -> None:
    ddb.put_item(TableName=TABLE, Item=_item(path, attrs, txid, deleted=deleted))


def _put_all(ddb: Any, items: list[dict[str, Any]]) -> None:
    """In BatchWriteItem calls of 25 items (its limit): one PutItem each made the 2,500-file
    directory ~10 s of moto."""
    for at in range(0, len(items), 25):
        done = ddb.batch_write_item(RequestItems={
            TABLE: [{"PutRequest": {"Item": item}} for item in items[at:at + 25]]})
        assert not done["UnprocessedItems"]


@mock_aws
def test_a_large_directory_is_read_in_bounded_pages_of_the_compared_attributes():
    ddb = boto3.client("dynamodb", region_name="eu-west-1")
    create_resources(boto3.client("s3", region_name="eu-west-1"), ddb,
                     boto3.client("sqs", region_name="eu-west-1"))
    files = 2 * QUERY_PAGE_ITEMS + 500
    _put_all(ddb, [_item(f"/land/f{i:05d}", {"type": "FILE", "size": i, "mtime": 1000 + i,
                                             "atime": 7, "owner": "etl", "group": "hadoop",
                                             "perms": "644", "replication": 3}, txid=10 + i)
                   for i in range(files)])
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
        names.INDEX_SK, "type", "size", "mtime", "last_txid", "last_index", "deleted"}


@mock_aws
def test_a_sharded_directory_is_read_from_every_shard_merged_by_name_the_later_write_kept():
    ddb = boto3.client("dynamodb", region_name="eu-west-1")
    create_resources(boto3.client("s3", region_name="eu-west-1"), ddb,
                     boto3.client("sqs", region_name="eu-west-1"))
    hot = IndexItem(C, "/hot", {"type": "DIRECTORY"}, 2, 0, shards=INDEX_SHARDS)
    ddb.put_item(TableName=TABLE, Item=to_wire(hot.to_item(now_s=0)))
    files = [f"/hot/f{i:03d}" for i in range(200)]
    for i, path in enumerate(files):  # written once the directory was sharded
        item = IndexItem(C, path, {"type": "FILE", "size": i}, 10 + i, 0, in_shard=True)
        ddb.put_item(TableName=TABLE, Item=to_wire(item.to_item(now_s=0)))
    # Written before it was: one since deleted in its shard, one changed since in its shard.
    _put(ddb, "/hot/f000", {"type": "FILE", "size": 0}, txid=3)
    ddb.put_item(TableName=TABLE, Item=to_wire(IndexItem(
        C, "/hot/f001", {"type": "FILE"}, 500, 0, deleted=True, in_shard=True).to_item(now_s=0)))
    _put(ddb, "/hot/f002", {"type": "FILE", "size": 77}, txid=4)

    reader = DynamoIndexReader(TABLE, ddb)
    assert reader.entry(C, "/hot") == IndexedEntry("/hot", "DIRECTORY", None, None, 2,
                                                   shards=INDEX_SHARDS)
    entries = list(reader.children(C, "/hot"))

    assert [e.path for e in entries] == [p for p in files if p != "/hot/f001"]
    assert entries[1] == IndexedEntry("/hot/f002", "FILE", 2, None, 12)
    assert reader.entry(C, "/hot/f001") is None  # the later write is its delete marker
