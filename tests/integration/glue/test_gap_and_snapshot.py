"""GAP and SNAPSHOT records (the live agent's, docs/contract.md) through the Glue jobs on a local
SparkSession: compaction keeps them exactly once like any record, lake data written before the
contract gained `gap_end_txid` still reads (null), and the rollups count neither as activity
but report gaps in gaps_daily and take owners from snapshots."""

from __future__ import annotations

import contextlib
import dataclasses
import gzip
import io
import json
from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

from glue_jobs import activity_rollups
from glue_jobs.catalog import JsonFileCatalog
from glue_jobs.compaction_run import CompactionReport, CompactionSettings, compact
from glue_jobs.curated_io import location_key, read_curated
from glue_jobs.layout import LOCAL_CATALOG_KEY, QUARANTINE_GLUE_PREFIX
from glue_jobs.schema import ADDED_FIELDS
from hdfs_events.event import EventType, HdfsEvent, INodeType
from hdfs_events.lake_layout import ACTIVITY_PREFIX, GAPS_PREFIX, MASS_DELETES_PREFIX
from tests.integration.glue.frames import assert_frames_equal, curated_frame
from tests.integration.glue.generated_events import generated_events
from tests.integration.glue.lake import JAN_13_2015_MS, RawLake, partition_of
from tests.integration.glue.rollup_outputs import ACTIVITY_SCHEMA, GAPS_SCHEMA, read_table

pytestmark = pytest.mark.slow
C = "c1"
SENT = JAN_13_2015_MS + 8 * 3_600_000
DETECTED = JAN_13_2015_MS + 9 * 3_600_000  # the agent's clock when it found the gap


def run(spark, lake: RawLake, **overrides) -> CompactionReport:
    store = lake.store
    return compact(spark, store, store, JsonFileCatalog(store, LOCAL_CATALOG_KEY),
                   dataclasses.replace(CompactionSettings(), **overrides))


def curated(spark, lake: RawLake):
    store = lake.store
    return read_curated(spark, JsonFileCatalog(store, LOCAL_CATALOG_KEY).locations())


def dt_of(e: HdfsEvent, sent_ms: int = SENT) -> str:
    return partition_of(e.timestamp if e.timestamp is not None else sent_ms)[0]


def gap(txid: int, end: int, ts: int = DETECTED) -> HdfsEvent:
    return HdfsEvent(C, txid, 0, EventType.GAP, "/", timestamp=ts, gap_end_txid=end)


def snap(txid: int, index: int, path: str, owner: str, inode: INodeType, ts: int,
         size: int | None = None) -> HdfsEvent:
    return HdfsEvent(C, txid, index, EventType.SNAPSHOT, path, timestamp=ts, inode_type=inode,
                     owner=owner, group="hadoop",
                     perms="0755" if inode == INodeType.DIRECTORY else "0644",
                     mtime=ts - 60_000, atime=ts - 60_000, size=size,
                     replication=3 if inode == INodeType.FILE else None)


def listing(txid: int, ts: int, n: int) -> list[HdfsEvent]:
    """A snapshot of /data/s: the directory, then n files, parents first."""
    return [snap(txid, 0, "/data/s", "etl", INodeType.DIRECTORY, ts)] + [
        snap(txid, i, f"/data/s/part-{i:05d}", "etl", INodeType.FILE, ts, size=100 * i)
        for i in range(1, n + 1)]


def test_gap_and_snapshot_records_are_compacted_exactly_once(spark, lake):
    events = generated_events(C, count=200, start_ms=JAN_13_2015_MS, span_ms=6 * 3_600_000)
    the_gap = gap(events[-1].txid + 100, events[-1].txid + 900)
    snapshot = listing(events[-1].txid + 1000, DETECTED + 1_000, 30)
    lake.write_message("m1", events, sent_ms=SENT)
    lake.write_message("m2", [the_gap], sent_ms=DETECTED)
    lake.write_message("m3", snapshot[:20], sent_ms=DETECTED)
    # The agent restarted mid-snapshot: it meets the same gap again (same key) and re-lists.
    lake.write_message("m4", [the_gap], sent_ms=DETECTED + 60_000)
    lake.write_message("m5", snapshot, sent_ms=DETECTED + 60_000)

    report = run(spark, lake)

    expected = [*events, the_gap, *snapshot]
    assert (report.events_added, report.duplicates_dropped) == (len(expected), 21)
    assert report.quarantined_lines == 0
    assert_frames_equal(curated(spark, lake), curated_frame(spark, [(e, dt_of(e))
                                                                    for e in expected]))
    row = curated(spark, lake).where(F.col("type") == "GAP").collect()
    assert [(r["txid"], r["gap_end_txid"], r["path"]) for r in row] == [
        (the_gap.txid, the_gap.gap_end_txid, "/")]


def test_raw_lines_written_before_gap_end_txid_existed_compact_with_null(spark, lake,
                                                                         sample_events):
    old_lines = [json.dumps({k: v for k, v in e.to_dict().items() if k != "gap_end_txid"},
                            separators=(",", ":")) for e in sample_events]
    assert all('"gap_end_txid"' not in line for line in old_lines)
    lake.write_lines(C, "2015-01-13", "07", "before-the-contract-change", old_lines)

    report = run(spark, lake)

    assert (report.events_added, report.quarantined_lines) == (len(sample_events), 0)
    assert_frames_equal(curated(spark, lake),
                        curated_frame(spark, [(e, dt_of(e)) for e in sample_events]))


def _parquet_schemas(lake: RawLake, location: str) -> list[pa.Schema]:
    keys = [k for k in lake.keys(location_key(lake.store, location) or "?")
            if k.endswith(".parquet")]
    return [pq.read_schema(pa.BufferReader(lake.read(k))) for k in keys]


def _drop_columns_in_place(lake: RawLake, location: str, columns: tuple[str, ...]) -> list[str]:
    """Rewrites a published partition's Parquet objects as the job wrote them before the
    contract had `columns`."""
    keys = [k for k in lake.keys(location_key(lake.store, location) or "?")
            if k.endswith(".parquet")]
    for key in keys:
        table = pq.read_table(pa.BufferReader(lake.read(key)))
        out = pa.BufferOutputStream()
        pq.write_table(table.drop(list(columns)), out, compression="zstd")
        lake.store.write_bytes(key, out.getvalue().to_pybytes())
    return keys


def test_curated_files_written_before_the_added_fields_existed_still_read_and_merge(
        spark, lake, sample_events):
    first, late = sample_events[:16], sample_events[16:]
    lake.write_message("m1", first, sent_ms=SENT)
    run(spark, lake)
    store = lake.store
    (location,) = JsonFileCatalog(store, LOCAL_CATALOG_KEY).locations().values()
    # gap_end_txid, then children_num: files from before each lack it.
    assert _drop_columns_in_place(lake, location, ADDED_FIELDS)
    assert all(not set(ADDED_FIELDS) & set(s.names) for s in _parquet_schemas(lake, location))

    # A reader of the table sees the old files with the new columns, null.
    assert_frames_equal(curated(spark, lake),
                        curated_frame(spark, [(e, dt_of(e)) for e in first]))

    # Late data for the same day, a GAP among it: the partition is recompacted, old rows merged.
    the_gap = gap(90, 400, ts=JAN_13_2015_MS + 7 * 3_600_000 + 60_000)
    lake.write_message("m2", [*late, the_gap], sent_ms=SENT)
    report = run(spark, lake)

    assert (report.events_added, report.partitions_published) == (len(late) + 1, 1)
    assert_frames_equal(curated(spark, lake), curated_frame(
        spark, [(e, dt_of(e)) for e in [*sample_events, the_gap]]))
    (new_location,) = JsonFileCatalog(store, LOCAL_CATALOG_KEY).locations().values()
    new_schemas = _parquet_schemas(lake, new_location)
    assert new_schemas and all(tuple(s.names[-len(ADDED_FIELDS):]) == ADDED_FIELDS
                               for s in new_schemas)


def test_a_gap_without_a_later_end_and_a_snapshot_without_inode_type_are_quarantined(
        spark, lake):
    good = gap(100, 200)
    no_end = json.dumps({**good.to_dict(), "txid": 300, "gap_end_txid": None})
    backwards = json.dumps({**good.to_dict(), "txid": 301, "gap_end_txid": 250})
    bad_snap = json.dumps({**snap(400, 0, "/d", "etl", INodeType.DIRECTORY, DETECTED).to_dict(),
                           "inode_type": None})
    dt, hour = partition_of(DETECTED)
    lake.write_lines(C, dt, hour, "agent-records", [good.to_json(), no_end, backwards, bad_snap])

    report = run(spark, lake)

    assert (report.events_added, report.quarantined_lines) == (1, 3)
    lines = [k for k in lake.keys(QUARANTINE_GLUE_PREFIX + "lines/") if k.endswith(".json.gz")]
    reasons = {json.loads(x)["line"]: json.loads(x)["reason"]
               for k in lines for x in gzip.decompress(lake.read(k)).decode().splitlines()}
    assert reasons == {no_end: "a GAP needs 'gap_end_txid' > txid 300, got None",
                       backwards: "a GAP needs 'gap_end_txid' > txid 301, got 250",
                       bad_snap: "a SNAPSHOT needs 'inode_type'"}


# --- rollups -----------------------------------------------------------------------------------

DAY14_10H = int(datetime(2015, 1, 14, 10, tzinfo=UTC).timestamp() * 1000)


def at(minute: int) -> int:
    return DAY14_10H + minute * 60_000


def create(txid: int, path: str, owner: str, ts: int) -> HdfsEvent:
    return HdfsEvent(C, txid, 0, EventType.CREATE, path, timestamp=ts,
                     inode_type=INodeType.FILE, ctime=ts, owner=owner, group="hadoop",
                     perms="0644")


def close(txid: int, path: str, size: int, ts: int) -> HdfsEvent:
    return HdfsEvent(C, txid, 0, EventType.CLOSE, path, timestamp=ts, size=size)


def unlink(txid: int, path: str, ts: int) -> HdfsEvent:
    return HdfsEvent(C, txid, 0, EventType.UNLINK, path, timestamp=ts)


SNAPSHOT_FILES = 200
ROLLUP_EVENTS = [
    create(10, "/data/a/f1", "alice", at(0)),
    close(11, "/data/a/f1", 500, at(1)),                       # small (< 1000)
    # Edits 12..99 purged: among them bob created /data/b/lost.csv and the directory /data/b/old.
    gap(12, 100, ts=at(20)),
    # The snapshot at T = 150: a listing of /data, parents first; 200 files of carol's included.
    *[snap(150, i, p, o, t, at(21), size=s) for i, (p, o, t, s) in enumerate([
        ("/data", "hdfs", INodeType.DIRECTORY, None),
        ("/data/a", "alice", INodeType.DIRECTORY, None),
        ("/data/a/f1", "alice", INodeType.FILE, 500),
        ("/data/b", "bob", INodeType.DIRECTORY, None),
        ("/data/b/lost.csv", "bob", INodeType.FILE, 7000),
        ("/data/b/old", "bob", INodeType.DIRECTORY, None),
        ("/data/c", "carol", INodeType.DIRECTORY, None),
        *[(f"/data/c/part-{i:05d}", "carol", INodeType.FILE, 10) for i in range(SNAPSHOT_FILES)],
    ])],
    unlink(151, "/data/b/lost.csv", at(25)),                   # bob's, known only from the snapshot
    unlink(152, "/data/b/old", at(26)),                        # a directory: no file deleted
    create(153, "/data/c/new", "carol", at(27)),
    close(154, "/data/c/new", 2000, at(28)),
]


@pytest.fixture(scope="module")
def rolled_up(spark, s3) -> tuple[RawLake, dict]:
    lake = RawLake(s3)
    lake.write_message("m1", ROLLUP_EVENTS, sent_ms=at(30))
    run(spark, lake)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        activity_rollups.main(["--source", lake.uri, "--target", lake.uri,
                               "--small_file_bytes", "1000", "--mass_delete_threshold", "2",
                               "--mass_delete_bytes_threshold", "7000",
                               "--mass_delete_window_minutes", "10"], spark=spark)
    return lake, json.loads(out.getvalue().strip().splitlines()[-1])


def test_snapshot_and_gap_records_are_not_activity_but_snapshots_name_owners(spark,
                                                                            rolled_up):
    lake, _ = rolled_up
    got = read_table(spark, lake.spark_uri(ACTIVITY_PREFIX), ACTIVITY_SCHEMA)
    #  prefix    owner     created deleted renamed bytes small net overwritten replaced
    #                                                           bytes_deleted truncated
    expected = [
        ("/data/a", "alice",  1, 0, 0, 500, 1, 1, 0, 0, 0, 0),
        # lost.csv, of the snapshot's size; the directory old held no file
        ("/data/b", "bob",    0, 1, 0, 0, 0, -1, 0, 0, 7000, 0),
        ("/data/c", "carol",  1, 0, 0, 2000, 0, 1, 0, 0, 0, 0),  # not 1 + 200 snapshot records
    ]
    assert_frames_equal(got, spark.createDataFrame(
        [(C, *row, "2015-01-14") for row in expected], ACTIVITY_SCHEMA))


def test_mass_deletes_see_only_unlinks_with_owners_from_the_snapshot(spark, rolled_up):
    lake, _ = rolled_up
    got = spark.read.parquet(lake.spark_uri(MASS_DELETES_PREFIX))
    # 2 UNLINKs, 1 file (the directory held none) under the threshold of 2 files, but its
    # 7000 bytes (the snapshot's size) reach the bytes threshold of 7000.
    assert sorted((r["scope"], r["subject"], r["unlinks"], r["first_txid"], r["last_txid"],
                   r["files_removed"], r["bytes_removed"]) for r in got.collect()) == [
        ("owner", "bob", 2, 151, 152, 1, 7000), ("prefix", "/data/b", 2, 151, 152, 1, 7000)]


def test_gaps_daily_says_how_many_txids_the_day_lost(spark, rolled_up):
    lake, printed = rolled_up
    got = read_table(spark, lake.spark_uri(GAPS_PREFIX), GAPS_SCHEMA)
    snapshot_records = sum(e.type == EventType.SNAPSHOT for e in ROLLUP_EVENTS)
    assert snapshot_records == SNAPSHOT_FILES + 7
    assert_frames_equal(got, spark.createDataFrame(
        [(C, 1, 88, 12, 99, snapshot_records, "2015-01-14")], GAPS_SCHEMA))
    assert (printed["gaps"], printed["lost_txids"]) == (1, 88)
