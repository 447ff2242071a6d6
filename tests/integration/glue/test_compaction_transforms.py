"""The line transforms of glue_jobs.compaction on small frames with explicit schemas."""

from __future__ import annotations

from pyspark.sql import functions as F
from pyspark.sql import types as T

from glue_jobs.compaction import NOT_UTF8, bad_lines, classify_lines, with_reasons
from hdfs_events.event import EventType, HdfsEvent
from tests.integration.glue.frames import assert_frames_equal

RAW_BYTES = T.StructType([T.StructField("object", T.StringType()),
                          T.StructField("raw_cluster", T.StringType()),
                          T.StructField("raw_dt", T.StringType()),
                          T.StructField("line", T.BinaryType())])
OBJECT = "file:/lake/raw/cluster=c1/dt=2015-01-13/hour=07/m1.jsonl.gz"
KEY = "raw/cluster=c1/dt=2015-01-13/hour=07/m1.jsonl.gz"


def _lines(spark, *lines: bytes):
    """Lines as Spark's text source gives them: the bytes as read, in a string column."""
    frame = spark.createDataFrame([(OBJECT, "c1", "2015-01-13", x) for x in lines], RAW_BYTES)
    return frame.select("object", "raw_cluster", "raw_dt", F.col("line").cast("string")
                        .alias("value"), F.monotonically_increasing_id().alias("n"))


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
