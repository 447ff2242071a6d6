"""One run of the namespace inventory job: an fsimage object in S3 -> the inventory table's
partition (cluster, image_date), replaced whole. The entry script
(glue_jobs/namespace_inventory.py) parses the arguments, builds the session and calls
take_inventory().

One run: the driver reads the image's header, summary and NS_INFO in ranged GETs
(glue_jobs.inventory_image) -> one Spark task per INODE part and per INODE_DIR part decodes its
own byte range (a task for INODE_REFERENCE too) -> directory paths joined level by level, then
every inode to its parent's path (glue_jobs.inventory_paths) -> the rows written to a fresh run
prefix -> the catalog switched to it (a reader sees the old partition or the new one whole) ->
run prefixes the catalog no longer names removed after their grace period. A rerun of the same
image writes a new run and switches to it: never two copies of a path in the partition.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from glue_jobs import inventory_paths as paths
from glue_jobs.catalog import PartitionCatalog
from glue_jobs.curated_io import remove_superseded_runs
from glue_jobs.fsimage_format import ImageFormatError
from glue_jobs.inventory_image import (
    CHILD_DDL,
    INODE_DDL,
    REFERENCE_DDL,
    ImageLayout,
    Part,
    Rows,
    child_rows,
    directory_parts,
    inode_parts,
    inode_rows,
    reference_parts,
    reference_rows,
)
from glue_jobs.layout import (
    inventory_partition_prefix,
    inventory_run_prefix,
    new_run_id,
    parse_fsimage_key,
)
from glue_jobs.storage import LakeStore


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
    location = target.root_uri + inventory_run_prefix(settings.cluster, image_date, run_id)
    held: list[DataFrame] = []  # persisted along the way, released at the end
    try:
        inodes, kinds, tasks = _decoded_inodes(spark, layout, held)
        links = _links(spark, layout, held)
        directories = _held(inodes.transform(paths.directory_links(links)), held)
        dir_paths, levels = _directory_paths(directories, kinds.get("DIRECTORY", 0), held)
        (inodes.transform(paths.inventory_rows(links, dir_paths, txid))
         .write.mode("overwrite").option("compression", settings.compression).parquet(location))
    finally:
        for frame in held:
            frame.unpersist()
    written = spark.read.parquet(location).count()
    key = (settings.cluster, image_date)
    catalog.publish({key: location})
    removed = remove_superseded_runs(target, [key], catalog.locations(), now, settings.retain,
                                     prefix_of=inventory_partition_prefix)
    return InventoryReport(
        run_id=run_id, cluster=settings.cluster, image_date=image_date, image_txid=txid,
        location=location, rows=written, inodes=sum(kinds.values()),
        directories=kinds.get("DIRECTORY", 0), inode_parts=len(inode_parts(layout.summary)),
        directory_parts=len(directory_parts(layout.summary)),
        inode_decode_tasks=tasks, directory_levels=levels,
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


def _decode(spark: SparkSession, parts: list[Part], rows: Rows, ddl: str) -> DataFrame:
    """One task per part: parallelize cuts a list of n items into n slices of one each."""
    if not parts:
        return spark.createDataFrame([], ddl)
    rdd = spark.sparkContext.parallelize(parts, len(parts)).mapPartitions(rows)
    return spark.createDataFrame(rdd, ddl, verifySchema=False)


def _decoded_inodes(spark: SparkSession, layout: ImageLayout, held: list[DataFrame]
                    ) -> tuple[DataFrame, dict[str, int], int]:
    """The inodes, persisted (the directories and the rows both read them) and filled by their
    own action, which also counts them by kind; and how many tasks that action's decode ran
    (an accumulator each task adds 1 to: what ran, whatever plan adaptive execution made)."""
    tasks = spark.sparkContext.accumulator(0)
    inodes = _held(_decode(spark, inode_parts(layout.summary), inode_rows(layout, tasks),
                           INODE_DDL), held)
    kinds = {r["kind"]: r["count"] for r in inodes.groupBy("kind").count().collect()}
    return inodes, kinds, tasks.value


def _links(spark: SparkSession, layout: ImageLayout, held: list[DataFrame]) -> DataFrame:
    """(child, parent) of every child INODE_DIR lists, references resolved; persisted, and
    refused when a reference names a position INODE_REFERENCE does not hold."""
    summary = layout.summary
    refs = _decode(spark, reference_parts(summary), reference_rows(layout), REFERENCE_DDL)
    links = _held(_decode(spark, directory_parts(summary), child_rows(layout), CHILD_DDL)
                  .transform(paths.parent_links(refs)), held)
    dangling = links.where(F.col("child").isNull()).select("parent", "reference").first()
    if dangling is not None:
        raise ImageFormatError(
            f"INODE_DIR: directory {dangling['parent']} lists reference "
            f"{dangling['reference']}, the INODE_REFERENCE section holds {refs.count()}")
    return links


def _directory_paths(directories: DataFrame, directory_count: int, held: list[DataFrame]
                     ) -> tuple[DataFrame, int]:
    """(id, path) of every directory reached from the root, one join per level; and the
    levels. Each level is persisted and counted before the next joins it: the plan of level k
    then reads level k-1's blocks instead of recomputing k-1 joins."""
    level = paths.root_path(directories)
    union = level
    levels = 0
    while True:
        level = _held(level.transform(paths.directory_level(directories)), held)
        if level.count() == 0:
            return union, levels
        levels += 1
        union = union.unionByName(level)
        if levels > directory_count:  # only a directory listed under its own descendant
            raise ImageFormatError(f"INODE_DIR: more than {directory_count} levels of "
                                   "directories below the root: a directory is its own "
                                   "ancestor")
