"""The live entries a cluster's index holds, as a gap repair from an image reads them
(glue_jobs/image_index.py, docs/fsimage.md "Gap repair from the image"): which directories the
consumer has sharded, and which keys the image's items do not overwrite.

Read by a parallel Scan, one segment a Spark task, each paged by LastEvaluatedKey. DynamoDB
gives every item to exactly one segment (by its partition key); moto (5.2, what the tests run
on) honours Segment and TotalSegments the same way (the first byte of the partition key's MD5
modulo TotalSegments), so no task's rows are another's and no distinct is needed
(tests/integration/glue/test_image_repair.py checks the segments are disjoint).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from hdfs_events import names
from hdfs_events.index_item import DELETED, PATH, SHARDS
from hdfs_events.snapshot_index import DIRECTORY

KEY_COLUMNS = (names.INDEX_PK, names.INDEX_SK)
ENTRY_SCHEMA = (f"`{names.INDEX_PK}` string, `{names.INDEX_SK}` string, path string, "
                "type string, shards int")
Entry = tuple[str, str, str | None, str | None, int]


def scan_segments(table: str, cluster: str, total_segments: int, client: Callable[[int], Any],
                  page_limit: int | None = None
                  ) -> Callable[[Iterator[int]], Iterator[Entry]]:
    """A task's Scan of its segments: the cluster's entry partitions ("<cluster>#...": the
    sequencer's items are "<cluster>!...", another cluster's start with its own name), live
    entries only (a delete marker is not an entry), the attributes the repair needs.

    A Scan reads, and is billed for, every item of the table (a filter only trims the reply).
    Consistent: the consumer's last writes before the position the repair waited for are seen,
    so none of its entries is left behind."""
    def read(segments: Iterator[int]) -> Iterator[Entry]:
        ddb = client(1)
        for segment in segments:
            request: dict[str, Any] = {
                "TableName": table, "Segment": segment, "TotalSegments": total_segments,
                "ConsistentRead": True,
                "FilterExpression": "begins_with(#pk, :cluster) AND "
                                    "(attribute_not_exists(#deleted) OR #deleted = :live)",
                "ProjectionExpression": "#pk, #sk, #path, #type, #shards",
                "ExpressionAttributeNames": {
                    "#pk": names.INDEX_PK, "#sk": names.INDEX_SK, "#path": PATH,
                    "#type": "type", "#shards": SHARDS, "#deleted": DELETED},
                "ExpressionAttributeValues": {
                    ":cluster": {"S": names.index_partition(cluster, "")},
                    ":live": {"BOOL": False}},
                **({"Limit": page_limit} if page_limit else {}),
            }
            while True:
                page = ddb.scan(**request)
                for item in page["Items"]:
                    yield (item[names.INDEX_PK]["S"], item[names.INDEX_SK]["S"],
                           item.get(PATH, {}).get("S"), item.get("type", {}).get("S"),
                           int(item.get(SHARDS, {"N": "0"})["N"]))
                if "LastEvaluatedKey" not in page:
                    break
                request["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    return read


def indexed_entries(spark: SparkSession, table: str, cluster: str, segments: int,
                    client: Callable[[int], Any], page_limit: int | None = None) -> DataFrame:
    """The cluster's live entries (ENTRY_SCHEMA), read by `segments` Scan segments, one a
    task."""
    read = scan_segments(table, cluster, segments, client, page_limit)
    found = spark.sparkContext.parallelize(range(segments), segments).mapPartitions(read)
    return spark.createDataFrame(found, ENTRY_SCHEMA)


def sharded_directories(entries: DataFrame) -> list[str]:
    """Directories the index writes sharded (a `shards` on any live copy of their item): a
    sharded directory never goes back to one partition (docs/consumer.md, "Hot directories").
    Only these few reach the driver."""
    sharded = entries.where((F.col("type") == DIRECTORY) & (F.col("shards") > 0))
    return sorted({r["path"] for r in sharded.select("path").distinct().collect()})


def stale_keys(entries: DataFrame, image_keys: DataFrame) -> DataFrame:
    """Keys of the entries the image's items do not overwrite (KEY_COLUMNS): paths gone from
    the namespace, and a path's copy at its other key (its parent's own partition or its shard
    of it: hdfs_events/index_item.py)."""
    return entries.select(*KEY_COLUMNS).join(image_keys, list(KEY_COLUMNS), "left_anti")
