"""Who made each change, as CloudWatch Logs lines: one JSON line per attributed event in a log
group of its own, for the saved Logs Insights queries (stacks/saved_queries.py,
ATTRIBUTION_LOGS_QUERIES). Logs Insights cannot join the consumer's "hdfs event" lines to the
lake's attribution table, so each line carries what a query needs on its own: the event
(cluster, txid, index, type, path, dst_path, its NameNode timestamp) and who made it.

Exactly once where a user looks: a run logs only what changed against the day's previous
attribution rows (`log_lines`): an event newly attributed, an event whose user changed, and an
event that lost its user (a late rival audit line; its line has no `user`). The latest line of
an event is its answer; the queries take it per (cluster, txid, index), so a line logged twice
(a run that failed after logging and before its catalog switch logs the same lines again on its
retry) counts once.

The lines go out from the executors, each partition's rows in PutLogEvents batches to one log
stream per run (parallel PutLogEvents to one stream are allowed since the sequence token was
retired in 2023).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from itertools import chain
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from glue_jobs.attribution import ATTRIBUTION_SCHEMA
from glue_jobs.runtime import AWS_RETRIES
from hdfs_events.lake_layout import RUN_FILE_PARTITION

KEY = ("cluster", "txid", "index")
# What a user reads as the answer: a change of these is a new line. audit_host/file_id/offset
# are not: the same user from another copy of the line is the same answer.
ANSWER = ("user", "auth", "real_user", "client_ip", "caller_context")
# The keys of a line, in the lake's column names. A null is left out of the line (to_json):
# dst_path appears on RENAME only, user & co. not on a withdrawn attribution.
LINE_FIELDS = (*KEY, "type", "path", "dst_path", "timestamp", *ANSWER)

# PutLogEvents limits (CloudWatch Logs API reference): a batch holds at most 10,000 events and
# 1,048,576 bytes counted as each message's UTF-8 bytes plus 26; one event at most 256 KiB (the
# older, smaller of the documented limits); a batch's timestamps in order and within 24 hours
# of each other, none older than 14 days. Each batch is stamped with the time it is sent, so
# the last three always hold; the event's own NameNode time is the line's `timestamp`.
MAX_BATCH_EVENTS = 10_000
MAX_BATCH_BYTES = 1_048_576
EVENT_OVERHEAD = 26
MAX_EVENT_BYTES = 256 * 1024 - EVENT_OVERHEAD

_FILE_SCHEMA = T.StructType([f for f in ATTRIBUTION_SCHEMA.fields if f.name != "cluster"])


def read_attribution(spark: SparkSession, locations: Iterable[str]) -> DataFrame:
    """Attribution rows at these partition locations (cluster and dt from each file's path:
    the run folders hold the other columns only)."""
    paths = sorted(set(locations))
    if not paths:
        return spark.createDataFrame([], ATTRIBUTION_SCHEMA).withColumn("dt", F.lit(""))
    path = F.col("_metadata.file_path")
    return (spark.read.schema(_FILE_SCHEMA).parquet(*paths)
            .withColumn("cluster", F.regexp_extract(path, RUN_FILE_PARTITION, 1))
            .withColumn("dt", F.regexp_extract(path, RUN_FILE_PARTITION, 2)))


def log_lines(rows: DataFrame, previous: DataFrame, events: DataFrame) -> DataFrame:
    """The lines one run logs, as a single `line` column (JSON, LINE_FIELDS): `rows` the run's
    attribution rows of the days it replaces, `previous` those days' rows it replaces,
    `events` the curated events they attribute."""
    new_or_changed = (rows.select(*KEY, *ANSWER).subtract(previous.select(*KEY, *ANSWER)))
    withdrawn = (previous.select(*KEY).subtract(rows.select(*KEY))
                 .select(*KEY, *(F.lit(None).cast("string").alias(c) for c in ANSWER)))
    details = events.select(*KEY, "type", "path",
                            F.when(F.col("type") == "RENAME", F.col("dst_path"))
                            .alias("dst_path"), "timestamp")
    return (new_or_changed.unionByName(withdrawn).join(details, list(KEY))
            .select(F.to_json(F.struct(*LINE_FIELDS)).alias("line")))


def batches(lines: Iterable[str]) -> Iterator[list[str]]:
    """`lines` in PutLogEvents-sized batches."""
    batch: list[str] = []
    size = 0
    for line in lines:
        n = len(line.encode())
        if n > MAX_EVENT_BYTES:
            raise ValueError(f"attribution line of {n} bytes is over CloudWatch Logs' "
                             f"{MAX_EVENT_BYTES}-byte event limit: {line[:200]}...")
        if batch and (len(batch) == MAX_BATCH_EVENTS
                      or size + n + EVENT_OVERHEAD > MAX_BATCH_BYTES):
            yield batch
            batch, size = [], 0
        batch.append(line)
        size += n + EVENT_OVERHEAD
    if batch:
        yield batch


def put_lines(client: Any, group: str, stream: str, lines: Iterable[str],
              clock: Callable[[], float] = time.time) -> int:
    """Sends `lines` to the stream; the number sent. A batch CloudWatch refused part of is an
    error, never a silent loss."""
    sent = 0
    for batch in batches(lines):
        stamp = int(clock() * 1000)
        response = client.put_log_events(
            logGroupName=group, logStreamName=stream,
            logEvents=[{"timestamp": stamp, "message": m} for m in batch])
        if response.get("rejectedLogEventsInfo"):
            raise RuntimeError(f"CloudWatch Logs rejected attribution lines in {group}/{stream}:"
                               f" {response['rejectedLogEventsInfo']}")
        sent += len(batch)
    return sent


def logs_client(region: str | None = None) -> Any:
    import boto3  # on Glue and in the tests; a run without a log group needs no AWS library
    from botocore.config import Config

    return boto3.client("logs", region_name=region, config=Config(retries=AWS_RETRIES))


def open_stream(group: str, run_id: str) -> str:
    """The run's log stream, named by its run id (unique per run, a retry included)."""
    logs_client().create_log_stream(logGroupName=group, logStreamName=run_id)
    return run_id


def send(lines: DataFrame, group: str, stream: str) -> int:
    """Logs `lines` (log_lines) from the executors; the number of lines sent."""
    sent = lines.sparkSession.sparkContext.accumulator(0)
    # The driver's region, resolved once: an executor's environment need not name one.
    region = logs_client().meta.region_name

    def partition(rows: Iterator[Any]) -> None:
        texts = (r["line"] for r in rows)
        first = next(texts, None)
        if first is None:
            return
        sent.add(put_lines(logs_client(region), group, stream, chain([first], texts)))

    lines.foreachPartition(partition)
    return int(sent.value)

