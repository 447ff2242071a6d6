"""The scheduled rollups run recomputes only the days compaction marked: compaction and rollups
run in turn on one lake (through S3A on moto), as the Glue workflow runs them, and the result
is checked against a full recompute by hand of the same lake.

Three days, D1..D3, with a 7-minute mass-delete window (7 does not divide a day: the window
23:56-00:03 crosses into D3) and CREATEs of D1 that arrive only after D3 was rolled up. Then a
fourth run, after more events of D3, starts from the owner state after D1 that the third wrote
while D1's curated files are away: it reads nothing older, and its rows still equal a full
recompute's.
"""

from __future__ import annotations

import contextlib
import io
import json
from dataclasses import dataclass
from datetime import datetime

import pytest

from glue_jobs import activity_rollups, rollup_days
from glue_jobs.catalog import JsonFileCatalog
from glue_jobs.compaction_run import CompactionSettings, compact
from glue_jobs.layout import LOCAL_CATALOG_KEY, STATE_PREFIX
from glue_jobs.rollups import UNKNOWN_OWNER
from hdfs_events.event import EventType, HdfsEvent, INodeType
from hdfs_events.lake_layout import ACTIVITY_PREFIX, EVENTS_PREFIX, MASS_DELETES_PREFIX, partition_prefix
from tests.integration.glue.frames import assert_frames_equal
from tests.integration.glue.lake import RawLake
from tests.integration.glue.rollup_outputs import ACTIVITY_SCHEMA, MASS_DELETE_SCHEMA, read_table

pytestmark = pytest.mark.slow
C = "c1"
D1, D2, D3 = "2015-01-11", "2015-01-12", "2015-01-13"
WINDOW = ["--mass_delete_window_minutes", "7", "--mass_delete_threshold", "4"]


def ms(day: str, hh: int, mm: int) -> int:
    return int(datetime.fromisoformat(f"{day}T{hh:02d}:{mm:02d}:00+00:00").timestamp() * 1000)


def create(txid: int, path: str, owner: str, ts: int) -> HdfsEvent:
    return HdfsEvent(C, txid, 0, EventType.CREATE, path, timestamp=ts, inode_type=INodeType.FILE,
                     ctime=ts, owner=owner, group="hadoop", perms="0644")


def close(txid: int, path: str, ts: int) -> HdfsEvent:
    return HdfsEvent(C, txid, 0, EventType.CLOSE, path, timestamp=ts, size=100)


def unlink(txid: int, path: str, ts: int) -> HdfsEvent:
    return HdfsEvent(C, txid, 0, EventType.UNLINK, path, timestamp=ts)


def rename(txid: int, path: str, dst: str, ts: int) -> HdfsEvent:
    return HdfsEvent(C, txid, 0, EventType.RENAME, path, dst_path=dst, timestamp=ts)


FIRST = [  # D1 and D2, up to two unlinks in the window 23:56-00:03 that crosses into D3
    create(1, "/data/a/f1", "alice", ms(D1, 9, 0)), close(2, "/data/a/f1", ms(D1, 9, 1)),
    create(20, "/data/b/g1", "bob", ms(D2, 9, 0)), close(21, "/data/b/g1", ms(D2, 9, 1)),
    unlink(22, "/data/a/f1", ms(D2, 10, 0)),                       # alice's, from D1
    unlink(23, "/tmp/m/x0", ms(D2, 23, 57)), unlink(24, "/tmp/m/x1", ms(D2, 23, 58)),
]
SECOND = [  # D3 only: two more unlinks in that window, and an unlink of a file of no known owner
    unlink(40, "/tmp/m/x2", ms(D3, 0, 1)), unlink(41, "/tmp/m/x3", ms(D3, 0, 2)),
    create(42, "/data/c/h1", "dave", ms(D3, 9, 0)), close(43, "/data/c/h1", ms(D3, 9, 1)),
    unlink(44, "/data/x/old", ms(D3, 10, 0)),
]
LATE = [  # D1's CREATE of D3's /data/x/old, and D1's facts of every kind the owner state keeps
    create(5, "/data/x/old", "carol", ms(D1, 12, 0)),
    create(6, "/data/v/s", "gina", ms(D1, 12, 1)),                          # direct
    create(7, "/data/u/f._COPYING_", "frank", ms(D1, 12, 2)),
    rename(8, "/data/u/f._COPYING_", "/data/u/f", ms(D1, 12, 3)),          # uploaded
    create(9, "/data/y/a", "erin", ms(D1, 12, 4)),
    rename(10, "/data/y/a", "/data/w/b", ms(D1, 12, 5)),                   # moved
    create(11, "/data/y/a2", "erin", ms(D1, 12, 6)),
    rename(12, "/data/y/a2", "/data/w/b2", ms(D1, 12, 7)),                 # moved
]
FOURTH = [  # D3, after the third run: events whose owners only D1's facts name
    rename(60, "/data/v/s", "/data/v2/t", ms(D3, 13, 0)), unlink(61, "/data/v2/t", ms(D3, 13, 1)),
    rename(62, "/data/u/f", "/data/u2/g", ms(D3, 13, 2)), unlink(63, "/data/u2/g", ms(D3, 13, 3)),
    unlink(64, "/data/w/b2", ms(D3, 13, 4)),
    # A moved file moved again: one hop only, so the second destination's owner is unknown.
    rename(65, "/data/w/b", "/data/w2/c", ms(D3, 13, 5)), unlink(66, "/data/w2/c", ms(D3, 13, 6)),
]


@dataclass(frozen=True, slots=True)
class Step:
    report: dict  # the rollups job's JSON report
    activity_files: dict[str, list[str]]  # dt -> the activity_daily objects after the run


def rollups_run(spark, lake: RawLake, *args: str) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        activity_rollups.main(["--source", lake.uri, "--target", lake.uri, *WINDOW, *args],
                              spark=spark)
    return json.loads(out.getvalue().strip().splitlines()[-1])


def compaction_run(spark, lake: RawLake) -> None:
    store = lake.store
    compact(spark, store, store, JsonFileCatalog(store, LOCAL_CATALOG_KEY), CompactionSettings())


def activity_files(lake: RawLake) -> dict[str, list[str]]:
    files: dict[str, list[str]] = {}
    for key in lake.keys(ACTIVITY_PREFIX):
        dt = key[len(ACTIVITY_PREFIX):].split("/", 1)[0].removeprefix("dt=")
        files.setdefault(dt, []).append(key)
    return files


def full_recompute(spark, lake: RawLake, s3) -> tuple[RawLake, dict]:
    """Every day rolled up by hand into a lake of its own."""
    full = RawLake(s3, "full")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        activity_rollups.main(["--source", lake.uri, "--target", full.uri, *WINDOW,
                               "--from_dt", "2015-01-01"], spark=spark)
    return full, json.loads(out.getvalue().strip().splitlines()[-1])


@contextlib.contextmanager
def away(lake: RawLake, prefix: str):
    """The objects under `prefix` moved out of the lake's bucket for the block, then back."""
    keys = lake.keys(prefix)
    aside = f"{lake.bucket}-aside"
    lake.s3.create_bucket(Bucket=aside, CreateBucketConfiguration={
        "LocationConstraint": lake.s3.meta.region_name})
    for key in keys:
        lake.s3.copy_object(Bucket=aside, Key=key, CopySource={"Bucket": lake.bucket, "Key": key})
    lake.store.delete_prefix(prefix)
    try:
        yield keys
    finally:
        for key in keys:
            lake.s3.copy_object(Bucket=lake.bucket, Key=key,
                                CopySource={"Bucket": aside, "Key": key})


@pytest.fixture(scope="module")
def steps(spark, s3) -> tuple[RawLake, dict[str, object]]:
    """compaction, rollups; compaction (D3), rollups; late CREATEs: compaction, a rollups run
    that fails, a rollups run that succeeds; more of D3: compaction, a full recompute by hand,
    a rollups run without D1's files. What each step left is recorded."""
    lake = RawLake(s3)
    seen: dict[str, object] = {}
    lake.write_message("m1", FIRST, sent_ms=ms(D2, 23, 59))
    compaction_run(spark, lake)
    seen["marked_1"] = rollup_days.pending(lake.store).partitions
    seen["first"] = Step(rollups_run(spark, lake), activity_files(lake))
    seen["marked_after_first"] = rollup_days.pending(lake.store).partitions

    lake.write_message("m2", SECOND, sent_ms=ms(D3, 11, 0))
    compaction_run(spark, lake)
    seen["second"] = Step(rollups_run(spark, lake), activity_files(lake))

    lake.write_message("m3", LATE, sent_ms=ms(D3, 12, 0))
    compaction_run(spark, lake)
    # The writes fail (no directory can be made under /proc); Spark raises its own error type.
    with pytest.raises(Exception) as failed:
        activity_rollups.main(["--source", lake.uri, "--target", "file:///proc/no-lake",
                               *WINDOW], spark=spark)
    seen["failure"] = str(failed.value)
    seen["marked_after_failure"] = rollup_days.pending(lake.store).partitions
    seen["states_after_failure"] = rollup_days.owner_states(lake.store)
    seen["third"] = Step(rollups_run(spark, lake), activity_files(lake))
    seen["marked_after_third"] = rollup_days.pending(lake.store).partitions
    seen["states_after_third"] = rollup_days.owner_states(lake.store)

    lake.write_message("m4", FOURTH, sent_ms=ms(D3, 14, 0))
    compaction_run(spark, lake)
    seen["full"], seen["full_report"] = full_recompute(spark, lake, s3)
    # The fourth run reads D2 on (a 7-minute window reaches back a day) and the state after D1:
    # without D1's files it still gives the full recompute's rows, or fails reading them.
    with away(lake, partition_prefix(EVENTS_PREFIX, C, D1)) as hidden:
        seen["hidden"] = hidden
        seen["fourth"] = Step(rollups_run(spark, lake), activity_files(lake))
    return lake, seen


def test_compaction_marks_the_partitions_it_published(steps):
    _, seen = steps
    assert seen["marked_1"] == {(C, D1), (C, D2)}
    assert seen["marked_after_first"] == frozenset()


def test_a_second_compaction_makes_the_next_run_recompute_its_day_only(steps):
    _, seen = steps
    first, second = seen["first"], seen["second"]
    assert first.report["days"] == [D1, D2]
    assert second.report["days"] == [D3]
    # The window 23:56-00:03 starts on D2: D2's mass deletes are rewritten, its activity is not.
    assert second.report["mass_delete_days"] == [D2, D3]
    assert second.report["history_days"] == 1  # D1: owner facts only (no owner state yet)
    assert second.report["owner_state"] == ""
    for dt in (D1, D2):
        assert second.activity_files[dt] == first.activity_files[dt]


def test_a_window_across_midnight_counts_the_unlinks_of_both_days(spark, steps):
    lake, _ = steps
    got = read_table(spark, lake.spark_uri(MASS_DELETES_PREFIX), MASS_DELETE_SCHEMA)
    assert sorted((r["dt"], r["scope"], r["subject"], r["unlinks"], r["first_txid"],
                   r["last_txid"]) for r in got.collect()) == [
        (D2, "owner", UNKNOWN_OWNER, 4, 23, 41), (D2, "prefix", "/tmp/m", 4, 23, 41)]


def test_a_failed_run_leaves_the_days_marked_and_the_next_run_rolls_them_up(steps):
    _, seen = steps
    assert "/proc/no-lake" in seen["failure"]
    assert seen["marked_after_failure"] == {(C, D1)}
    # The late CREATE names the owner of D3's unlink: every day from D1 on is recomputed.
    assert seen["third"].report["days"] == [D1, D2, D3]
    assert seen["third"].report["marks_cleared"] == 1
    assert seen["marked_after_third"] == frozenset()


def test_the_late_create_names_the_owner_of_a_later_days_unlink(spark, steps):
    lake, _ = steps
    got = read_table(spark, lake.spark_uri(ACTIVITY_PREFIX), ACTIVITY_SCHEMA)
    rows = {(r["dt"], r["owner"]): (r["files_created"], r["files_deleted"])
            for r in got.where("prefix = '/data/x'").collect()}
    assert rows == {(D1, "carol"): (1, 0), (D3, "carol"): (0, 1)}  # no (unknown) row left


def test_late_data_for_a_day_drops_the_owner_states_after_it(steps):
    _, seen = steps
    # The second run wrote the state after D1 (its newest day D3, less a day, less the
    # window's reach); the late CREATEs of D1 made it stale: the run that failed writing
    # dropped it before its first write, and the next one wrote it anew.
    assert seen["second"].report["owner_state_written"] == D1
    assert seen["states_after_failure"] == ()
    assert seen["third"].report["owner_state_written"] == D1
    assert seen["states_after_third"] == (D1,)


def test_a_run_from_an_owner_state_reads_no_older_day(steps):
    _, seen = steps
    report = seen["fourth"].report
    assert seen["hidden"]  # D1's curated files were away during the run
    assert (report["days"], report["owner_state"], report["history_days"]) == ([D3], D1, 0)
    assert report["owner_state_written"] == ""  # the state after D1 is still the one to keep


def test_owners_named_only_by_the_owner_state_are_attributed(spark, steps):
    lake, _ = steps
    got = read_table(spark, lake.spark_uri(ACTIVITY_PREFIX), ACTIVITY_SCHEMA)
    rows = {(r["prefix"], r["owner"]): (r["files_renamed"], r["files_deleted"])
            for r in got.where(f"dt = '{D3}' AND prefix RLIKE '^/data/(v|u|w)'").collect()}
    assert rows == {
        ("/data/v", "gina"): (1, 0), ("/data/v2", "gina"): (0, 1),       # a direct fact
        ("/data/u", "frank"): (1, 0), ("/data/u2", "frank"): (0, 1),     # an upload's end
        ("/data/w", "erin"): (1, 1),                                     # a rename's destination
        ("/data/w2", UNKNOWN_OWNER): (0, 1),                             # no second hop
    }


def test_the_runs_together_equal_a_full_recompute_by_hand(spark, steps):
    lake, seen = steps
    full = seen["full"]
    # By hand: the marks stay where they are and nothing is cleared, no owner state touched.
    assert seen["full_report"]["marks_cleared"] == 0
    assert (seen["full_report"]["owner_state"], seen["full_report"]["owner_state_written"],
            seen["full_report"]["owner_states_dropped"]) == ("", "", [])
    for prefix, schema in ((ACTIVITY_PREFIX, ACTIVITY_SCHEMA),
                           (MASS_DELETES_PREFIX, MASS_DELETE_SCHEMA)):
        assert_frames_equal(read_table(spark, lake.spark_uri(prefix), schema),
                            read_table(spark, full.spark_uri(prefix), schema))


def test_a_compaction_that_crashed_before_its_watermark_marks_the_days_again(spark, steps):
    lake, _ = steps
    # As after a crash between the catalog switch and the watermark: the objects of D3 are
    # read again, every key is curated already, nothing is published, yet D3 is owed.
    lake.store.delete_prefix(f"{STATE_PREFIX}cluster={C}/dt={D3}.json")
    compaction_run(spark, lake)
    assert rollup_days.pending(lake.store).partitions == {(C, D3)}
