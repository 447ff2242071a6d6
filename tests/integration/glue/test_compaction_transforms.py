"""Each transform of glue_jobs.compaction on a small frame with an explicit schema."""

from __future__ import annotations

import gzip

from pyspark.sql import functions as F
from pyspark.sql import types as T

from glue_jobs.compaction import (
    EMPTY_OBJECT,
    NOT_UTF8,
    bad_lines,
    classify_lines,
    curated_dt,
    dedup_batch,
    good_events,
    line_tally,
    merged_partitions,
    not_yet_curated,
    object_problems,
    partition_counts,
    sorted_for_files,
    with_reasons,
)
from hdfs_events.event import FIELDS, EventType, HdfsEvent, INodeType
from tests.integration.glue.frames import assert_frames_equal, curated_frame, raw_lines

KEY = "raw/cluster=c1/dt=2015-01-13/hour=07/m1.jsonl.gz"


def _lines(spark, *lines: bytes):
    """The lines in partition c1, numbered in the order given (`n`)."""
    return raw_lines(spark, [("c1", x) for x in lines]).withColumn(
        "n", F.monotonically_increasing_id())


def test_a_line_that_is_not_utf8_is_quarantined_alone_and_its_neighbours_kept(spark):
    good = HdfsEvent("c1", 5, 0, EventType.UNLINK, "/a/b", timestamp=1421139600000).to_json()
    broken = good.replace("/a/b", "/a/\udcff").encode("utf-8", "surrogateescape")  # a bare 0xFF
    accented = good.replace("/a/b", "/a/données").replace('"txid":5', '"txid":6').encode()

    parsed = with_reasons(classify_lines(_lines(spark, good.encode(), broken, accented)))

    reasons = parsed.select(F.col("event.txid").alias("txid"), "reason")
    expected = spark.createDataFrame(
        [(5, None), (None, NOT_UTF8), (6, None)],
        T.StructType([T.StructField("txid", T.LongType()), T.StructField("reason", T.StringType())]))
    # The bad line's JSON still parses (Jackson reads the byte), so its txid is no witness.
    assert_frames_equal(reasons.where(F.col("reason").isNull()),
                        expected.where(F.col("reason").isNull()))
    in_order = parsed.orderBy("n").collect()  # the job's lines come in no particular order
    assert [r["reason"] for r in in_order] == [None, NOT_UTF8, None]


def test_bad_lines_name_the_raw_key_not_the_path_spark_read(spark):
    parsed = with_reasons(classify_lines(_lines(spark, b"{not json", b"{}"))).drop("n")

    out = bad_lines(parsed).select("object", "reason")

    expected = spark.createDataFrame(
        [(KEY, "line is not a JSON object"),
         # The contract's own check speaks first, naming the first field it misses.
         (KEY, "missing required field 'cluster'")],
        T.StructType([T.StructField("object", T.StringType()),
                      T.StructField("reason", T.StringType())]))
    assert_frames_equal(out, expected)


# --- whole objects -----------------------------------------------------------------------------

BINARY_FILES = T.StructType([T.StructField("path", T.StringType()),
                             T.StructField("content", T.BinaryType())])


def test_object_problems_name_each_damaged_object_and_pass_the_readable_ones(spark):
    whole = gzip.compress(b'{"a":1}\n' * 50)
    files = spark.createDataFrame([("file:/lake/raw/ok.gz", whole),
                                   ("file:/lake/raw/cut.gz", whole[:len(whole) // 2]),
                                   ("file:/lake/raw/empty.gz", b""),
                                   ("file:/lake/raw/text.gz", b"not gzip at all")], BINARY_FILES)

    problems = {r["path"]: r["problem"] for r in object_problems(files).collect()}

    assert set(problems) == {"file:/lake/raw/cut.gz", "file:/lake/raw/empty.gz",
                             "file:/lake/raw/text.gz"}
    assert problems["file:/lake/raw/cut.gz"] == "gzip stream is truncated (no end of stream)"
    assert problems["file:/lake/raw/empty.gz"] == EMPTY_OBJECT
    assert problems["file:/lake/raw/text.gz"].startswith("not valid gzip")


# --- lines -------------------------------------------------------------------------------------

TS = 1_421_139_600_000  # 2015-01-13T09:00:00Z


def _event(txid: int, **fields) -> HdfsEvent:
    return HdfsEvent(fields.pop("cluster", "c1"), txid, 0, fields.pop("type", EventType.UNLINK),
                     fields.pop("path", "/a/b"), **{"timestamp": TS, **fields})


def test_classify_lines_marks_canonical_lines_of_the_partition_clean_and_drops_blank_ones(spark):
    good = _event(5).to_json()
    spaced = good.replace(",", ", ")  # valid JSON, not canonical: the Python check decides
    other_cluster = _event(6, cluster="c2").to_json()

    out = classify_lines(_lines(spark, good.encode(), b"   ", spaced.encode(),
                                other_cluster.encode())).orderBy("n")

    assert [(r["event"]["txid"], r["_clean"], r["value"]) for r in out.collect()] == [
        (5, True, None),  # a clean line does not keep its text: nothing to quarantine
        (5, False, spaced),
        (6, False, other_cluster),
    ]


def test_with_reasons_accepts_a_valid_line_that_is_not_canonical_and_names_a_wrong_cluster(spark):
    spaced = _event(5).to_json().replace(",", ", ")
    other_cluster = _event(6, cluster="c2").to_json()

    out = with_reasons(classify_lines(_lines(spark, spaced.encode(), other_cluster.encode())))

    reasons = [(r["event"]["txid"], r["reason"], r["value"]) for r in out.orderBy("n").collect()]
    assert reasons == [
        (5, None, None),
        (6, "event of cluster 'c2' in the partition of cluster 'c1'", other_cluster),
    ]
    assert "_clean" not in out.columns


def test_with_reasons_told_all_lines_are_clean_checks_none_of_them_in_python(spark):
    lines = _lines(spark, _event(5).to_json().encode(), _event(6).to_json().encode())

    out = with_reasons(classify_lines(lines), all_clean=True)

    assert sorted((r["event"]["txid"], r["reason"]) for r in out.collect()) == \
        [(5, None), (6, None)]
    # No Python UDF in the plan: a run of clean lines starts no Python worker.
    assert "BatchEvalPython" not in _plan(out)
    assert "BatchEvalPython" in _plan(with_reasons(classify_lines(lines)))


def _plan(frame) -> str:
    return frame._jdf.queryExecution().executedPlan().toString()


PARSED = T.StructType([
    T.StructField("reason", T.StringType()), T.StructField("raw_dt", T.StringType()),
    T.StructField("event", T.StructType([T.StructField("cluster", T.StringType()),
                                         T.StructField("timestamp", T.LongType())]))])


def test_line_tally_counts_bad_lines_and_good_lines_per_curated_partition(spark):
    day = 86_400_000
    parsed = spark.createDataFrame([
        (None, "2015-01-13", ("c1", TS)),
        (None, "2015-01-13", ("c1", TS + 1)),
        (None, "2015-01-13", ("c1", TS + day)),  # the NameNode's day, not the partition's
        (None, "2015-01-13", ("c2", None)),  # no timestamp: the raw partition's day
        ("line is not a JSON object", "2015-01-13", (None, None)),
        ("missing required field 'cluster'", "2015-01-13", (None, TS)),
    ], PARSED)

    out = line_tally(parsed)

    expected = spark.createDataFrame(
        [(True, None, None, 2), (False, "c1", "2015-01-13", 2), (False, "c1", "2015-01-14", 1),
         (False, "c2", "2015-01-13", 1)],
        T.StructType([T.StructField("bad", T.BooleanType()),
                      T.StructField("cluster", T.StringType()),
                      T.StructField("dt", T.StringType()),
                      T.StructField("lines", T.LongType())]))
    assert_frames_equal(out, expected)


def test_good_events_keep_valid_lines_as_curated_rows_with_their_day(spark):
    create = _event(5, type=EventType.CREATE, path="/a/f", inode_type=INodeType.FILE, ctime=TS,
                    owner="alice", group="g", perms="0644", replication=3, overwrite=False,
                    block_size=1, erasure_coded=False).to_json()
    append = HdfsEvent("c1", 6, 0, EventType.APPEND, "/a/f", new_block=False).to_json()
    parsed = with_reasons(classify_lines(_lines(spark, create.encode(), append.encode(),
                                                b"{not json"))).drop("n")

    out = good_events(parsed)

    assert out.columns == ["object", *FIELDS, "dt"]
    rows = sorted((r["txid"], r["type"], r["owner"], r["dt"]) for r in out.collect())
    # APPEND carries no NameNode time: it files under its raw partition's day (the fixture's).
    assert rows == [(5, "CREATE", "alice", "2015-01-13"), (6, "APPEND", None, "2015-01-13")]


def test_curated_dt_is_the_utc_day_whatever_the_session_time_zone(spark):
    frame = spark.createDataFrame(
        [(TS - 9 * 3_600_000 - 1, "2000-01-01"),  # 2015-01-12T23:59:59.999Z
         (TS - 9 * 3_600_000, "2000-01-01"),  # midnight UTC
         (-1, "2000-01-01"),  # 1969-12-31T23:59:59.999Z
         (None, "2015-02-01")],
        T.StructType([T.StructField("timestamp", T.LongType()),
                      T.StructField("raw_dt", T.StringType())]))
    zone = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    try:
        days = [r[0] for r in frame.select(curated_dt(F.col("timestamp"))).collect()]
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)

    assert days == ["2015-01-12", "2015-01-13", "1969-12-31", "2015-02-01"]


# --- exactly once ------------------------------------------------------------------------------

KEYED = T.StructType([T.StructField("cluster", T.StringType()),
                      T.StructField("txid", T.LongType()),
                      T.StructField("index", T.LongType()),
                      T.StructField("dt", T.StringType()),
                      T.StructField("object", T.StringType()),
                      T.StructField("path", T.StringType())])


def test_dedup_batch_keeps_the_earliest_day_then_the_smallest_object_of_each_key(spark):
    events = spark.createDataFrame([
        ("c1", 5, 0, "2015-01-14", "raw/a", "/from-a-day-later"),
        ("c1", 5, 0, "2015-01-13", "raw/c", "/from-c"),
        ("c1", 5, 0, "2015-01-13", "raw/b", "/from-b"),
        ("c1", 5, 1, "2015-01-14", "raw/a", "/other-index"),
        ("c2", 5, 0, "2015-01-14", "raw/a", "/other-cluster"),
    ], KEYED)

    out = dedup_batch(events)

    expected = spark.createDataFrame(
        [("c1", 5, 0, "2015-01-13", "/from-b"), ("c1", 5, 1, "2015-01-14", "/other-index"),
         ("c2", 5, 0, "2015-01-14", "/other-cluster")],
        T.StructType([f for f in KEYED.fields if f.name != "object"]))
    assert_frames_equal(out, expected)


def test_not_yet_curated_drops_keys_published_within_the_lookback_only(spark):
    key_schema = T.StructType([f for f in KEYED.fields if f.name in ("cluster", "txid", "index",
                                                                     "dt")])
    existing = spark.createDataFrame([
        ("c1", 1, 0, "2015-01-12"),  # a day before the new copy: already curated
        ("c1", 2, 0, "2015-01-11"),  # two days before: out of reach, the new copy is kept
        ("c1", 3, 1, "2015-01-13"),  # same txid, other index
        ("c2", 4, 0, "2015-01-13"),  # same txid and index, other cluster
    ], key_schema)
    batch = spark.createDataFrame([("c1", t, 0, "2015-01-13", None, f"/p{t}") for t in (1, 2, 3, 4)],
                                  KEYED)

    out = batch.transform(not_yet_curated(existing, lookback_days=1))

    assert sorted((r["txid"], r["index"]) for r in out.collect()) == [(2, 0), (3, 0), (4, 0)]


def _curated(spark, *rows: tuple[int, str]):
    return curated_frame(spark, [(_event(txid), dt) for txid, dt in rows])


def test_merged_partitions_add_the_published_rows_of_touched_partitions_only(spark):
    fresh = _curated(spark, (10, "2015-01-13"))
    published = _curated(spark, (1, "2015-01-13"), (2, "2015-01-13"), (3, "2015-01-14"))

    out = fresh.transform(merged_partitions(published))

    assert out.columns == [*FIELDS, "dt"]
    assert sorted((r["txid"], r["dt"]) for r in out.collect()) == \
        [(1, "2015-01-13"), (2, "2015-01-13"), (10, "2015-01-13")]


def test_partition_counts_give_new_and_published_rows_per_partition(spark):
    fresh = _curated(spark, (10, "2015-01-13"), (11, "2015-01-13"), (12, "2015-01-15"))
    published = _curated(spark, (1, "2015-01-13"), (2, "2015-01-14"), (3, "2015-01-14"))

    out = fresh.transform(partition_counts(published))

    expected = spark.createDataFrame(
        [("c1", "2015-01-13", 2, 1), ("c1", "2015-01-14", 0, 2), ("c1", "2015-01-15", 1, 0)],
        T.StructType([T.StructField("cluster", T.StringType()),
                      T.StructField("dt", T.StringType()),
                      T.StructField("added", T.LongType()),
                      T.StructField("kept", T.LongType())]))
    assert_frames_equal(out, expected)


def _slices(frame) -> list[list[tuple[str, int]]]:
    """The (dt, txid) rows of each Spark partition, in the order they would be written."""
    rows = frame.select(F.spark_partition_id().alias("p"), "dt", "txid").collect()
    out: dict[int, list[tuple[str, int]]] = {}
    for r in rows:  # collect() keeps partition order, and each partition's row order
        out.setdefault(r["p"], []).append((r["dt"], r["txid"]))
    return [out[p] for p in sorted(out)]


def test_sorted_for_files_cuts_sorted_contiguous_slices(spark):
    rows = _curated(spark, *[(t, "2015-01-13") for t in (9, 3, 7, 1, 5)],
                    *[(t, "2015-01-14") for t in (8, 2, 6, 4)])

    slices = _slices(rows.transform(sorted_for_files(3)))

    assert len(slices) == 3
    assert [r for s in slices for r in s] == sorted(r for s in slices for r in s)


def test_sorted_for_files_with_one_file_per_partition_keeps_each_partition_in_one_slice(spark):
    rows = _curated(spark, *[(t, "2015-01-13") for t in (9, 3, 7)],
                    *[(t, "2015-01-14") for t in (8, 2)], (1, "2015-01-15"))

    slices = _slices(rows.transform(sorted_for_files(3, one_per_partition=True)))

    # Hashing may put two partitions in one slice, never one partition in two (two files).
    assert sorted(r for s in slices for r in s) == sorted(
        [("2015-01-13", t) for t in (9, 3, 7)] + [("2015-01-14", t) for t in (8, 2)]
        + [("2015-01-15", 1)])
    for dt in ("2015-01-13", "2015-01-14", "2015-01-15"):
        assert sum(any(d == dt for d, _ in s) for s in slices) == 1
    assert all(s == sorted(s) for s in slices)
