"""The index's DynamoDB item: what the consumer writes is what the `index` CLI reads back."""

from __future__ import annotations

from decimal import Decimal

import pytest
from boto3.dynamodb.types import Binary, TypeDeserializer, TypeSerializer

from hdfs_events import names
from hdfs_events.dynamodb_json import from_wire, to_wire
from hdfs_events.index_item import (
    DELETE_MARKER_TTL_SECONDS,
    INDEX_SHARDS,
    IndexItem,
    child_partitions,
    item_key,
    newest_by_name,
    shard_of,
    wire_keys,
)
from hdfs_events_cli.index_reader import entry_from_item


def test_an_entry_is_keyed_by_its_parent_directory_and_named_by_its_last_component() -> None:
    assert item_key("prod", "/data/a/f") == {names.INDEX_PK: "prod#/data/a",
                                             names.INDEX_SK: "f"}
    assert item_key("prod", "/data") == {names.INDEX_PK: "prod#/", names.INDEX_SK: "data"}


def test_the_reader_sees_every_attribute_the_writer_stored() -> None:
    written = IndexItem("prod", "/data/a/f", {"type": "FILE", "size": 42, "owner": "etl",
                                              "perms": "0644", "replication": 3},
                        last_txid=9, last_index=2)
    entry = entry_from_item(to_wire(written.to_item(now_s=0)))
    assert (entry.path, entry.name, entry.type, entry.size, entry.owner, entry.perms,
            entry.replication, entry.last_txid, entry.last_index, entry.deleted) == (
        "/data/a/f", "f", "FILE", 42, "etl", "0644", 3, 9, 2, False)
    assert entry.group is None and entry.symlink_target is None


def test_a_delete_marker_expires_and_says_where_a_rename_took_it() -> None:
    item = IndexItem("prod", "/data/x", {"type": "FILE"}, last_txid=5, last_index=0,
                     deleted=True, moved_to="/data/y").to_item(now_s=1_000)
    assert item[names.TTL_ATTRIBUTE] == 1_000 + DELETE_MARKER_TTL_SECONDS
    entry = entry_from_item(to_wire(item))
    assert entry.deleted and entry.moved_to == "/data/y"
    live = IndexItem("prod", "/data/z", {"type": "FILE"}, last_txid=5).to_item(now_s=1_000)
    assert names.TTL_ATTRIBUTE not in live


def test_only_an_entrys_own_attributes_are_stored() -> None:
    item = IndexItem("prod", "/data/x", {"type": "FILE", "overwrite": True}).to_item(now_s=0)
    assert "overwrite" not in item and item["type"] == "FILE"


def test_a_sharded_child_is_keyed_by_its_parent_and_a_stable_shard_of_its_name() -> None:
    key = item_key("prod", "/data/hot/f1", in_shard=True)
    assert key == {names.INDEX_PK: f"prod#/data/hot//{shard_of('f1')}", names.INDEX_SK: "f1"}
    assert shard_of("f1") == 597_745_380 % INDEX_SHARDS  # CRC32 of b"f1": not salted per process
    assert {k[names.INDEX_PK]["S"] for k in wire_keys("prod", "/data/hot/f1")} == {
        "prod#/data/hot", key[names.INDEX_PK]}
    partitions = child_partitions("prod", "/data/hot", INDEX_SHARDS)
    assert len(set(partitions)) == 1 + INDEX_SHARDS and key[names.INDEX_PK] in partitions
    assert all(p.startswith("prod#") for p in partitions)  # the LeadingKeys grant: <cluster>#*
    assert child_partitions("prod", "/data/hot", 0) == ["prod#/data/hot"]


def test_no_directory_s_own_partition_is_spelt_as_another_s_shard() -> None:
    """`//` never occurs in a normalised path; a name may hold `#` and digits."""
    assert item_key("prod", "/a#1/f")[names.INDEX_PK] == "prod#/a#1"
    assert item_key("prod", "/a/f", in_shard=True)[names.INDEX_PK].startswith("prod#/a//")


def test_where_an_item_is_stored_and_its_directory_s_shards_read_back() -> None:
    item = IndexItem("prod", "/data/hot", {"type": "DIRECTORY"}, 3, 0, shards=INDEX_SHARDS)
    child = IndexItem("prod", "/data/hot/f", {"type": "FILE"}, 4, 1, in_shard=True)
    assert IndexItem.from_item(from_wire(to_wire(item.to_item(now_s=0)))) == item
    assert IndexItem.from_item(from_wire(to_wire(child.to_item(now_s=0)))) == child
    assert "shards" not in IndexItem("prod", "/d", {}, 1).to_item(now_s=0)


def test_partitions_merge_by_name_the_later_write_kept() -> None:
    base = [("a", (1, 0)), ("c", (9, 0))]
    shard1 = [("b", (2, 0)), ("c", (5, 0))]
    shard2 = [("c", (9, 1)), ("d", (3, 0))]
    merged = newest_by_name([base, shard1, shard2], lambda x: x[0], lambda x: x[1])
    assert list(merged) == [("a", (1, 0)), ("b", (2, 0)), ("c", (9, 1)), ("d", (3, 0))]


def test_the_wire_form_is_boto3_s_own_both_ways() -> None:
    # The contract writes DynamoDB's typed JSON itself (it imports no boto3): the same bytes
    # boto3's TypeSerializer writes, and the values its TypeDeserializer reads.
    item = {"s": "x", "t": True, "f": False, "n": 5, "neg": -10 ** 37, "none": None,
            "dec": Decimal("3"), "bytes": b"\x00\xff", "empty": [],
            "walk": {"kind": "RENAME", "pending": ["/a", {"depth": 2, "done": False}]}}
    wire = to_wire(item)
    assert wire == {k: TypeSerializer().serialize(v) for k, v in item.items()}
    expected = {k: TypeDeserializer().deserialize(v) for k, v in wire.items()}
    expected["bytes"] = expected["bytes"].value if isinstance(expected["bytes"], Binary) else None
    assert from_wire(wire) == expected
    assert from_wire({"ss": {"SS": ["a", "b"]}, "ns": {"NS": ["1", "2"]}}) == {
        "ss": {"a", "b"}, "ns": {Decimal(1), Decimal(2)}}


def test_a_value_dynamodb_cannot_hold_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="38 digits"):
        to_wire({"n": 10 ** 38})
    with pytest.raises(TypeError, match=r"float 1\.5"):
        to_wire({"x": 1.5})
    with pytest.raises(ValueError, match="XX: not a DynamoDB attribute type"):
        from_wire({"x": {"XX": "1"}})
