"""The image job's index writes (glue_jobs/image_index.py) on the shared local SparkSession into
the moto server's DynamoDB: the walk order computed in the JVM gives every path the (T, i) the
agent's listing gives it, the same order the Python sort by components
(snapshot_index.name_order, the design it replaced) gave; every item is the contract's, attribute
for attribute; a run that crashes part way leaves no position, and its rerun writes the same
items. The listing's own walk against the same key: tests/unit/live/test_snapshot_index.py."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from boto3.dynamodb.types import TypeSerializer

from glue_jobs.image_index import IndexSettings, dynamodb_client, walk_key_column, write_index
from hdfs_events import names
from hdfs_events.snapshot_index import (
    DIRECTORY,
    SHARD_AFTER_WRITES,
    PathState,
    covering_root,
    name_order,
    outermost,
    snapshot_item,
    walk_key,
)
from hdfs_events_cli.index_status import read_status
from tests.kit.dynamodb_faults import CrashingClient
from tests.kit.index_table import create_index_table

CLUSTER, T = "c1", 4242
PREFIXES = ("/data/x", "/logs", "/data", "/é")  # "/data/x" inside "/data": listed once
SCHEMA = ("path string, type string, size bigint, owner string, `group` string, perms string, "
          "mtime bigint, atime bigint, replication int, symlink_target string")
# Siblings whose order as UTF-8 bytes signed (the NameNode's) differs from their order as text:
# "é", "日本" and "😀" before ASCII; "a-b" ('-' < '/') after the subtree of "a" in a walk, before
# it as a whole path; "a\x7f" and "a\u0080" on either side of the sign bit.
NAMES = ["a", "a-b", "a.b", "a0", "a b", "a\x7f", "a\u0080", "b", "Z", "z", "é", "日本", "😀"]
HOT_CHILDREN = SHARD_AFTER_WRITES + 20


def inventory() -> list[tuple[Any, ...]]:
    def d(path: str) -> tuple[Any, ...]:
        return (path, "DIRECTORY", 0, "etl", "hadoop", "0755", 7, 0, 0, None)

    def f(path: str, size: int = 1) -> tuple[Any, ...]:
        return (path, "FILE", size, "etl", "hadoop", "0644", 8, 9, 3, None)

    rows = [d("/"), d("/data"), d("/data/x"), d("/logs"), d("/é"), d("/zz"), f("/zz/out"),
            d("/data/a"), f("/data/a/in-a"), d("/data/hot")]
    for parent in ("/data", "/data/x", "/logs", "/é"):
        rows += [f(f"{parent}/{n}.f") for n in NAMES]
        rows += [d(f"{parent}/{n}") for n in NAMES if n != "a" or parent != "/data"]
    deep = "/data/deep"
    for level in range(12):
        rows += [d(deep), f(f"{deep}-sibling")]
        deep += f"/l{level}"
    rows += [f(f"{deep}/leaf"), f("/data/hot/sub-file")]
    rows += [f(f"/data/hot/{n}{i:03d}", i) for i, n in
             ((i, NAMES[i % len(NAMES)]) for i in range(HOT_CHILDREN))]
    rows.append(("/logs/ln", "SYMLINK", 0, "u", "g", "0777", 4, 4, 0, "/data/a"))
    return rows


def expected_items(rows: list[tuple[Any, ...]]) -> dict[str, dict[str, Any]]:
    """The listing's records of the covered paths as the contract builds their items, numbered
    by the Python sort on each component's name_order (the replaced design's walk order) and
    serialized by boto3's own TypeSerializer."""
    roots = outermost(PREFIXES)
    covered = [r for r in rows if covering_root(r[0], roots) is not None]
    ordered = sorted(covered, key=lambda r: (covering_root(r[0], roots),
                                             tuple(name_order(c) for c in r[0].split("/") if c)))
    children: dict[str, int] = {}
    for r in covered:
        parent = names.split_path(r[0])[0]
        children[parent] = children.get(parent, 0) + 1
    hot = {p for p, n in children.items() if n > SHARD_AFTER_WRITES}
    serializer = TypeSerializer()
    out = {}
    for index, (path, kind, size, owner, group, perms, mtime, atime, repl, target) in \
            enumerate(ordered):
        state = PathState(path, kind, size, mtime, atime, owner, group, perms, repl, target)
        item = snapshot_item(CLUSTER, state, T, index,
                             sharded=kind == DIRECTORY and path in hot,
                             parent_sharded=names.split_path(path)[0] in hot).to_item(now_s=0)
        out[path] = {k: serializer.serialize(v) for k, v in item.items()}
    return out


@pytest.fixture(scope="module")
def rows(spark) -> Any:
    return spark.createDataFrame(inventory(), SCHEMA)


@pytest.fixture
def table(lake_endpoint: str) -> Iterator[str]:
    ddb = boto3.client("dynamodb")
    name = "image-index"
    create_index_table(ddb, name)
    yield name
    ddb.delete_table(TableName=name)


def stored(table: str) -> dict[str, dict[str, Any]]:
    items = [i for page in boto3.client("dynamodb").get_paginator("scan").paginate(TableName=table)
             for i in page["Items"]]
    entries = [i for i in items if "path" in i]
    assert len(entries) == len({i["path"]["S"] for i in entries})  # no path stored twice
    return {i["path"]["S"]: i for i in entries}



def test_the_jvm_walk_key_is_the_contracts(rows):
    roots = outermost(PREFIXES)
    got = {r["path"]: r["key"] for r in
           rows.select("path", walk_key_column(PREFIXES).alias("key")).collect()}
    expected = {path: walk_key(path, root) for path in got
                if (root := covering_root(path, roots)) is not None}
    assert {p: k for p, k in got.items() if k is not None} == expected
    assert len(expected) > 150


def test_every_path_gets_the_listings_index_and_the_contracts_item(rows, table):
    # The sort in 5 range partitions, each a write task: numbering across offsets.
    report = write_index(rows, CLUSTER, T, IndexSettings(table, PREFIXES, threads=4,
                                                         partitions=5),
                         ddb=boto3.client("dynamodb"))
    expected = expected_items(inventory())
    got = stored(table)
    assert sorted(got) == sorted(expected)
    differ = [p for p in expected if got[p] != expected[p]]
    assert not differ, (differ[:3], [got[p] for p in differ[:1]], [expected[p] for p in differ[:1]])
    assert sorted(int(i["last_index"]["N"]) for i in got.values()) == list(range(len(expected)))
    assert (report.entries, report.sharded_directories, report.write_tasks) == \
        (len(expected), 1, 5)
    assert read_status(boto3.client("dynamodb"), table, CLUSTER).txid == T


def test_a_crashed_run_leaves_no_position_and_its_rerun_writes_the_same_items(rows, table):
    settings = IndexSettings(table, PREFIXES, threads=1, partitions=2)
    ddb = boto3.client("dynamodb")
    with pytest.raises(Exception, match="index write crashed"):
        write_index(rows, CLUSTER, T, settings, ddb=ddb, client=CrashingClient(2, dynamodb_client))
    partly = stored(table)
    expected = expected_items(inventory())
    assert 0 < len(partly) < len(expected)
    assert all(partly[p] == expected[p] for p in partly)
    assert read_status(ddb, table, CLUSTER).txid is None

    report = write_index(rows, CLUSTER, T, settings, ddb=ddb)
    assert stored(table) == expected and report.entries == len(expected)
    assert read_status(ddb, table, CLUSTER).txid == T
