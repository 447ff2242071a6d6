"""The image job's items as the JVM builds them (glue_jobs/index_item_json.py, from the contract's
attribute list hdfs_events/snapshot_wire.py) are the contract's own: for every kind of entry,
`dynamodb_json.to_wire(snapshot_item(...).to_item(now_s=0))`, attribute for attribute and type for type (a
number's digits, NULL where the consumer keeps no value, `shards` only on a hot directory); the
keys alone (a gap repair's) are those items' keys, and a DeleteRequest is DynamoDB's."""

from __future__ import annotations

import json
from typing import Any

import pytest

from glue_jobs.index_item_json import delete_request_texts, item_keys, put_request_texts
from hdfs_events import names
from hdfs_events.dynamodb_json import to_wire
from hdfs_events.snapshot_index import DIRECTORY, PathState, snapshot_item

CLUSTER, T = "prod-1", 9_007_199_254_740_993  # past a double's exact integers
SCHEMA = ("path string, type string, size bigint, owner string, `group` string, perms string, "
          "mtime bigint, atime bigint, replication int, symlink_target string, index bigint")
HOT = ("/data/hot", "/日本")
# Names a JSON writer must escape or keep as UTF-8, and names either side of the sign bit.
ODD = ["é", "日本", "😀", 'q"uote', "back\\slash", "new\nline", "tab\t", "a\x7f", "a\u0080",
       "a b", "ctl\x01"]


def rows() -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = [
        ("/data", "DIRECTORY", 0, "hdfs", "supergroup", "0755", 1, 0, 0, None),
        ("/data/f", "FILE", 2 ** 62, "etl", "hadoop", "0644", 1_700_000_000_123, 17, 3, None),
        ("/data/empty", "FILE", 0, "", "", "0600", 0, 0, 1, None),
        # A directory's and a symlink's size and replication are not kept, whatever the row says.
        ("/data/d", "DIRECTORY", 4096, "etl", "hadoop", "1777", 5, 6, 2, "/ignored"),
        ("/data/ln", "SYMLINK", 9, "u", "g", "0777", 4, 4, 1, "/data/f"),
        ("/data/ln-nowhere", "SYMLINK", 0, "u", "g", "0777", 4, 4, 0, None),
        ("/data/f-with-target", "FILE", 1, "u", "g", "0644", 4, 4, 1, "/not-a-symlink"),
        # Nulls where the inventory has none: a file's 0, "" and "0000".
        ("/data/nulls", "FILE", None, None, None, None, None, None, None, None),
        ("/data/dir-nulls", "DIRECTORY", None, None, None, None, None, None, None, None),
        ("/top-file", "FILE", 1, "u", "g", "0644", 1, 1, 1, None),
        ("/data/hot", "DIRECTORY", 0, "etl", "hadoop", "0755", 1, 0, 0, None),
        ("/日本", "DIRECTORY", 0, "etl", "hadoop", "0755", 1, 0, 0, None),
        ("/data/hot/sub", "DIRECTORY", 0, "etl", "hadoop", "0755", 1, 0, 0, None),
    ]
    for parent in ("/data", "/data/hot", "/日本"):
        out += [(f"{parent}/{n}", "FILE", 7, "ü", "grüppe", "0640", 3, 3, 2, None) for n in ODD]
    return [(*r, i) for i, r in enumerate(out)]


def contract_item(row: tuple[Any, ...]) -> dict[str, Any]:
    path, kind, size, owner, group, perms, mtime, atime, repl, target, index = row
    state = PathState(path, kind, size or 0, mtime or 0, atime or 0, owner or "", group or "",
                      perms or "0000", repl or 0, target)
    return to_wire(snapshot_item(CLUSTER, state, T, index,
                                 sharded=kind == DIRECTORY and path in HOT,
                                 parent_sharded=names.split_path(path)[0] in HOT
                                 ).to_item(now_s=0))


@pytest.fixture(scope="module")
def built(spark) -> dict[str, dict[str, Any]]:
    frame = spark.createDataFrame(rows(), SCHEMA)
    texts = put_request_texts(frame, CLUSTER, T, HOT).collect()
    puts = [json.loads(text)["PutRequest"]["Item"] for text in texts]
    return {item["path"]["S"]: item for item in puts}


def test_every_item_is_the_contracts_attribute_for_attribute(built):
    expected = {row[0]: contract_item(row) for row in rows()}
    assert sorted(built) == sorted(expected)
    differ = {p: (built[p], expected[p]) for p in expected if built[p] != expected[p]}
    assert not differ, list(differ.items())[:2]


def test_kept_and_null_attributes_by_kind(built):
    assert built["/data/f"]["size"] == {"N": str(2 ** 62)}
    assert built["/data/d"]["size"] == {"NULL": True}
    assert built["/data/d"]["replication"] == {"NULL": True}
    assert built["/data/ln"]["symlink_target"] == {"S": "/data/f"}
    assert built["/data/f-with-target"]["symlink_target"] == {"NULL": True}
    assert built["/data/nulls"]["perms"] == {"S": "0000"}
    assert built["/data/f"]["last_txid"] == {"N": str(T)}
    assert built["/data/f"]["deleted"] == {"BOOL": False}


def test_a_hot_directory_has_shards_and_its_children_live_in_them(built):
    assert built["/data/hot"]["shards"] == {"N": "16"}
    assert "shards" not in built["/data/d"] and "shards" not in built["/data/hot/sub"]
    child = built["/data/hot/new\nline"]
    assert child["parent"]["S"].startswith(f"{CLUSTER}#/data/hot//")
    assert built["/日本/😀"]["parent"]["S"].startswith(f"{CLUSTER}#/日本//")
    assert built["/top-file"]["parent"] == {"S": f"{CLUSTER}#/"}


def test_the_keys_alone_are_the_items_keys(spark, built):
    """item_keys, from the same partition column: a gap repair compares what the image writes
    with what the index holds by them."""
    keys = item_keys(spark.createDataFrame(rows(), SCHEMA), CLUSTER, HOT).collect()
    assert sorted((k[names.INDEX_PK], k[names.INDEX_SK]) for k in keys) == sorted(
        (i[names.INDEX_PK]["S"], i[names.INDEX_SK]["S"]) for i in built.values())


def test_a_delete_request_names_the_key_alone(spark):
    keys = spark.createDataFrame([(f"{CLUSTER}#/日本//3", 'q"uote')],
                                 f"`{names.INDEX_PK}` string, `{names.INDEX_SK}` string")
    assert [json.loads(t) for t in delete_request_texts(keys).collect()] == [
        {"DeleteRequest": {"Key": {names.INDEX_PK: {"S": f"{CLUSTER}#/日本//3"},
                                   names.INDEX_SK: {"S": 'q"uote'}}}}]
