"""The rollup job's output tables as a test expects them (explicit schemas) and as Athena reads
them (dt the partition's string value)."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

ACTIVITY_SCHEMA = T.StructType([
    T.StructField("cluster", T.StringType()), T.StructField("prefix", T.StringType()),
    T.StructField("owner", T.StringType()),
    *[T.StructField(n, T.LongType()) for n in (
        "files_created", "files_deleted", "files_renamed", "bytes_written",
        "small_files_created", "net_file_count_change", "files_overwritten", "bytes_replaced",
        "bytes_deleted", "bytes_truncated")],
    T.StructField("dt", T.StringType()),
])
MASS_DELETE_SCHEMA = T.StructType([
    T.StructField("cluster", T.StringType()), T.StructField("scope", T.StringType()),
    T.StructField("subject", T.StringType()), T.StructField("window_start", T.TimestampType()),
    T.StructField("window_end", T.TimestampType()), T.StructField("unlinks", T.LongType()),
    T.StructField("first_txid", T.LongType()), T.StructField("last_txid", T.LongType()),
    *[T.StructField(n, T.LongType()) for n in ("trash_moves", "files_removed", "bytes_removed")],
    T.StructField("root_path", T.StringType()), T.StructField("user", T.StringType()),
    T.StructField("unattributed_deletes", T.LongType()), T.StructField("dt", T.StringType()),
])
GAPS_SCHEMA = T.StructType([
    T.StructField("cluster", T.StringType()),
    *[T.StructField(n, T.LongType()) for n in (
        "gaps", "lost_txids", "first_lost_txid", "last_lost_txid", "snapshot_records")],
    T.StructField("dt", T.StringType()),
])


def read_table(spark: SparkSession, uri: str, schema: T.StructType) -> DataFrame:
    """A dt-partitioned output as Athena reads it: dt is the partition's string value."""
    return spark.read.parquet(uri).withColumn("dt", F.col("dt").cast("string")).select(
        *schema.fieldNames())
