"""Glue job: the namespace inventory, one row per path of an HDFS fsimage, read in parallel over
the image's sub-sections.

    python -m glue_jobs.namespace_inventory --cluster c1 --target s3://lake \
        --image s3://lake/fsimage/cluster=c1/txid=42/fsimage_0000000000000000042

The entry script: parses the arguments, reads the image's layout (ranged GETs), builds the
session and runs glue_jobs.inventory_run.take_inventory (what one run does is told there);
with --index_table, glue_jobs.image_index.write_index writes the index from the rows (a first
start, or with --repair_after a gap repair) and the marker `_indexed.json` goes beside the image.
Prints a JSON report. An image it cannot read stops the run with the reader's words: the
section and the byte (docs/fsimage.md).
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Sequence
from dataclasses import asdict
from datetime import date, timedelta
from typing import Any

from pyspark.sql import SparkSession

from glue_jobs.catalog import GlueCatalog, JsonFileCatalog, PartitionCatalog
from glue_jobs.fsimage_format import ImageFormatError
from glue_jobs.image_index import (
    IndexReport,
    IndexSettings,
    dynamodb_client,
    marker_body,
    write_index,
)
from glue_jobs.index_position import IndexRefused
from glue_jobs.inventory_image import ImageObject, image_object, read_layout, s3_client
from glue_jobs.inventory_run import InventorySettings, take_inventory
from glue_jobs.layout import INVENTORY_LOCAL_CATALOG_KEY
from glue_jobs.runtime import Arg, job_session, resolve_args
from glue_jobs.storage import LakeStore, store_for
from hdfs_events.lake_layout import INVENTORY_TABLE, fsimage_indexed_key

JOB_NAME = "namespace_inventory"
SPEC = (
    Arg("image", "the fsimage object, s3://bucket/key (the agent uploads it under "
        "fsimage/cluster=<c>/txid=<t>/fsimage_<t>)"),
    Arg("cluster", "the cluster the image is of: the table's cluster partition"),
    Arg("target", "lake URI for curated/namespace_inventory/ (file:///path or s3://bucket)"),
    # NS_INFO holds no time. The agent uploads an image as soon as it has fetched it, so the
    # object's LastModified is the checkpoint's date within the fetch; an image uploaded later
    # (a backfill) is given its date here.
    Arg("image_date", "the image_date partition, YYYY-MM-DD; empty: the UTC date of the image "
        "object's LastModified", ""),
    Arg("retain_hours", "superseded run prefixes are deleted after this grace period", "24"),
    Arg("compression", "Parquet codec: zstd or snappy", "zstd"),
    Arg("catalog_database", "Glue database of the table; empty: a JSON catalog in the target",
        ""),
    Arg("catalog_table", "Glue table of the namespace inventory", INVENTORY_TABLE),
    # A first start from the image (docs/fsimage.md): the index written from the same rows.
    Arg("index_table", "the namespace index table to write from the image (a first start: "
        "refused when the cluster has a position, unless --repair_after); empty: no index", ""),
    Arg("index_prefixes", "comma-separated HDFS prefixes the index covers (the consumer's "
        "INDEX_PREFIXES)", "/"),
    Arg("index_threads", "BatchWriteItem calls in flight per write task", "16"),
    Arg("index_partitions", "index write tasks; 0: Spark's default parallelism", "0"),
    # A gap repair (docs/fsimage.md, "Gap repair from the image"): the agent lost the edits
    # after its checkpoint N; the index takes over from the consumer at N.
    Arg("repair_after", "the agent's checkpoint txid N: repair the index from the image "
        "instead of a first start (needs --index_table); empty: a first start", ""),
    Arg("repair_wait_s", "how long a repair waits for the consumer to apply through "
        "--repair_after", "900"),
)

_CLUSTER = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def settings_from(args: dict[str, str]) -> InventorySettings:
    if not _CLUSTER.fullmatch(args["cluster"]):
        raise SystemExit(f"{JOB_NAME}: --cluster must be letters, digits, '_', '.' or '-' "
                         f"(a path component of the table), got {args['cluster']!r}")
    if args["image_date"]:
        try:
            date.fromisoformat(args["image_date"])
        except ValueError:
            raise SystemExit(f"{JOB_NAME}: --image_date must be YYYY-MM-DD, got "
                             f"{args['image_date']!r}") from None
    try:
        retain = timedelta(hours=float(args["retain_hours"]))
    except ValueError as exc:
        raise SystemExit(f"{JOB_NAME}: bad numeric argument: {exc}") from None
    return InventorySettings(cluster=args["cluster"], image_date=args["image_date"],
                             retain=retain, compression=args["compression"])


def index_settings_from(args: dict[str, str]) -> IndexSettings | None:
    repair_after = _repair_after(args)
    if not args["index_table"]:
        if repair_after is not None:
            raise SystemExit(f"{JOB_NAME}: --repair_after repairs the index: it needs "
                             "--index_table")
        return None
    prefixes = tuple(dict.fromkeys(p.strip().rstrip("/") or "/"
                                   for p in args["index_prefixes"].split(",") if p.strip()))
    bad = [p for p in prefixes if not p.startswith("/")]
    if not prefixes or bad:
        raise SystemExit(f"{JOB_NAME}: --index_prefixes must be absolute HDFS paths, comma-"
                         f"separated, got {args['index_prefixes']!r}")
    try:
        threads, partitions = int(args["index_threads"]), int(args["index_partitions"])
    except ValueError as exc:
        raise SystemExit(f"{JOB_NAME}: bad numeric argument: {exc}") from None
    if not 1 <= threads <= 64 or partitions < 0:
        raise SystemExit(f"{JOB_NAME}: --index_threads must be 1..64 and --index_partitions "
                         f">= 0, got {threads} and {partitions}")
    try:
        wait_s = float(args["repair_wait_s"])
    except ValueError:
        wait_s = -1.0
    if not (math.isfinite(wait_s) and wait_s >= 0):
        raise SystemExit(f"{JOB_NAME}: --repair_wait_s must be seconds >= 0, got "
                         f"{args['repair_wait_s']!r}")
    return IndexSettings(args["index_table"], prefixes, threads, partitions,
                         repair_after=repair_after, repair_wait_s=wait_s)


def _repair_after(args: dict[str, str]) -> int | None:
    if not args["repair_after"]:
        return None
    try:
        after = int(args["repair_after"])
    except ValueError:
        after = -1
    if after < 0:
        raise SystemExit(f"{JOB_NAME}: --repair_after must be a txid (an integer >= 0), got "
                         f"{args['repair_after']!r}")
    return after


def inventory_catalog(database: str, table: str, lake: LakeStore) -> PartitionCatalog:
    if database:
        import boto3  # on Glue; local runs use the JSON catalog and need no AWS library

        return GlueCatalog(boto3.client("glue"), database, table)
    return JsonFileCatalog(lake, INVENTORY_LOCAL_CATALOG_KEY, INVENTORY_TABLE)


# How a task's ImageFormatError reaches the driver: inside the text of Spark's PythonException.
_TASK_ERROR = re.compile(r"ImageFormatError: (?P<message>[^\n]+)")


def main(argv: Sequence[str] | None = None, spark: SparkSession | None = None) -> int:
    args = resolve_args(sys.argv[1:] if argv is None else argv, SPEC, prog=JOB_NAME)
    settings = settings_from(args)
    indexing = index_settings_from(args)
    target = store_for(args["target"])
    catalog = inventory_catalog(args["catalog_database"], args["catalog_table"], target)
    client = s3_client()
    try:
        image = image_object(args["image"], client)
        layout = read_layout(client, image)
    except (ImageFormatError, ValueError) as exc:
        raise SystemExit(f"{JOB_NAME}: {args['image']}: {exc}") from None
    with job_session(JOB_NAME, args, spark, uris=(target.root_uri,)) as session:
        try:
            report = take_inventory(session, layout, target, catalog, settings)
        except ImageFormatError as exc:
            raise SystemExit(f"{JOB_NAME}: {image.uri}: {exc}") from None
        except Exception as exc:  # a task's error arrives as Spark's, with the reader's words
            found = _TASK_ERROR.search(str(exc))
            if found is None:
                raise
            raise SystemExit(f"{JOB_NAME}: {image.uri}: {found['message']}") from None
        indexed = None
        if indexing is not None:
            indexed = _write_index(session, report.location, image, settings.cluster,
                                   report.image_txid, indexing, client)
    print(json.dumps({"job": JOB_NAME, **asdict(report),
                      **({"index": asdict(indexed)} if indexed is not None else {})}))
    return 0


def _write_index(spark: SparkSession, location: str, image: ImageObject, cluster: str,
                 txid: int, indexing: IndexSettings, s3: Any) -> IndexReport:
    """The index from the rows just written, then the marker beside the image."""
    try:
        indexed = write_index(spark.read.parquet(location), cluster, txid, indexing,
                              ddb=dynamodb_client(indexing.threads))
    except IndexRefused as exc:
        raise SystemExit(f"{JOB_NAME}: {image.uri}: {exc}") from None
    s3.put_object(Bucket=image.bucket, Key=fsimage_indexed_key(cluster, txid),
                  Body=marker_body(indexed, cluster), ContentType="application/json")
    return indexed


if __name__ == "__main__":
    sys.exit(main())
