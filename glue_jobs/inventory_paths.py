"""Full paths joined in Spark, as `hdfs oiv -p Delimited` joins them (PBImageTextWriter): an
inode's path is its parent directory's path and its own name; the root is "/"; an inode under
no directory of the current tree (kept only by a snapshot) has no path and is left out, as oiv
leaves it out.

Directories' paths are built in one pass on the driver (directory_paths: the directories are
~5 % of the inodes, ~520k at 10M, one collect instead of a Spark join per level of the tree),
then every inode is joined once to its parent's path (inventory_rows), the directories' paths
broadcast to the links so the inodes' wide rows are the only ones shuffled. The links are
(child, parent) with reference children already resolved by the INODE_DIR decode
(glue_jobs.inventory_image.decoded_links).
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from hdfs_events.inventory_schema import INVENTORY_FILE_COLUMNS

Transform = Callable[[DataFrame], DataFrame]

ROOT_INODE_ID = 16385  # INodeId.ROOT_INODE_ID: 1 << 14, plus one


def directory_parents(links: DataFrame) -> Transform:
    """(id, name) of directories -> (id, parent, name) of every one listed under a directory;
    the directories (the small side) broadcast, the links streamed once."""
    def apply(directories: DataFrame) -> DataFrame:
        return F.broadcast(directories).join(
            links.select(F.col("child").alias("id"), "parent"), "id")
    return apply


def directory_paths(parents: DataFrame) -> tuple[DataFrame, int]:
    """(id, parent, name) of directories -> (id, path) of the root and every directory reached
    from it, and the levels of directories below the root: hdfsevents.glue.DirectoryPaths
    collects them to the driver's JVM and walks each up once (a directory that is its own
    ancestor stops the run, naming it)."""
    jvm = parents.sparkSession._jvm  # type: ignore[attr-defined]
    tree = jvm.hdfsevents.glue.DirectoryPaths.of(parents._jdf)
    return DataFrame(tree.frame(), parents.sparkSession), int(tree.levels())


def child_path(above: Column, name: Column) -> Column:
    return F.when(above == "/", F.concat(F.lit("/"), name)).otherwise(
        F.concat(above, F.lit("/"), name))


def inventory_rows(links: DataFrame, directory_paths: DataFrame, image_txid: int) -> Transform:
    """inodes -> the inventory's rows (INVENTORY_FILE_COLUMNS): the root, and every inode whose
    parent directory has a path."""
    def apply(inodes: DataFrame) -> DataFrame:
        above = directory_paths.select(F.col("id").alias("parent"), F.col("path").alias("above"))
        # The links meet their parents' paths map-side (the directories' paths broadcast), so
        # the join by id is the one shuffle: the inodes' wide rows and the placed links, once.
        # The root is placed too (under no parent), so the inodes are scanned once.
        placed = (links.select(F.col("child").alias("id"), "parent")
                  .join(F.broadcast(above), "parent").select("id", "above")
                  .unionByName(directory_paths.where(F.col("id") == ROOT_INODE_ID)
                               .select("id", F.lit(None).cast("string").alias("above"))))
        path = F.when(F.col("id") == ROOT_INODE_ID, F.lit("/")).otherwise(
            child_path(F.col("above"), F.col("name")))
        return (inodes.join(placed, "id").withColumn("path", path)
                .select(*_row_columns(image_txid)))
    return apply


def _row_columns(image_txid: int) -> list[Column]:
    derived = {
        "type": F.col("kind"),
        # hdfs_events.event.perms_to_octal: FsPermission keeps bits 0-9 (rwx x3, sticky)
        "perms": F.lpad(F.conv(F.col("mode").bitwiseAND(0o1777).cast("string"), 10, 8), 4, "0"),
        "image_txid": F.lit(image_txid).cast("bigint"),
    }
    return [derived[name].alias(name) if name in derived else F.col(name)
            for name, _ in INVENTORY_FILE_COLUMNS]
