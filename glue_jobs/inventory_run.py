"""One run of the namespace inventory job: an fsimage object in S3 -> the inventory table's
partition (cluster, image_date), replaced whole. The entry script
(glue_jobs/namespace_inventory.py) parses the arguments, builds the session and calls
take_inventory().

One run: the driver reads the image's header, summary, NS_INFO, STRING_TABLE and
INODE_REFERENCE in ranged GETs (glue_jobs.inventory_image) -> one Spark task per INODE part and
per INODE_DIR part fetches its own byte range, kept for the two passes below, and the JVM
decodes it (hdfsevents.glue.FsImageParts) -> the directories' (id, parent, name) collected and
their paths built in one pass, then every inode joined to its parent's path
(glue_jobs.inventory_paths) -> the rows written to a fresh run prefix -> the catalog switched
to it (a reader sees the old partition or the new one whole) -> run prefixes the catalog no
longer names removed after their grace period. A rerun of the same image writes a new run and
switches to it: never two copies of a path in the partition.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession

from glue_jobs import inventory_paths as paths
from glue_jobs.catalog import PartitionCatalog
from glue_jobs.curated_io import remove_superseded_runs
from glue_jobs.fsimage_format import ImageFormatError
from glue_jobs.inventory_image import (
    PART_DDL,
    ImageLayout,
    Part,
    Rows,
    decoded_directories,
    decoded_inodes,
    decoded_links,
    directory_parts,
    inode_parts,
    part_bytes,
    referred_ids,
    s3_client,
    string_table,
)
from glue_jobs.storage import LakeStore
from hdfs_events.lake_layout import (
    INVENTORY_DATE,
    INVENTORY_PREFIX,
    new_run_id,
    parse_fsimage_key,
    run_prefix,
)


@dataclass(frozen=True, slots=True)
class InventorySettings:
    cluster: str
    image_date: str = ""  # YYYY-MM-DD; "": the UTC date of the image object's LastModified
    retain: timedelta = timedelta(hours=24)
    compression: str = "zstd"


@dataclass(frozen=True, slots=True)
class InventoryReport:
    run_id: str
    cluster: str
    image_date: str
    image_txid: int
    location: str
    rows: int
    inodes: int
    directories: int
    inode_parts: int
    directory_parts: int
    inode_decode_tasks: int  # counted by the tasks as they ran, not planned
    directory_levels: int
    runs_removed: int


def take_inventory(spark: SparkSession, layout: ImageLayout, target: LakeStore,
                   catalog: PartitionCatalog, settings: InventorySettings, *,
                   run_id: str | None = None, now: datetime | None = None) -> InventoryReport:
    now = now or datetime.now(UTC)
    run_id = run_id or new_run_id(now)
    txid = layout.name_system.transaction_id
    _check_key(layout, settings.cluster)
    image_date = settings.image_date or layout.image.last_modified.astimezone(UTC).strftime(
        "%Y-%m-%d")
    location = target.root_uri + run_prefix(INVENTORY_PREFIX, settings.cluster, image_date, run_id,
                                               date_key=INVENTORY_DATE)
    held: list[DataFrame] = []  # persisted along the way, released at the end
    client = s3_client()
    try:
        # The parts' bytes are kept (the image's own size, compressed or not: the smallest
        # form of the inodes) for the two passes over them: the directories, then every inode.
        tasks = spark.sparkContext.accumulator(0)
        inode_bytes = _held(_fetched(spark, inode_parts(layout.summary),
                                     part_bytes(layout, tasks)), held)
        links = decoded_links(_held(_fetched(spark, directory_parts(layout.summary),
                                             part_bytes(layout)), held),
                              referred_ids(layout, client))
        counted = _Counts(spark)
        dir_paths, levels = paths.directory_paths(
            decoded_directories(inode_bytes, counted.inodes, counted.directories)
            .transform(paths.directory_parents(links)))
        decode_tasks = tasks.value
        (decoded_inodes(inode_bytes, string_table(layout, client))
         .transform(paths.inventory_rows(links, dir_paths, txid))
         .write.mode("overwrite").option("compression", settings.compression).parquet(location))
    finally:
        for frame in held:
            frame.unpersist()
    written = spark.read.parquet(location).count()
    key = (settings.cluster, image_date)
    catalog.publish({key: location})
    removed = remove_superseded_runs(target, [key], catalog.locations(), now, settings.retain,
                                     INVENTORY_PREFIX, date_key=INVENTORY_DATE)
    return InventoryReport(
        run_id=run_id, cluster=settings.cluster, image_date=image_date, image_txid=txid,
        location=location, rows=written, inodes=counted.inodes.value(),
        directories=counted.directories.value(), inode_parts=len(inode_parts(layout.summary)),
        directory_parts=len(directory_parts(layout.summary)),
        inode_decode_tasks=decode_tasks, directory_levels=levels,
        runs_removed=removed)


def _held(frame: DataFrame, held: list[DataFrame]) -> DataFrame:
    held.append(frame.persist(StorageLevel.MEMORY_AND_DISK))
    return frame


def _check_key(layout: ImageLayout, cluster: str) -> None:
    """An image under the lake's fsimage/ layout must be the cluster's and the txid's its key
    names (a key outside the layout, uploaded by hand, is taken as --cluster says)."""
    named = parse_fsimage_key(layout.image.key)
    txid = layout.name_system.transaction_id
    if named is not None and named != (cluster, txid):
        raise ImageFormatError(
            f"{layout.image.uri}: the key names cluster {named[0]!r} and txid {named[1]}, the "
            f"job was given --cluster {cluster!r} and NS_INFO holds txid {txid}")


def _fetched(spark: SparkSession, parts: list[Part], fetch: Rows) -> DataFrame:
    """One task per part (parallelize cuts a list of n items into n slices of one each), each
    a PART_DDL row of the part's bytes."""
    rdd = spark.sparkContext.parallelize(parts, len(parts)).mapPartitions(fetch)
    return spark.createDataFrame(rdd, PART_DDL, verifySchema=False)


class _Counts:
    """The inodes and directories the directory pass decoded: the JVM's LongAccumulators, which
    its decode tasks add to, read after that pass (the later pass decodes them again)."""

    def __init__(self, spark: SparkSession) -> None:
        context = spark.sparkContext._jsc.sc()  # type: ignore[union-attr]
        self.inodes = context.longAccumulator("inventory inodes")
        self.directories = context.longAccumulator("inventory directories")
