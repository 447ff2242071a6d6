"""Each transform of glue_jobs.compaction on a small frame with an explicit schema."""

from __future__ import annotations

import gzip

from pyspark.sql import functions as F
from pyspark.sql import types as T

from glue_jobs.compaction import (
    EMPTY_OBJECT,
    NEW,
    NOT_UTF8,
    KeyRanges,
    bad_lines,
    classify_lines,
    curated_dt,
    exactly_once,
    good_events,
    hash_labels,
    line_tally,
    object_problems,
    of_partitions,
    one_file_per_partition,
    spread_hashed,
    spread_in_ranges,
    with_published,
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
                                         T.StructField("timestamp", T.LongType()),
                                         T.StructField("txid", T.LongType())]))])


def test_line_tally_counts_bad_lines_and_good_lines_per_curated_partition(spark):
    day = 86_400_000
    parsed = spark.createDataFrame([
        (None, "2015-01-13", ("c1", TS, 7)),
        (None, "2015-01-13", ("c1", TS + 1, 5)),
        (None, "2015-01-13", ("c1", TS + day, 9)),  # the NameNode's day, not the partition's
        (None, "2015-01-13", ("c2", None, 3)),  # no timestamp: the raw partition's day
        ("line is not a JSON object", "2015-01-13", (None, None, None)),
        ("missing required field 'cluster'", "2015-01-13", (None, TS, 4)),
    ], PARSED)

    tally = line_tally(parsed, F.col("reason").isNotNull())
    out = tally.drop("txids")

    expected = spark.createDataFrame(
        [(True, None, None, 2), (False, "c1", "2015-01-13", 2), (False, "c1", "2015-01-14", 1),
         (False, "c2", "2015-01-13", 1)],
        T.StructType([T.StructField("bad", T.BooleanType()),
                      T.StructField("cluster", T.StringType()),
                      T.StructField("dt", T.StringType()),
                      T.StructField("lines", T.LongType())]))
    assert_frames_equal(out, expected)
    # Quantiles of each partition's good txids, from the first to the last; none for bad lines.
    quantiles = {(r["cluster"], r["dt"]): r["txids"] for r in tally.collect()}
    assert quantiles[("c1", "2015-01-13")][0] == 5 and quantiles[("c1", "2015-01-13")][-1] == 7
    assert set(quantiles[("c1", "2015-01-14")]) == {9}
    assert quantiles[(None, None)] is None


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

def _curated(spark, *rows: tuple[int, str]):
    return curated_frame(spark, [(_event(txid), dt) for txid, dt in rows])


def _new(spark, *rows: tuple[int, str, str]):
    """Good events of this run from (txid, dt, object); each path names its object."""
    frame = curated_frame(spark, [(_event(t, path=f"/from/{o}"), dt) for t, dt, o in rows])
    return frame.withColumn("object", F.regexp_extract("path", "^/from/(.*)$", 1))


def _ranges(spark, *bounds: tuple[str, int]) -> KeyRanges:
    return KeyRanges(bounds, hash_labels(spark, len(bounds) + 1))


def _once(new, published, lookback_days: int = 1):
    ranges = _ranges(new.sparkSession, ("c1", 4), ("c1", 7))
    return (new.transform(with_published(published)).transform(spread_in_ranges(ranges))
            .transform(exactly_once(lookback_days)))


def _kept(rows) -> list[tuple]:
    return sorted((r[NEW], r["txid"], r["index"], r["dt"], r["path"]) for r in rows.collect())


def test_exactly_once_keeps_the_earliest_day_then_the_smallest_object_of_each_key(spark):
    new = _new(spark, (5, "2015-01-14", "a"), (5, "2015-01-13", "c"), (5, "2015-01-13", "b"),
               (6, "2015-01-14", "a"))

    out = _once(new, _curated(spark))

    assert _kept(out) == [(1, 5, 0, "2015-01-13", "/from/b"), (1, 6, 0, "2015-01-14", "/from/a")]
    assert "object" not in out.columns


def test_exactly_once_drops_new_copies_of_keys_published_within_the_lookback_only(spark):
    published = _curated(spark, (1, "2015-01-12"), (2, "2015-01-11"), (7, "2015-01-10"))
    new = _new(spark, (1, "2015-01-13", "a"),  # published a day before: already curated
               (2, "2015-01-13", "a"),  # two days before: out of reach, the new copy is kept
               (3, "2015-01-13", "a"),  # never published
               # The first copy (by day) is a day from the published one: no copy is added.
               (7, "2015-01-11", "a"), (7, "2015-01-13", "b"))

    out = _once(new, published)

    assert _kept(out) == [
        (0, 1, 0, "2015-01-12", "/a/b"), (0, 2, 0, "2015-01-11", "/a/b"),
        (0, 7, 0, "2015-01-10", "/a/b"),  # every published row stays
        (1, 2, 0, "2015-01-13", "/from/a"), (1, 3, 0, "2015-01-13", "/from/a")]


def test_exactly_once_matches_keys_on_cluster_txid_and_index(spark):
    published = curated_frame(spark, [(_event(4, cluster="c2"), "2015-01-13"),
                                      (HdfsEvent("c1", 4, 1, EventType.UNLINK, "/a/b",
                                                 timestamp=TS), "2015-01-13")])

    out = _once(_new(spark, (4, "2015-01-13", "a")), published)

    assert [r[1:3] for r in _kept(out) if r[0] == 1] == [(4, 0)]


def test_one_shuffle_by_key_range_serves_the_dedup_window_without_a_sampling_pass(spark):
    out = _once(_new(spark, (5, "2015-01-13", "a")), _curated(spark, (1, "2015-01-13")))

    plan = _plan(out)
    assert plan.count("Exchange ") == 1  # the window needs no exchange of its own
    assert "Exchange hashpartitioning(_slice" in plan
    assert "rangepartitioning" not in plan  # Spark's range exchange samples in a pass of its own


def test_spread_hashed_serves_the_same_window_with_one_exchange(spark):
    new = _new(spark, (5, "2015-01-14", "a"), (5, "2015-01-13", "b"), (6, "2015-01-14", "a"))
    published = _curated(spark, (6, "2015-01-13"))

    out = (new.transform(with_published(published)).transform(spread_hashed(3))
           .transform(exactly_once(1)))

    assert _plan(out).count("Exchange ") == 1  # planned, not run: one plan, not AQE's two
    assert _kept(out) == [(0, 6, 0, "2015-01-13", "/a/b"), (1, 5, 0, "2015-01-13", "/from/b")]


def test_hash_labels_land_in_the_partition_they_were_chosen_for(spark):
    labels = hash_labels(spark, 7)

    frame = spark.createDataFrame([(x,) for x in labels], "label long").repartition(7, "label")

    placed = dict(frame.select("label", F.spark_partition_id().alias("p")).collect())
    assert [placed[x] for x in labels] == list(range(7))


def test_key_ranges_label_each_key_by_the_range_it_falls_in(spark):
    ranges = KeyRanges((("c1", 4), ("c1", 7), ("c2", 0)), (10, 11, 12, 13))
    keys = [("c1", 1), ("c1", 4), ("c1", 6), ("c1", 7), ("c1", 99), ("c2", 0), ("c3", 1)]

    frame = spark.createDataFrame(keys, "cluster string, txid long")

    labels = [r[0] for r in frame.select(ranges.label()).collect()]
    assert labels == [10, 11, 11, 12, 12, 13, 13]


def _slices(frame) -> list[list[tuple[str, int]]]:
    """The (dt, txid) rows of each Spark partition, in the order they would be written."""
    rows = frame.select(F.spark_partition_id().alias("p"), "dt", "txid").collect()
    out: dict[int, list[tuple[str, int]]] = {}
    for r in rows:  # collect() keeps partition order, and each partition's row order
        out.setdefault(r["p"], []).append((r["dt"], r["txid"]))
    return [out[p] for p in sorted(out)]


def test_spread_in_ranges_cuts_the_key_ranges_in_order_each_in_key_order(spark):
    new = _new(spark, *[(t, "2015-01-13", "a") for t in (9, 3, 7, 1, 5)],
               *[(t, "2015-01-14", "a") for t in (8, 2, 6, 4)], (4, "2015-01-13", "b"))

    slices = _slices(_once(new, _curated(spark)))

    assert [[t for _, t in s] for s in slices] == [[1, 2, 3], [4, 5, 6], [7, 8, 9]]
    txids = [t for s in slices for _, t in s]
    assert txids == list(range(1, 10))  # ranges in order, each sorted, one copy of 4 left
    assert ("2015-01-13", 4) in [r for s in slices for r in s]  # the earlier day's copy


def test_of_partitions_keeps_new_rows_and_the_published_rows_of_the_partitions_named(spark):
    published = _curated(spark, (1, "2015-01-13"), (2, "2015-01-13"), (3, "2015-01-14"))
    rows = _once(_new(spark, (10, "2015-01-13", "a"), (11, "2015-01-15", "a")), published)

    out = rows.transform(of_partitions([("c1", "2015-01-13")]))

    assert sorted((r["txid"], r["dt"]) for r in out.collect()) == \
        [(1, "2015-01-13"), (2, "2015-01-13"), (10, "2015-01-13"), (11, "2015-01-15")]
    assert rows.transform(of_partitions([])).count() == 2


def test_one_file_per_partition_keeps_each_partition_in_one_slice(spark):
    rows = _curated(spark, *[(t, "2015-01-13") for t in (9, 3, 7)],
                    *[(t, "2015-01-14") for t in (8, 2)], (1, "2015-01-15"))

    slices = _slices(rows.transform(one_file_per_partition(3)))

    # Hashing may put two partitions in one slice, never one partition in two (two files).
    assert sorted(r for s in slices for r in s) == sorted(
        [("2015-01-13", t) for t in (9, 3, 7)] + [("2015-01-14", t) for t in (8, 2)]
        + [("2015-01-15", 1)])
    for dt in ("2015-01-13", "2015-01-14", "2015-01-15"):
        assert sum(any(d == dt for d, _ in s) for s in slices) == 1
