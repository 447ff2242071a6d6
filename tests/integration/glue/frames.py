"""A DataFrame equality helper in chispa's spirit: same columns and types (nullability aside),
same rows as a multiset, with the first differing rows in the failure message."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from glue_jobs.schema import curated_schema
from hdfs_events.event import HdfsEvent


def _types(schema: T.StructType) -> list[tuple[str, str]]:
    return [(f.name, f.dataType.simpleString()) for f in schema.fields]


def _hashable(value: object) -> object:
    if isinstance(value, list | tuple):  # Rows are tuples; arrays come back as lists
        return tuple(_hashable(v) for v in value)
    return value


def assert_frames_equal(actual: DataFrame, expected: DataFrame) -> None:
    assert _types(actual.schema) == _types(expected.schema), (
        f"schemas differ:\n actual   {actual.schema.simpleString()}\n"
        f" expected {expected.schema.simpleString()}")
    got = Counter(_hashable(r) for r in actual.collect())
    want = Counter(_hashable(r) for r in expected.collect())
    if got != want:
        extra = list((got - want).elements())[:5]
        missing = list((want - got).elements())[:5]
        raise AssertionError(f"rows differ: {sum(got.values())} actual, {sum(want.values())} "
                             f"expected\n unexpected: {extra}\n missing: {missing}")


def curated_frame(spark: SparkSession, rows: Iterable[tuple[HdfsEvent, str]]) -> DataFrame:
    """The curated table's expected content from (event, dt) pairs, with the explicit schema."""
    data = [{**e.to_dict(), "dt": dt} for e, dt in rows]
    for d in data:
        for k in ("type", "inode_type", "metadata_type"):
            d[k] = None if d[k] is None else str(d[k].value)
    return spark.createDataFrame(data, curated_schema())


# Raw lines as Spark's text source gives them (the bytes as read, in a string column), all from
# one object of cluster c1's partition 2015-01-13.
RAW_OBJECT = "file:/lake/raw/cluster=c1/dt=2015-01-13/hour=07/m1.jsonl.gz"
_RAW_BYTES = T.StructType([T.StructField("object", T.StringType()),
                           T.StructField("raw_cluster", T.StringType()),
                           T.StructField("raw_dt", T.StringType()),
                           T.StructField("line", T.BinaryType())])


def raw_lines(spark: SparkSession, lines: Iterable[tuple[str, bytes]]) -> DataFrame:
    """(object, raw_cluster, raw_dt, value) of (partition cluster, line bytes) pairs."""
    frame = spark.createDataFrame([(RAW_OBJECT, cluster, "2015-01-13", line)
                                   for cluster, line in lines], _RAW_BYTES)
    return frame.select("object", "raw_cluster", "raw_dt",
                        F.col("line").cast("string").alias("value"))
