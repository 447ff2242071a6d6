"""The raw objects a compaction reads, whichever prefix it compacts (raw/ for events,
raw-audit/ for audit lines): Spark's reader of the prefix, the store key of a path Spark reports,
and the copy of an unreadable object into quarantine."""

from __future__ import annotations

import re
from urllib.parse import unquote

from pyspark.sql import DataFrameReader, SparkSession

from glue_jobs.storage import LakeStore
from hdfs_events.lake_layout import RAW_OBJECT_GLOB, raw_key_in_path


def raw_reader(spark: SparkSession, source: LakeStore, prefix: str) -> DataFrameReader:
    """A reader of raw objects: partition directories from `prefix`, and in a folder read whole
    only the names of the raw layout (a stray file written there after the listing stays
    unread, as a listed stray does)."""
    return (spark.read.option("basePath", source.root_uri + prefix)
            .option("pathGlobFilter", RAW_OBJECT_GLOB))


def raw_key(spark_path: str, prefix: str) -> str:
    """The store key of a raw object under `prefix` from the path Spark reports (file:/...,
    s3://...)."""
    path = unquote(spark_path)
    found = re.search(raw_key_in_path(prefix), path)
    return found[1] if found else path


def quarantine_objects(source: LakeStore, target: LakeStore, quarantine_prefix: str, run_id: str,
                       problems: dict[str, str]) -> int:
    """Copies each unreadable object, byte for byte, beside a .reason.txt naming the problem."""
    for key, why in sorted(problems.items()):
        dest = f"{quarantine_prefix}objects/run={run_id}/{key}"
        data = source.read_bytes(key)
        if data is not None:
            target.write_bytes(dest, data)
        target.write_bytes(dest + ".reason.txt", f"{source.root_uri}{key}: {why}\n".encode())
    return len(problems)
