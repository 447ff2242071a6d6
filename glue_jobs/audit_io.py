"""Reading and writing the curated audit table by its catalog locations (Spark), as
glue_jobs/curated_io.py does for the events table."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from glue_jobs.audit_schema import AUDIT_COLUMNS, AUDIT_FILE_SCHEMA, audit_table_schema
from glue_jobs.catalog import PartitionKey
from hdfs_events.lake_layout import AUDIT_PREFIX, RUN_FILE_PARTITION

# A Parquet file holds at most this many rows (Spark's maxRecordsPerFile): a busy NameNode
# audits tens of millions of lines a day, and one file per day would be read by one task.
MAX_ROWS_PER_FILE = 4_000_000


def read_audit(spark: SparkSession, locations: Iterable[str]) -> DataFrame:
    """Rows (AUDIT_COLUMNS, dt) of the given partition locations, cluster and dt from each
    file's path."""
    paths = sorted(set(locations))
    if not paths:
        return spark.createDataFrame([], audit_table_schema())
    path = F.col("_metadata.file_path")
    return (spark.read.schema(AUDIT_FILE_SCHEMA).parquet(*paths)
            .withColumn("cluster", F.regexp_extract(path, RUN_FILE_PARTITION, 1))
            .withColumn("dt", F.regexp_extract(path, RUN_FILE_PARTITION, 2))
            .select(*AUDIT_COLUMNS, "dt"))


def read_audit_table(spark: SparkSession, locations: Mapping[PartitionKey, str]) -> DataFrame:
    """What a reader of the table sees: only the catalog's current locations."""
    return read_audit(spark, locations.values())


def write_audit_runs(rows: DataFrame, target_uri: str, run_id: str, compression: str) -> None:
    """Writes rows (AUDIT_COLUMNS, dt) under audit/cluster=<c>/dt=<d>/run=<run_id>/, one task
    per partition. Append mode only adds the new run directories: a failed write leaves every
    catalog location whole."""
    (rows.repartition("cluster", "dt")
     .sortWithinPartitions("cluster", "dt", "host", "file_id", "offset")
     .withColumn("run", F.lit(run_id))
     .write.mode("append").partitionBy("cluster", "dt", "run")
     .option("compression", compression).option("maxRecordsPerFile", MAX_ROWS_PER_FILE)
     .parquet(target_uri + AUDIT_PREFIX))
