"""Each transform of glue_jobs.rollups on a small frame with an explicit schema."""

from __future__ import annotations

import dataclasses
from datetime import datetime

import pytest
from pyspark.sql import functions as F
from pyspark.sql import types as T

from glue_jobs import file_sizes
from glue_jobs.rollups import (
    INPUT_COLUMNS,
    UNKNOWN_OWNER,
    attribute_owners,
    daily_activity,
    daily_gaps,
    hadoop_events,
    mass_deletes,
    path_state,
    with_prefix,
)
from hdfs_events.event import EventType, HdfsEvent, INodeType, MetadataType
from tests.integration.glue.frames import assert_frames_equal, curated_frame
from tests.integration.glue.rollup_outputs import ACTIVITY_SCHEMA, GAPS_SCHEMA, MASS_DELETE_SCHEMA

C = "c1"
TS = 1_421_226_000_000  # 2015-01-14T09:00:00Z
DAY13, DAY14 = "2015-01-13", "2015-01-14"


def _events(spark, *rows: tuple[HdfsEvent, str]):
    """Curated events as the rollup job reads them (the curated schema, INPUT_COLUMNS only)."""
    return curated_frame(spark, rows).select(*INPUT_COLUMNS)


def _create(txid: int, path: str, owner: str, inode: INodeType = INodeType.FILE) -> HdfsEvent:
    return HdfsEvent(C, txid, 0, EventType.CREATE, path, timestamp=TS, inode_type=inode,
                     ctime=TS, owner=owner, group="hadoop", perms="0644")


def _event(txid: int, type_: EventType, path: str, **fields) -> HdfsEvent:
    return HdfsEvent(C, txid, 0, type_, path, **{"timestamp": TS, **fields})


def test_hadoop_events_leave_out_the_agents_gap_and_snapshot_records(spark):
    events = _events(spark,
                     (_create(1, "/a/f", "alice"), DAY14),
                     (_event(2, EventType.GAP, "/", gap_end_txid=10), DAY14),
                     (_event(10, EventType.SNAPSHOT, "/a/f", inode_type=INodeType.FILE,
                             owner="alice"), DAY14),
                     (_event(11, EventType.UNLINK, "/a/f"), DAY14))

    out = events.transform(hadoop_events)

    assert sorted((r["txid"], r["type"]) for r in out.collect()) == [(1, "CREATE"), (11, "UNLINK")]


def test_attribute_owners_follows_creates_owner_changes_one_rename_and_snapshots(spark):
    history = _events(
        spark,
        (_create(1, "/a/f", "alice"), DAY13),  # a day before: still names the owner
        (_event(2, EventType.CLOSE, "/a/f", size=5), DAY14),
        (_event(3, EventType.RENAME, "/a/f", dst_path="/b/f"), DAY14),
        (_event(4, EventType.UNLINK, "/b/f"), DAY14),  # alice, through the rename
        (_event(5, EventType.UNLINK, "/x/old"), DAY14),  # created before the lake
        (_create(6, "/a/d", "bob", INodeType.DIRECTORY), DAY14),
        (_event(7, EventType.METADATA, "/a/d", timestamp=None, metadata_type=MetadataType.OWNER,
                owner="carol", group="hadoop"), DAY14),
        (_event(8, EventType.UNLINK, "/a/d"), DAY14),
        (_event(9, EventType.SNAPSHOT, "/s/f", inode_type=INodeType.FILE, owner="dave"), DAY14),
        (_event(10, EventType.CLOSE, "/s/f", size=7), DAY14))
    today = history.where(F.col("dt") == DAY14)

    out = today.transform(attribute_owners(history))

    assert "owner" in out.columns and "known_inode_type" in out.columns
    assert sorted((r["txid"], r["owner"], r["known_inode_type"]) for r in out.collect()) == [
        (2, "alice", "FILE"), (3, "alice", "FILE"), (4, "alice", "FILE"),
        (5, UNKNOWN_OWNER, None),
        (6, "bob", "DIRECTORY"), (7, "carol", "DIRECTORY"), (8, "carol", "DIRECTORY"),
        (9, "dave", "FILE"), (10, "dave", "FILE"),
    ]


def test_attribute_owners_takes_the_end_of_an_upload_for_no_hop(spark):
    history = _events(
        spark,
        (_create(1, "/u/f._COPYING_", "alice"), DAY13),  # `hdfs dfs -put`
        (_event(2, EventType.CLOSE, "/u/f._COPYING_", size=5), DAY13),
        (_event(3, EventType.RENAME, "/u/f._COPYING_", dst_path="/u/f"), DAY13),
        (_event(4, EventType.RENAME, "/u/f", dst_path="/v/f"), DAY14),  # `hdfs dfs -mv`
        (_event(5, EventType.UNLINK, "/v/f"), DAY14),  # alice: the move is the one hop
        (_create(6, "/w/a", "bob"), DAY14),
        (_event(7, EventType.RENAME, "/w/a", dst_path="/w/b"), DAY14),
        (_event(8, EventType.RENAME, "/w/b", dst_path="/w/c"), DAY14),
        (_event(9, EventType.UNLINK, "/w/c"), DAY14))  # two users' renames: not followed
    today = history.where(F.col("dt") == DAY14)

    out = today.transform(attribute_owners(history))

    assert sorted((r["txid"], r["owner"]) for r in out.collect()) == [
        (4, "alice"), (5, "alice"), (6, "bob"), (7, "bob"), (8, "bob"), (9, UNKNOWN_OWNER)]


def test_with_prefix_keeps_the_first_directories_of_the_parent(spark):
    paths = spark.createDataFrame([("/a/b/c/file",), ("/a/b/file",), ("/a/file",), ("/file",),
                                   ("/",)], T.StructType([T.StructField("path", T.StringType())]))

    out = paths.transform(with_prefix(2))

    assert [(r["path"], r["prefix"]) for r in out.collect()] == [
        ("/a/b/c/file", "/a/b"), ("/a/b/file", "/a/b"), ("/a/file", "/a"), ("/file", "/"),
        ("/", "/")]
    with pytest.raises(ValueError, match="prefix depth must be >= 1, got 0"):
        with_prefix(0)


def test_daily_activity_counts_files_bytes_and_small_files_per_prefix_and_owner(spark):
    trash = file_sizes.DEFAULT_TRASH_PATTERN
    events = _events(spark, *[(e, DAY14) for e in [
        _create(1, "/a/f", "alice"), _event(2, EventType.CLOSE, "/a/f", size=10),  # small
        _create(3, "/a/d", "alice", INodeType.DIRECTORY),  # not a file
        _create(4, "/a/g", "alice"), _event(5, EventType.CLOSE, "/a/g", size=1000),
        # A concat: APPEND g, UNLINK its source (created before the lake: one file of unknown
        # owner), CLOSE g with -1 (no bytes known).
        _event(6, EventType.APPEND, "/a/g", timestamp=None, new_block=False),
        dataclasses.replace(_event(6, EventType.UNLINK, "/a/src"), index=1),
        dataclasses.replace(_event(6, EventType.CLOSE, "/a/g", size=-1), index=2),
        _event(7, EventType.UNLINK, "/a/d"),  # an empty directory: no file deleted
        _event(8, EventType.RENAME, "/a/f", dst_path="/a/h"),
        _event(9, EventType.UNLINK, "/x/old"),  # created before the lake: counted as a file
        # `hdfs dfs -put`: one file created of its CLOSE size; its rename is no user's rename.
        _create(10, "/a/u._COPYING_", "carol"),
        _event(11, EventType.CLOSE, "/a/u._COPYING_", size=300),
        _event(12, EventType.RENAME, "/a/u._COPYING_", dst_path="/a/u"),
        # DistCp into /a/dc: its temporary file at the target root, renamed below it.
        _create(13, "/a/dc/.distcp.tmp.m_0.1", "carol"),
        _event(14, EventType.CLOSE, "/a/dc/.distcp.tmp.m_0.1", size=200),
        _event(15, EventType.RENAME, "/a/dc/.distcp.tmp.m_0.1", dst_path="/a/dc/sub/v"),
        _event(16, EventType.METADATA, "/b/x", timestamp=None,  # nothing to report for bob
               metadata_type=MetadataType.OWNER, owner="bob", group="hadoop"),
    ]])
    measures = file_sizes.replayed(events, None, trash)

    out = (events.transform(hadoop_events).transform(attribute_owners(events))
           .transform(with_prefix(2)).transform(file_sizes.measure_events(measures))
           .transform(daily_activity(small_file_bytes=100)))

    def row(prefix, owner, created, deleted, renamed, written, small, net):
        return (C, prefix, owner, created, deleted, renamed, written, small, net, 0, 0, 0, 0,
                DAY14)
    expected = spark.createDataFrame([
        # f and g; the rename of f; 10 + 1000 bytes; f's 10 < 100 is small
        row("/a", "alice", 2, 0, 1, 1010, 1, 2),
        row("/a", UNKNOWN_OWNER, 0, 1, 0, 0, 0, -1),
        row("/x", UNKNOWN_OWNER, 0, 1, 0, 0, 0, -1),
        row("/a", "carol", 1, 0, 0, 300, 0, 1),
        row("/a/dc", "carol", 1, 0, 0, 200, 0, 1),
    ], ACTIVITY_SCHEMA)
    assert_frames_equal(out, expected)


MEASURED = T.StructType([T.StructField("cluster", T.StringType()),
                         T.StructField("type", T.StringType()),
                         T.StructField("timestamp", T.LongType()),
                         T.StructField("owner", T.StringType()),
                         T.StructField("prefix", T.StringType()),
                         T.StructField("txid", T.LongType()),
                         T.StructField("path", T.StringType()),
                         T.StructField("deletes", T.BooleanType()),
                         T.StructField("files_deleted", T.LongType()),
                         T.StructField("bytes_deleted", T.LongType())])


def test_mass_deletes_flag_files_or_bytes_removed_per_owner_and_prefix_within_a_window(spark):
    minute = 60_000
    ten = TS + 60 * minute  # 10:00 UTC, a window boundary
    events = spark.createDataFrame([
        (C, "UNLINK", ten, "alice", "/a", 1, "/a/f1", True, 1, 10),
        (C, "UNLINK", ten + minute, "alice", "/a", 2, "/a/f2", True, 1, 10),
        (C, "UNLINK", ten + 10 * minute - 1, "alice", "/a", 3, "/a/f3", True, 1, 10),
        (C, "UNLINK", ten + 10 * minute, "alice", "/a", 4, "/a/f4", True, 1, 10),  # next window
        (C, "RENAME", ten + 2 * minute, "bob", "/b", 5, "/b/big", True, 1, 5000),  # to the trash
        (C, "UNLINK", ten + 3 * minute, "bob", "/b", 6, "/b/empty", True, 0, 0),
        (C, "CREATE", ten + 4 * minute, "bob", "/b", 7, "/b/new", False, 0, 0),  # not a delete
        (C, "UNLINK", None, "bob", "/b", 8, "/b/f", True, 1, 0),  # no NameNode time: no window
    ], MEASURED)

    out = events.transform(mass_deletes(window_minutes=10, threshold=3, bytes_threshold=1000))

    w = datetime(2015, 1, 14, 10, 0), datetime(2015, 1, 14, 10, 10)
    expected = spark.createDataFrame([
        # 3 files >= 3 (10 + 10 + 10 = 30 bytes); the earliest of equal deletes is the root
        (C, "owner", "alice", *w, 3, 1, 3, 0, 3, 30, "/a/f1", None, 3, DAY14),
        (C, "prefix", "/a", *w, 3, 1, 3, 0, 3, 30, "/a/f1", None, 3, DAY14),
        # 1 file < 3, but 5000 + 0 bytes >= 1000: the move into the trash removed the most
        (C, "owner", "bob", *w, 1, 5, 6, 1, 1, 5000, "/b/big", None, 2, DAY14),
        (C, "prefix", "/b", *w, 1, 5, 6, 1, 1, 5000, "/b/big", None, 2, DAY14),
    ], MASS_DELETE_SCHEMA)
    assert_frames_equal(out, expected)


def test_mass_deletes_name_the_users_who_removed_the_most_files_first(spark):
    """The users of a window's deletes from the attribution rows: by files removed (an rm -r of
    5 files before two single UNLINKs), equals by name; a delete without a row is counted."""
    ten = TS + 60 * 60_000
    schema = T.StructType([*MEASURED.fields, T.StructField("index", T.LongType())])
    deletes = [(1, "/a/dir", 5, "carol"), (2, "/a/f2", 1, "dave"), (3, "/a/f3", 1, "dave"),
               (4, "/a/f4", 1, None), (5, "/a/f5", 1, "bob"), (6, "/a/f6", 1, "amy")]
    events = spark.createDataFrame(
        [(C, "UNLINK", ten + t * 1000, "alice", "/a", t, path, True, files, 10, 0)
         for t, path, files, _ in deletes], schema)
    who = spark.createDataFrame([(C, t, 0, user) for t, _, _, user in deletes if user],
                                "cluster string, txid long, index long, user string")

    out = events.transform(mass_deletes(window_minutes=10, threshold=3, bytes_threshold=1 << 40,
                                        who=who))

    w = datetime(2015, 1, 14, 10, 0), datetime(2015, 1, 14, 10, 10)
    # carol 5 files, dave 2, amy 1 and bob 1 (by name); txid 4 unattributed
    row = (*w, 6, 1, 6, 0, 10, 60, "/a/dir", "carol, dave, amy, bob", 1, DAY14)
    expected = spark.createDataFrame([(C, "owner", "alice", *row), (C, "prefix", "/a", *row)],
                                     MASS_DELETE_SCHEMA)
    assert_frames_equal(out, expected)


def test_daily_gaps_give_lost_txids_and_snapshot_records_per_cluster_and_day(spark):
    snapshot = _event(150, EventType.SNAPSHOT, "/a", inode_type=INodeType.DIRECTORY, owner="x")
    events = _events(spark,
                     (_event(100, EventType.GAP, "/", gap_end_txid=150), DAY13),
                     (snapshot, DAY13), (_event(151, EventType.SNAPSHOT, "/a/f",
                                                inode_type=INodeType.FILE, owner="x"), DAY13),
                     (_create(152, "/a/g", "x"), DAY13),  # activity, not a gap
                     (dataclasses.replace(snapshot, cluster="c2"), DAY13),  # a listing without a gap
                     (_event(200, EventType.GAP, "/", gap_end_txid=210), DAY14),
                     (_event(300, EventType.GAP, "/", gap_end_txid=301), DAY14))

    out = events.transform(daily_gaps)

    expected = spark.createDataFrame([(C, 1, 50, 100, 149, 2, DAY13),
                                      ("c2", 0, 0, None, None, 1, DAY13),
                                      (C, 2, 11, 200, 300, 0, DAY14)], GAPS_SCHEMA)
    assert_frames_equal(out, expected)


def test_attribute_owners_from_the_owner_state_equals_it_from_every_earlier_fact(spark):
    history = _events(
        spark,
        (_create(1, "/a/f", "alice"), DAY13),
        (_event(2, EventType.METADATA, "/a/f", timestamp=None, metadata_type=MetadataType.OWNER,
                owner="carol", group="hadoop"), DAY13),  # the latest owner, no inode type
        (_create(3, "/u/f._COPYING_", "bob"), DAY13),
        (_event(4, EventType.RENAME, "/u/f._COPYING_", dst_path="/u/f"), DAY13),  # uploaded
        (_create(5, "/w/a", "dave"), DAY13),
        (_event(6, EventType.RENAME, "/w/a", dst_path="/w/b"), DAY13),  # moved
        (_event(10, EventType.UNLINK, "/a/f"), DAY14),
        (_event(11, EventType.RENAME, "/u/f", dst_path="/v/f"), DAY14),
        (_event(12, EventType.UNLINK, "/v/f"), DAY14),
        (_event(13, EventType.RENAME, "/w/b", dst_path="/w/c"), DAY14),  # no second hop
        (_event(14, EventType.UNLINK, "/w/c"), DAY14),
        (_event(15, EventType.UNLINK, "/w/b"), DAY14))
    earlier, today = history.where(F.col("dt") == DAY13), history.where(F.col("dt") == DAY14)

    # Read back as the job reads it: a leaf of the plan. Cached: collected twice.
    state = path_state(earlier).localCheckpoint()
    out = today.transform(attribute_owners(today, state)).cache()

    assert_frames_equal(out, today.transform(attribute_owners(history)))
    assert sorted((r["txid"], r["owner"]) for r in out.collect()) == [
        (10, "carol"), (11, "bob"), (12, "bob"), (13, "dave"), (14, UNKNOWN_OWNER), (15, "dave")]
    # The state keeps the latest fact per path and kind, not every fact: /a/f's owner is
    # carol's change, its inode type alice's CREATE, its size (0, not closed) that CREATE's.
    assert sorted((r["kind"], r["txid"], r["fact_owner"], r["fact_inode_type"])
                  for r in state.where("path = '/a/f'").collect()) == [
        (0, 1, None, "FILE"), (0, 2, "carol", None), (3, 1, None, "FILE")]
