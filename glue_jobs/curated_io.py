"""Reading and writing the curated events table by its catalog locations (Spark + LakeStore)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from urllib.parse import unquote

from pyspark.sql import Column, DataFrame, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from glue_jobs.catalog import PartitionKey
from glue_jobs.schema import EVENT_SCHEMA, FILE_COLUMNS, curated_schema
from glue_jobs.storage import LakeStore
from hdfs_events.event import FIELDS
from hdfs_events.lake_layout import EVENTS_PREFIX, RUN_FILE_PARTITION, partition_prefix, run_started

FILE_SCHEMA = T.StructType([f for f in EVENT_SCHEMA.fields if f.name in FILE_COLUMNS])


def read_published(spark: SparkSession, locations: Iterable[str]) -> DataFrame:
    """Rows of the given partition locations with cluster and dt taken from each file's path."""
    paths = sorted(set(locations))
    if not paths:
        return spark.createDataFrame([], curated_schema())
    path = F.col("_metadata.file_path")
    return (spark.read.schema(FILE_SCHEMA).parquet(*paths)
            .withColumn("cluster", F.regexp_extract(path, RUN_FILE_PARTITION, 1))
            .withColumn("dt", F.regexp_extract(path, RUN_FILE_PARTITION, 2))
            .select(*FIELDS, "dt"))


def row_counts(spark: SparkSession, locations: Iterable[str]) -> dict[PartitionKey, int]:
    """Rows at these partition locations. Counted per file, which Parquet answers from its row
    groups' headers without reading a column; the file's partition is then read from its path
    once per file, not once per row."""
    files = _per_file(spark, locations, F.count(F.lit(1)).alias("rows"))
    counts: dict[PartitionKey, int] = {}
    for key, r in files:
        counts[key] = counts.get(key, 0) + r["rows"]
    return counts


def txid_spans(spark: SparkSession, locations: Iterable[str]
               ) -> list[tuple[PartitionKey, int, int, int]]:
    """(partition, first txid, last txid, rows) of each file at these partition locations: the
    job writes a file from one key range, so its rows lie between its first and last txid."""
    files = _per_file(spark, locations, F.count(F.lit(1)).alias("rows"),
                      F.min("txid").alias("first"), F.max("txid").alias("last"))
    return [(key, r["first"], r["last"], r["rows"]) for key, r in files]


def _per_file(spark: SparkSession, locations: Iterable[str], *aggregates: Column
              ) -> list[tuple[PartitionKey, Row]]:
    paths = sorted(set(locations))
    if not paths:
        return []
    files = (spark.read.schema(FILE_SCHEMA).parquet(*paths)
             .groupBy(F.col("_metadata.file_path").alias("file")).agg(*aggregates).collect())
    out = []
    for r in files:
        found = re.search(RUN_FILE_PARTITION, r["file"])
        if found is None:
            raise ValueError(f"not a curated file: {r['file']}")
        out.append(((unquote(found.group(1)), unquote(found.group(2))), r))
    return out


def read_curated(spark: SparkSession, locations: Mapping[PartitionKey, str],
                 dts: Iterable[str] | None = None) -> DataFrame:
    """What a reader of the table sees: only the catalog's current locations, optionally of
    some dts."""
    wanted = None if dts is None else set(dts)
    return read_published(spark, [loc for (_, dt), loc in locations.items()
                                  if wanted is None or dt in wanted])


def write_runs(rows: DataFrame, target_uri: str, run_id: str, compression: str) -> None:
    """Writes rows (FIELDS + dt) under events/cluster=<c>/dt=<d>/run=<run_id>/.

    Append mode only adds the new run directories; nothing published is touched, so a failed
    write leaves every catalog location whole."""
    (rows.withColumn("run", F.lit(run_id))
     .write.mode("append").partitionBy("cluster", "dt", "run")
     .option("compression", compression)
     .parquet(target_uri + EVENTS_PREFIX))


def location_key(store: LakeStore, location: str) -> str | None:
    return location[len(store.root_uri):] if location.startswith(store.root_uri) else None


def stored_bytes(store: LakeStore, locations: Iterable[str]) -> int:
    total = 0
    for loc in locations:
        key = location_key(store, loc)
        if key is not None:
            total += sum(o.size for o in store.list_objects(key) if o.key.endswith(".parquet"))
    return total


def remove_superseded_runs(store: LakeStore, partitions: Iterable[PartitionKey],
                           current: Mapping[PartitionKey, str], now: datetime,
                           retain: timedelta, table_prefix: str = EVENTS_PREFIX, *,
                           date_key: str = "dt") -> int:
    """Deletes run prefixes of these partitions of the table at `table_prefix` that the
    catalog no longer names and that started more than `retain` ago (a reader that listed the
    old location before the switch can still finish its query). Failed runs' leftovers go the
    same way."""
    removed = 0
    for cluster, dt in partitions:
        prefix = partition_prefix(table_prefix, cluster, dt, date_key=date_key)
        runs = {o.key[len(prefix):].split("/", 1)[0] for o in store.list_objects(prefix)}
        keep = current.get((cluster, dt), "").rstrip("/").rsplit("/", 1)[-1]
        for run_dir in sorted(runs):
            started = run_started(run_dir.removeprefix("run="))
            if run_dir == keep or started is None or now - started < retain:
                continue
            store.delete_prefix(f"{prefix}{run_dir}/")
            removed += 1
    return removed
