"""The index's DynamoDB item: what the consumer writes is what the `index` CLI reads back."""

from __future__ import annotations

from hdfs_events import names
from hdfs_events.index_item import (
    DELETE_MARKER_TTL_SECONDS,
    IndexItem,
    item_key,
    to_wire,
)
from hdfs_events.index_reader import entry_from_item


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
