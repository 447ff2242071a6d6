"""A gap repair from an image (glue_jobs/image_index.py with `repair_after`) on the shared local
SparkSession against the moto server's DynamoDB: the index as the consumer left it at the agent's
checkpoint N (a first start's items at T0, then the consumer's own writes up to N), repaired
from the image at T. Afterwards every covered path has exactly one live item, the contract's
`snapshot_item` at (T, its walk index); nothing the image lacks is live; a directory the
consumer sharded stays sharded; the sequencer's items, another cluster's entries and entries
outside the covered prefixes are as they were; the position is applied through T. A rerun
writes nothing; a repair that crashed part way leaves the position at N, and its rerun gives the
same index.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from glue_jobs.image_index import IndexSettings, dynamodb_client, write_index
from glue_jobs.indexed_entries import indexed_entries
from hdfs_events import names
from hdfs_events.dynamodb_json import to_wire
from hdfs_events.index_item import IndexItem
from hdfs_events.sequencer_items import applied_through, position_key
from hdfs_events.snapshot_index import (
    DIRECTORY,
    PathState,
    covering_root,
    outermost,
    snapshot_item,
    walk_key,
)
from tests.kit.dynamodb_faults import CrashingClient
from tests.kit.index_table import create_index_table

pytestmark = pytest.mark.slow

CLUSTER, OTHER = "c1", "c2"
T0, N, T = 100, 300, 400  # the first start's image, the agent's checkpoint, the repair's image
PREFIXES = ("/data", "/logs")
SCHEMA = ("path string, type string, size bigint, owner string, `group` string, perms string, "
          "mtime bigint, atime bigint, replication int, symlink_target string")
HOT_CHILDREN = 120  # /logs/hot in the image: more than SHARD_AFTER_WRITES
# The image's hot directory, and the one the consumer sharded during the stream (20 children in
# the image: not hot there).
HOT = {"/logs/hot", "/data/busy"}
Row = tuple[Any, ...]


def d(path: str, mtime: int = 7) -> Row:
    return (path, "DIRECTORY", 0, "etl", "hadoop", "0755", mtime, 0, 0, None)


def f(path: str, size: int = 1, mtime: int = 8) -> Row:
    return (path, "FILE", size, "etl", "hadoop", "0644", mtime, 9, 3, None)


def state(row: Row) -> PathState:
    path, kind, size, owner, group, perms, mtime, atime, repl, target = row
    return PathState(path, kind, size, mtime, atime, owner, group, perms, repl, target)


# Paths in both images, unchanged.
KEPT = [d("/data"), d("/logs"), f("/data/same.txt"), d("/data/busy"), d("/logs/hot"),
        *(f(f"/data/busy/c{i}") for i in range(5)), *(f(f"/logs/hot/h{i}") for i in range(3))]


def image_t0() -> list[Row]:
    """The first start's image: what the consumer's own writes then changed."""
    return [d("/"), d("/tmp"), *KEPT, f("/data/gone.txt"), f("/data/changed.txt", size=1),
            d("/data/olddir"), f("/data/olddir/a"), d("/data/olddir/sub"),
            f("/data/olddir/sub/b"), f("/data/removed-before-gap")]


def image_t() -> list[Row]:
    """The repair's image: /data/gone.txt deleted during the gap, /data/olddir renamed to
    /data/newdir, /data/changed.txt grown, /data/busy's new15..29 deleted, /logs/hot hot."""
    return [d("/"), d("/tmp"), f("/tmp/x"), *KEPT, f("/data/changed.txt", size=999, mtime=50),
            d("/data/newdir"), f("/data/newdir/a"), d("/data/newdir/sub"),
            f("/data/newdir/sub/b"), *(f(f"/data/busy/new{i}") for i in range(15)),
            *(f(f"/logs/hot/h{i}") for i in range(3, HOT_CHILDREN))]


def put(ddb: Any, table: str, item: IndexItem) -> None:
    ddb.put_item(TableName=table, Item=to_wire(item.to_item(now_s=0)))


def consumers_writes(ddb: Any, table: str) -> None:
    """After the first start at T0, what the consumer applied up to N (the agent's checkpoint),
    as its own items: /data/busy sharded (30 creates into its shards, then c0 written again at
    its shard key, its T0 copy left at the own key), a delete marker, an entry outside the
    covered prefixes (indexed under an earlier INDEX_PREFIXES), and the position at N."""
    busy = snapshot_item(CLUSTER, state(d("/data/busy")), 250, 0, sharded=True,
                         parent_sharded=False)
    put(ddb, table, busy)
    for i in range(30):
        put(ddb, table, snapshot_item(CLUSTER, state(f(f"/data/busy/new{i}")), 251, i,
                                      sharded=False, parent_sharded=True))
    put(ddb, table, snapshot_item(CLUSTER, state(f("/data/busy/c0")), 260, 0, sharded=False,
                                  parent_sharded=True))
    put(ddb, table, IndexItem(CLUSTER, "/data/removed-before-gap", {"type": "FILE"}, 270, 0,
                              deleted=True))
    put(ddb, table, snapshot_item(CLUSTER, state(f("/tmp/x")), 280, 0, sharded=False,
                                  parent_sharded=False))
    ddb.put_item(TableName=table, Item={**applied_through(CLUSTER, N),
                                        "lease_owner": {"S": "invocation-7"},
                                        "lease_until_ms": {"N": "1"}})


def others(ddb: Any, table: str) -> None:
    """The sequencer's other items and another cluster's index, at paths the repair removes."""
    for path in ("/data/gone.txt", "/data/olddir", "/data/olddir/a"):
        kind = "DIRECTORY" if path == "/data/olddir" else "FILE"
        put(ddb, table, snapshot_item(OTHER, state((path, kind, 0, "u", "g", "0644", 1, 1, 1,
                                                    None)), 5, 0, sharded=False,
                                      parent_sharded=False))
    ddb.put_item(TableName=table, Item=applied_through(OTHER, 5))
    ddb.put_item(TableName=table, Item={
        names.INDEX_PK: {"S": names.manifests_partition(CLUSTER)},
        names.INDEX_SK: {"S": f"{N:020d}.200.r1.00000"}, "manifest": {"S": "{}"},
        "received_ms": {"N": "1"}})
    ddb.put_item(TableName=table, Item={
        names.INDEX_PK: {"S": names.arrival_partition(CLUSTER, "m1")},
        names.INDEX_SK: {"S": names.SEQUENCER_SK}, "lake_keys": {"S": "[]"}})


def expected_items() -> dict[str, dict[str, Any]]:
    """The contract's item of each covered path of the image at T, numbered in walk order."""
    roots = outermost(PREFIXES)
    covered = [r for r in image_t() if covering_root(r[0], roots) is not None]
    ordered = sorted(covered, key=lambda r: walk_key(r[0], covering_root(r[0], roots)))
    return {row[0]: to_wire(snapshot_item(
        CLUSTER, state(row), T, i, sharded=row[1] == DIRECTORY and row[0] in HOT,
        parent_sharded=names.split_path(row[0])[0] in HOT).to_item(now_s=0))
        for i, row in enumerate(ordered)}


def key_of(item: dict[str, Any]) -> tuple[str, str]:
    return item[names.INDEX_PK]["S"], item[names.INDEX_SK]["S"]


def table_items(table: str) -> dict[tuple[str, str], dict[str, Any]]:
    pages = boto3.client("dynamodb").get_paginator("scan").paginate(TableName=table)
    return {key_of(i): i for page in pages for i in page["Items"]}


def is_repaired(key: tuple[str, str], item: dict[str, Any]) -> bool:
    """A live entry of the cluster under the covered prefixes: what the repair owns."""
    return (key[0].startswith(names.index_partition(CLUSTER, "")) and "path" in item
            and not item["deleted"]["BOOL"]
            and covering_root(item["path"]["S"], outermost(PREFIXES)) is not None)


@pytest.fixture(scope="module")
def rows_t0(spark) -> Any:
    return spark.createDataFrame(image_t0(), SCHEMA)


@pytest.fixture(scope="module")
def rows_t(spark) -> Any:
    return spark.createDataFrame(image_t(), SCHEMA)


@pytest.fixture
def table(lake_endpoint: str, rows_t0) -> Iterator[str]:
    """The index at N: a first start at T0, the consumer's writes up to N, the others."""
    ddb = boto3.client("dynamodb")
    name = create_index_table(ddb, "image-repair")
    write_index(rows_t0, CLUSTER, T0, IndexSettings(name, PREFIXES, threads=2, partitions=2),
                ddb=ddb)
    consumers_writes(ddb, name)
    others(ddb, name)
    yield name
    ddb.delete_table(TableName=name)


def repair(rows: Any, table: str, **client: Any) -> Any:
    return write_index(rows, CLUSTER, T, IndexSettings(table, PREFIXES, threads=2, partitions=3,
                                                       repair_after=N),
                       ddb=boto3.client("dynamodb"), **client)


def assert_repaired(before: dict[tuple[str, str], dict[str, Any]], table: str) -> None:
    after = table_items(table)
    expected = expected_items()
    live = {k: i for k, i in after.items() if is_repaired(k, i)}
    by_path: dict[str, list[dict[str, Any]]] = {}
    for item in live.values():
        by_path.setdefault(item["path"]["S"], []).append(item)
    # Every path of the image: one live item, over both of its keys, the contract's at (T, i).
    assert sorted(by_path) == sorted(expected)
    differ = [p for p, items in by_path.items() if items != [expected[p]]]
    assert not differ, [(p, by_path[p], expected[p]) for p in differ[:2]]
    # The directory the consumer sharded stays sharded, its children in its shards.
    assert live[(f"{CLUSTER}#/data", "busy")]["shards"] == {"N": "16"}
    assert all(i[names.INDEX_PK]["S"].startswith(f"{CLUSTER}#/data/busy//")
               for p, items in by_path.items() if p.startswith("/data/busy/") for i in items)
    # Everything the repair does not own is as it was (the position apart).
    untouched = {k: i for k, i in before.items()
                 if not is_repaired(k, i) and k != key_of(position_key(CLUSTER))}
    assert {k: after.get(k) for k in untouched} == untouched
    assert after[key_of(position_key(CLUSTER))] == {
        **applied_through(CLUSTER, T), "lease_owner": {"S": "invocation-7"},
        "lease_until_ms": {"N": "1"}}


def test_a_repair_gives_the_images_index_and_moves_the_position_to_t(rows_t, table):
    before = table_items(table)
    stale = {k for k, i in before.items() if is_repaired(k, i)} - {
        key_of(i) for i in expected_items().values()}
    # gone.txt; olddir's 4 paths; busy's c0..c4 at the own key and new15..29; hot's h0..h2 at
    # the own key.
    assert len(stale) == 1 + 4 + 5 + 15 + 3
    report = repair(rows_t, table)
    assert_repaired(before, table)
    assert (report.repair_after, report.removed, report.entries, report.sharded_directories,
            report.already_indexed) == (N, len(stale), len(expected_items()), 2, False)

    repaired = table_items(table)
    rerun = repair(rows_t, table)
    assert (rerun.already_indexed, rerun.entries, rerun.removed, rerun.repair_after) == \
        (True, 0, 0, N)
    assert table_items(table) == repaired



def test_a_crashed_repair_stays_at_n_and_its_rerun_repairs_the_same(rows_t, table):
    before = table_items(table)
    with pytest.raises(Exception, match="index write crashed"):
        repair(rows_t, table, client=CrashingClient(1, dynamodb_client))
    assert table_items(table)[key_of(position_key(CLUSTER))]["txid"] == {"N": str(N)}
    repair(rows_t, table)
    assert_repaired(before, table)


def test_the_scan_reads_each_live_entry_of_the_cluster_once(spark, table):
    """One segment a task, pages of 3 items: moto splits the table by partition key as DynamoDB
    does (disjoint segments, several non-empty), and the DataFrame holds the cluster's live
    entries (outside the covered prefixes too: the job filters those), nothing else."""
    ddb = boto3.client("dynamodb")
    segments = [{key_of(i) for i in ddb.scan(TableName=table, Segment=s, TotalSegments=4)["Items"]}
                for s in range(4)]
    assert sum(map(len, segments)) == len(set().union(*segments)) == len(table_items(table))
    assert sum(1 for s in segments if s) > 1
    got = indexed_entries(spark, table, CLUSTER, 4, dynamodb_client, page_limit=3).collect()
    expected = {k: i for k, i in table_items(table).items()
                if k[0].startswith(f"{CLUSTER}#") and not i["deleted"]["BOOL"]}
    assert len(got) == len(expected)  # none twice
    assert {(r[names.INDEX_PK], r[names.INDEX_SK]): (r["path"], r["type"], r["shards"])
            for r in got} == {k: (i["path"]["S"], i["type"]["S"],
                                  int(i.get("shards", {"N": "0"})["N"]))
                              for k, i in expected.items()}
    assert any(p == "/tmp/x" for _, _, p, _, _ in got)
