"""The activity rollups' byte and file figures, hand-checked: appends counted by what they add,
overwrites and truncates as what they are, `rm -r` by the files under the directory, `-rm` into
the trash as a delete (its expunge not again), and a mass delete through the trash. Each case
rolls up its second day from the path state after the first (glue_jobs.rollups.path_state),
and again from every earlier event: both give the figures written out here. The cases run
together, each in a cluster of its own."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from glue_jobs import file_sizes
from glue_jobs.rollups import (
    INPUT_COLUMNS,
    UNKNOWN_OWNER,
    attribute_owners,
    daily_activity,
    hadoop_events,
    mass_deletes,
    path_history,
    path_state,
    state_files,
    with_prefix,
)
from hdfs_events.event import EventType, HdfsEvent, INodeType
from tests.integration.glue.frames import assert_frames_equal, curated_frame
from tests.integration.glue.rollup_outputs import ACTIVITY_SCHEMA, MASS_DELETE_SCHEMA

C = "c1"
DAY13, DAY14 = "2015-01-13", "2015-01-14"
T13 = int(datetime(2015, 1, 13, 9, tzinfo=UTC).timestamp() * 1000)
T14 = int(datetime(2015, 1, 14, 10, tzinfo=UTC).timestamp() * 1000)
SMALL = 100  # small_file_bytes
THRESHOLD, BYTES_THRESHOLD = 4, 10_000
TRASH = file_sizes.DEFAULT_TRASH_PATTERN


def create(txid: int, path: str, *, inode: INodeType = INodeType.FILE, owner: str = "alice",
           overwrite: bool = False, ts: int = T14) -> HdfsEvent:
    return HdfsEvent(C, txid, 0, EventType.CREATE, path, timestamp=ts, inode_type=inode,
                     ctime=ts, owner=owner, group="hadoop", perms="0644", overwrite=overwrite)


def close(txid: int, path: str, size: int, ts: int = T14) -> HdfsEvent:
    return HdfsEvent(C, txid, 0, EventType.CLOSE, path, timestamp=ts, size=size)


def event(txid: int, type_: EventType, path: str, ts: int = T14, **fields) -> HdfsEvent:
    return HdfsEvent(C, txid, 0, type_, path, timestamp=ts, **fields)


def written(txid: int, path: str, size: int, **kw) -> list[HdfsEvent]:
    """A file created and closed on day 13."""
    return [create(txid, path, ts=T13, **kw), close(txid + 1, path, size, ts=T13)]


def _measured(spark, earlier: list[HdfsEvent], today: list[HdfsEvent], *, with_state: bool
              ) -> DataFrame:
    day13 = curated_frame(spark, [(e, DAY13) for e in earlier]).select(*INPUT_COLUMNS)
    day14 = curated_frame(spark, [(e, DAY14) for e in today]).select(*INPUT_COLUMNS)
    if with_state:
        # Read back as the job reads it: a leaf of the plan.
        state = path_state(day13.transform(path_history), None, TRASH).localCheckpoint()
        known = day14
    else:
        state, known = None, day14.unionByName(day13.transform(path_history))
    measures = file_sizes.replayed(known, state_files(state), TRASH)
    return (day14.transform(hadoop_events).transform(attribute_owners(known, state))
            .transform(with_prefix(2)).transform(file_sizes.measure_events(measures)))


# Each case in a cluster of its own (every rollup is per cluster: the path state, the owners,
# the replay of sizes, the windows), all rolled up by one run: a run costs seconds of Spark
# planning and scheduling whatever its rows, and the cases cannot reach one another.
CASES: dict[str, tuple[list[HdfsEvent], list[HdfsEvent]]] = {
    "append": (written(1, "/a/b/log", 1000),
               [event(10, EventType.APPEND, "/a/b/log", ts=None, new_block=False),
                close(11, "/a/b/log", 1001)]),
    "overwrite": (written(1, "/a/b/f", 500),
                  [create(10, "/a/b/f", overwrite=True), close(11, "/a/b/f", 300)]),
    "rename_onto": (written(1, "/a/b/f", 500),
                    [create(10, "/a/b/f._COPYING_", overwrite=True),  # `hdfs dfs -put -f`
                     close(11, "/a/b/f._COPYING_", 70),
                     event(12, EventType.RENAME, "/a/b/f._COPYING_", dst_path="/a/b/f")]),
    "truncate": (written(1, "/a/b/f", 1000),
                 [event(10, EventType.TRUNCATE, "/a/b/f", size=400),
                  event(11, EventType.APPEND, "/a/b/f", ts=None, new_block=True),
                  close(12, "/a/b/f", 450)]),
    "renamed_3_times": (written(1, "/a/b/f", 100),
                        [event(10, EventType.RENAME, "/a/b/f", dst_path="/a/b/g"),
                         event(11, EventType.RENAME, "/a/b/g", dst_path="/a/b/h"),
                         event(12, EventType.RENAME, "/a/b/h", dst_path="/a/b/i"),
                         event(13, EventType.APPEND, "/a/b/i", ts=None, new_block=False),
                         close(14, "/a/b/i", 150), event(15, EventType.UNLINK, "/a/b/i")]),
    "rm_r": ([create(1, "/a/b/d", inode=INodeType.DIRECTORY, ts=T13),
              *written(2, "/a/b/d/x", 10), *written(4, "/a/b/d/sub/y", 20),
              *written(6, "/a/b/d/z", 30),
              *written(8, "/a/b/dd", 5)],  # beside d, not under it
             [event(10, EventType.UNLINK, "/a/b/d")]),
    "rm_to_trash": ([],
                    [create(10, "/data/p", inode=INodeType.DIRECTORY),
                     create(11, "/data/p/x"), close(12, "/data/p/x", 100),
                     create(13, "/data/p/y"), close(14, "/data/p/y", 200),
                     # `hdfs dfs -rm -r /data/p` (TrashPolicyDefault.moveToTrash)
                     event(15, EventType.RENAME, "/data/p",
                           dst_path="/user/alice/.Trash/Current/data/p"),
                     # the emptier's checkpoint, then its expunge
                     event(16, EventType.RENAME, "/user/alice/.Trash/Current",
                           dst_path="/user/alice/.Trash/261126120000"),
                     event(17, EventType.UNLINK, "/user/alice/.Trash/261126120000")]),
    "mass_delete_trash": (
        [create(1, "/data/big", inode=INodeType.DIRECTORY, owner="bob", ts=T13),
         *[e for i in range(5)
           for e in written(10 + 2 * i, f"/data/big/part-{i}", 1000 * (i + 1), owner="bob")]],
        [event(30, EventType.RENAME, "/data/big", dst_path="/user/bob/.Trash/Current/data/big"),
         event(31, EventType.UNLINK, "/data/small", ts=T14 + 1000)]),  # before the lake
}


def _in(cluster: str, events: list[HdfsEvent]) -> list[HdfsEvent]:
    return [dataclasses.replace(e, cluster=cluster) for e in events]


@pytest.fixture(scope="module")
def rolled(spark) -> tuple[DataFrame, DataFrame]:
    """(activity_daily, mass_deletes) of day 14 of every case, from the path state after day
    13; checked equal to the same figures from every event of day 13."""
    earlier = [e for name, (before, _) in CASES.items() for e in _in(name, before)]
    today = [e for name, (_, after) in CASES.items() for e in _in(name, after)]
    outs = []
    for with_state in (True, False):
        events = _measured(spark, earlier, today, with_state=with_state).cache()
        # Cached: each is collected against the other, then once per case.
        outs.append((events.transform(daily_activity(SMALL)).cache(),
                     events.transform(mass_deletes(10, THRESHOLD, BYTES_THRESHOLD)).cache()))
    (activity, deletes), (full_activity, full_deletes) = outs
    assert_frames_equal(activity, full_activity)
    assert_frames_equal(deletes, full_deletes)
    return activity, deletes


def case(rolled: tuple[DataFrame, DataFrame], name: str) -> tuple[DataFrame, DataFrame]:
    """One case's (activity_daily, mass_deletes) rows, in the cluster the figures name."""
    return tuple(df.where(F.col("cluster") == name).withColumn("cluster", F.lit(C))
                 for df in rolled)  # type: ignore[return-value]


#               created deleted renamed written small net overwritten replaced b_deleted truncated
def activity(prefix: str, owner: str, *figures: int) -> tuple:
    created, deleted, renamed, written_, small, net, over, replaced, b_deleted, cut = figures
    return (C, prefix, owner, created, deleted, renamed, written_, small, net, over, replaced,
            b_deleted, cut, DAY14)


def test_an_append_of_one_byte_to_a_1000_byte_file_writes_one_byte(spark, rolled):
    got, _ = case(rolled, "append")
    # 1001 - 1000 = 1 byte written; no file created, none small (not a new file's CLOSE).
    assert_frames_equal(got, spark.createDataFrame(
        [activity("/a/b", "alice", 0, 0, 0, 1, 0, 0, 0, 0, 0, 0)], ACTIVITY_SCHEMA))


def test_an_overwrite_of_a_500_byte_file_by_300_bytes_replaces_a_file(spark, rolled):
    got, _ = case(rolled, "overwrite")
    # One file overwritten (not created), its 500 bytes replaced, 300 - 0 = 300 bytes written;
    # the number of files is unchanged.
    assert_frames_equal(got, spark.createDataFrame(
        [activity("/a/b", "alice", 0, 0, 0, 300, 0, 0, 1, 500, 0, 0)], ACTIVITY_SCHEMA))


def test_a_rename_onto_a_live_file_overwrites_it(spark, rolled):
    got, _ = case(rolled, "rename_onto")
    # The upload creates one file of 70 bytes (small: < 100); its rename onto f replaces f's
    # 500 bytes: 1 created - 1 overwritten by a rename = net 0. An upload's end is no rename.
    assert_frames_equal(got, spark.createDataFrame(
        [activity("/a/b", "alice", 1, 0, 0, 70, 1, 0, 1, 500, 0, 0)], ACTIVITY_SCHEMA))


def test_a_truncate_from_1000_to_400_bytes_cuts_600(spark, rolled):
    got, _ = case(rolled, "truncate")
    # 1000 - 400 = 600 bytes truncated (not negative writes); the append after it writes
    # 450 - 400 = 50.
    assert_frames_equal(got, spark.createDataFrame(
        [activity("/a/b", "alice", 0, 0, 0, 50, 0, 0, 0, 0, 0, 600)], ACTIVITY_SCHEMA))


def test_a_file_renamed_three_times_in_a_day_keeps_its_size(spark, rolled):
    got, _ = case(rolled, "renamed_3_times")
    # The append writes 150 - 100 = 50 and the delete removes 150 bytes: the size followed f
    # through its three names. Owners follow one rename only: h and i are of no known owner.
    assert_frames_equal(got, spark.createDataFrame(
        [activity("/a/b", "alice", 0, 0, 2, 0, 0, 0, 0, 0, 0, 0),
         activity("/a/b", UNKNOWN_OWNER, 0, 1, 1, 50, 0, -1, 0, 0, 150, 0)], ACTIVITY_SCHEMA))


def test_rm_r_of_a_directory_counts_the_files_the_path_state_holds_under_it(spark, rolled):
    got, _ = case(rolled, "rm_r")
    # One UNLINK, 3 files deleted, 10 + 20 + 30 = 60 bytes; net -3.
    assert_frames_equal(got, spark.createDataFrame(
        [activity("/a/b", "alice", 0, 3, 0, 0, 0, -3, 0, 0, 60, 0)], ACTIVITY_SCHEMA))


def test_rm_into_the_trash_deletes_once_and_its_expunge_counts_nothing(spark, rolled):
    got, _ = case(rolled, "rm_to_trash")
    # 2 files created under /data/p (100 + 200 = 300 bytes, net +2), deleted by the move of
    # /data/p, which counts at its own prefix /data (2 files, 300 bytes, net -2). The
    # checkpoint is no rename and the expunge no delete: /user/alice has nothing to report.
    assert_frames_equal(got, spark.createDataFrame(
        [activity("/data/p", "alice", 2, 0, 0, 300, 0, 2, 0, 0, 0, 0),
         activity("/data", "alice", 0, 2, 0, 0, 0, -2, 0, 0, 300, 0)], ACTIVITY_SCHEMA))


def test_a_mass_delete_through_the_trash_is_flagged_with_its_root(spark, rolled):
    _, got = case(rolled, "mass_delete_trash")
    # 5 files >= THRESHOLD 4 by the move, plus 1 unknown file by the UNLINK; bytes
    # 1000 + 2000 + 3000 + 4000 + 5000 = 15,000 >= BYTES_THRESHOLD 10,000 under prefix /data.
    # The owner of /data/small is unknown: bob's window has the move alone (5 files). No other
    # case deletes as many: none has a window.
    w = datetime(2015, 1, 14, 10, 0), datetime(2015, 1, 14, 10, 10)
    expected = spark.createDataFrame([
        (C, "owner", "bob", *w, 0, 30, 30, 1, 5, 15_000, "/data/big", None, 1, DAY14),
        (C, "prefix", "/data", *w, 1, 30, 31, 1, 6, 15_000, "/data/big", None, 2, DAY14),
    ], MASS_DELETE_SCHEMA)
    assert_frames_equal(got, expected)
    assert rolled[1].where(F.col("cluster") != "mass_delete_trash").count() == 0


def test_the_path_state_keeps_live_files_only_with_their_last_size(spark):
    day13 = curated_frame(spark, [(e, DAY13) for e in [
        *written(1, "/a/f", 10),
        event(3, EventType.APPEND, "/a/f", ts=None), close(4, "/a/f", 15),
        *written(5, "/a/gone", 7), event(7, EventType.UNLINK, "/a/gone"),
        create(8, "/a/d", inode=INodeType.DIRECTORY), *written(9, "/a/d/g", 3),
        event(11, EventType.RENAME, "/a/d", dst_path="/b/d"),  # the file moves with its dir
    ]]).select(*INPUT_COLUMNS)

    state = path_state(day13.transform(path_history), None, TRASH)

    # (path, txid of its latest size fact, size): g's CLOSE at 10, under its new name.
    assert sorted((r["path"], r["txid"], r["fact_size"])
                  for r in state.where(F.col("kind") == 3).collect()) == [
        ("/a/f", 4, 15), ("/b/d/g", 10, 3)]


def test_with_a_trash_pattern_that_matches_nothing_a_move_is_a_rename(spark):
    today = [create(10, "/data/p/x"), close(11, "/data/p/x", 100),
             event(12, EventType.RENAME, "/data/p", dst_path="/user/alice/.Trash/Current/p")]
    day14 = curated_frame(spark, [(e, DAY14) for e in today]).select(*INPUT_COLUMNS)
    measures = file_sizes.replayed(day14, None, "^/nowhere/")
    got = (day14.transform(hadoop_events).transform(attribute_owners(day14))
           .transform(with_prefix(2))
           .transform(file_sizes.measure_events(measures))
           .transform(daily_activity(SMALL)))
    assert_frames_equal(got, spark.createDataFrame(
        [activity("/data/p", "alice", 1, 0, 0, 100, 0, 1, 0, 0, 0, 0),
         activity("/data", "(unknown)", 0, 0, 1, 0, 0, 0, 0, 0, 0, 0)], ACTIVITY_SCHEMA))
