"""activity_rollups on a hand-checked day of events, compacted first by compact_events so the
rollup reads the curated table through its catalog, as on Glue."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pyspark.sql import functions as F

from glue_jobs import activity_rollups
from glue_jobs.catalog import JsonFileCatalog
from glue_jobs.compaction_run import CompactionSettings, compact
from glue_jobs.layout import LOCAL_CATALOG_KEY
from glue_jobs.rollups import UNKNOWN_OWNER
from hdfs_events.event import EventType, HdfsEvent, INodeType, MetadataType
from hdfs_events.lake_layout import ACTIVITY_PREFIX, MASS_DELETES_PREFIX
from tests.integration.glue.frames import assert_frames_equal
from tests.integration.glue.lake import RawLake
from tests.integration.glue.rollup_outputs import ACTIVITY_SCHEMA, MASS_DELETE_SCHEMA, read_table

pytestmark = pytest.mark.slow
C = "c1"
DAY13_10H = int(datetime(2015, 1, 13, 10, tzinfo=UTC).timestamp() * 1000)
DAY14_10H = int(datetime(2015, 1, 14, 10, tzinfo=UTC).timestamp() * 1000)
DAY14_12H = int(datetime(2015, 1, 14, 12, tzinfo=UTC).timestamp() * 1000)


def create(txid, path, owner, ts, inode=INodeType.FILE):
    return HdfsEvent(C, txid, 0, EventType.CREATE, path, timestamp=ts, inode_type=inode,
                     ctime=ts, owner=owner, group="hadoop", perms="0644")


def close(txid, path, size, ts, index=0):
    return HdfsEvent(C, txid, index, EventType.CLOSE, path, timestamp=ts, size=size)


def unlink(txid, path, ts, index=0):
    return HdfsEvent(C, txid, index, EventType.UNLINK, path, timestamp=ts)


def at(txid: int) -> int:
    return DAY14_10H + txid * 1000


# Day 13 holds the CREATE that names the owner of a file deleted on day 14.
EVENTS = [
    create(1, "/data/a/old.csv", "alice", DAY13_10H),
    create(10, "/data/a/f1", "alice", at(10)),
    close(11, "/data/a/f1", 500, at(11)),                        # small (< 1000)
    create(12, "/data/a/f2", "alice", at(12)),
    close(13, "/data/a/f2", 5000, at(13)),
    create(14, "/data/b/tmp/g1", "bob", at(14)),                 # prefix /data/b at depth 2
    close(15, "/data/b/tmp/g1", 2000, at(15)),
    HdfsEvent(C, 16, 0, EventType.RENAME, "/data/b/tmp/g1", dst_path="/data/b/g1",
              timestamp=at(16)),
    unlink(17, "/data/b/g1", at(17)),                            # bob, through the rename
    unlink(18, "/data/a/old.csv", at(18)),                       # alice, from day 13
    unlink(19, "/data/x/unknown", at(19)),                       # created before the lake
    create(20, "/data/a/dir", "alice", at(20), INodeType.DIRECTORY),
    unlink(21, "/data/a/dir", at(21)),                           # a directory: no file deleted
    # A concat: APPEND f1, UNLINK its source, CLOSE f1 with -1 (no bytes counted).
    HdfsEvent(C, 22, 0, EventType.APPEND, "/data/a/f1", new_block=False),
    unlink(22, "/data/a/src", at(22), index=1),
    close(22, "/data/a/f1", -1, at(22), index=2),
    HdfsEvent(C, 23, 0, EventType.METADATA, "/data/a/f2", metadata_type=MetadataType.OWNER,
              owner="carol", group="hadoop"),
    unlink(24, "/data/a/f2", at(24)),                            # carol since tx 23
    *[unlink(30 + i, f"/tmp/m/x{i}", DAY14_12H + i * 1000) for i in range(4)],
]

#  prefix    owner        created deleted renamed bytes small net overwritten replaced
#                                                                  bytes_deleted truncated
EXPECTED_DAY14 = [
    ("/data/a", "alice",          2, 1, 0, 5500, 1, 1, 0, 0, 0, 0),  # old.csv: never closed
    ("/data/a", "carol",          0, 1, 0, 0, 0, -1, 0, 0, 5000, 0),  # f2's 5000 bytes
    ("/data/a", UNKNOWN_OWNER,    0, 1, 0, 0, 0, -1, 0, 0, 0, 0),
    ("/data/b", "bob",            1, 1, 1, 2000, 0, 0, 0, 0, 2000, 0),  # g1, after its move
    ("/data/x", UNKNOWN_OWNER,    0, 1, 0, 0, 0, -1, 0, 0, 0, 0),
    ("/tmp/m", UNKNOWN_OWNER,     0, 4, 0, 0, 0, -4, 0, 0, 0, 0),
]


@pytest.fixture(scope="module")
def rolled_up(spark, s3) -> RawLake:
    """The hand-checked events compacted, then rolled up (every day) once for the module."""
    lake = RawLake(s3)
    lake.write_message("m1", EVENTS, sent_ms=DAY14_12H)
    store = lake.store
    compact(spark, store, store, JsonFileCatalog(store, LOCAL_CATALOG_KEY), CompactionSettings())
    activity_rollups.main(["--source", lake.uri, "--target", lake.uri,
                           "--small_file_bytes", "1000", "--mass_delete_threshold", "4",
                           "--mass_delete_window_minutes", "10"], spark=spark)
    return lake


def test_daily_activity_matches_the_hand_checked_figures(spark, rolled_up):
    got = read_table(spark, rolled_up.spark_uri(ACTIVITY_PREFIX), ACTIVITY_SCHEMA)
    expected = spark.createDataFrame(
        [(C, *row, "2015-01-14") for row in EXPECTED_DAY14]
        + [(C, "/data/a", "alice", 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, "2015-01-13")],
        ACTIVITY_SCHEMA)
    assert_frames_equal(got, expected)


def test_mass_delete_windows_over_the_threshold_are_flagged(spark, rolled_up):
    got = read_table(spark, rolled_up.spark_uri(MASS_DELETES_PREFIX), MASS_DELETE_SCHEMA)
    start, end = datetime(2015, 1, 14, 12, 0), datetime(2015, 1, 14, 12, 10)
    # /data/a between 10:00 and 10:10: 4 UNLINKs (tx 18, 21, 22, 24) but 1 + 0 (an empty
    # directory) + 1 + 1 = 3 files removed: under the threshold of 4.
    expected = spark.createDataFrame([
        (C, "owner", UNKNOWN_OWNER, start, end, 4, 30, 33, 0, 4, 0, "/tmp/m/x0", None, 4,
         "2015-01-14"),
        (C, "prefix", "/tmp/m", start, end, 4, 30, 33, 0, 4, 0, "/tmp/m/x0", None, 4,
         "2015-01-14"),
    ], MASS_DELETE_SCHEMA)
    assert_frames_equal(got, expected)


def test_a_day_range_rolls_up_only_those_days(spark, rolled_up, s3):
    out = RawLake(s3, "out")
    activity_rollups.main(["--source", rolled_up.uri, "--target", out.uri,
                           "--from_dt", "2015-01-14", "--to_dt", "2015-01-14"], spark=spark)
    got = read_table(spark, out.spark_uri(ACTIVITY_PREFIX), ACTIVITY_SCHEMA)
    assert {r["dt"] for r in got.select("dt").distinct().collect()} == {"2015-01-14"}
    # Owners still come from the earlier day's CREATE: old.csv's delete is alice's.
    alice = got.where((F.col("owner") == "alice") & (F.col("prefix") == "/data/a")).collect()
    assert [(r["files_created"], r["files_deleted"]) for r in alice] == [(2, 1)]
