"""Full paths joined in Spark, as glue_jobs.fsimage_namespace.PathIndex joins them in one process:
an inode's path is its parent directory's path and its own name; the root is "/"; an inode under
no directory of the current tree (kept only by a snapshot) has no path and is left out, as
`hdfs oiv -p Delimited` leaves it out.

Directories' paths are built level by level from the root (directory_level, one join per level
of the tree over the directories only, ~5 % of the inodes), then every inode is joined once to
its parent's path (inventory_rows). A directory's child listed as an INodeReference (renamed
while a snapshot holds it) is a position in INODE_REFERENCE: parent_links resolves it to the
inode it refers to, as PathIndex does.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from glue_jobs.fsimage_namespace import ROOT_INODE_ID
from hdfs_events.inventory_schema import INVENTORY_FILE_COLUMNS

Transform = Callable[[DataFrame], DataFrame]


def parent_links(references: DataFrame) -> Transform:
    """(parent, child, reference) rows of INODE_DIR -> (child, parent, reference): a reference
    child becomes the inode it refers to; one whose position INODE_REFERENCE does not hold
    keeps child null (the caller refuses the image, naming it)."""
    def apply(children: DataFrame) -> DataFrame:
        refs = references.select(F.col("reference").alias("_ref"), "referred")
        return (children.join(refs, children["reference"] == refs["_ref"], "left")
                .select(F.coalesce("child", "referred").alias("child"), "parent", "reference"))
    return apply


def directory_links(links: DataFrame) -> Transform:
    """inodes -> (id, name, parent) of every directory listed under a directory."""
    def apply(inodes: DataFrame) -> DataFrame:
        dirs = inodes.where(F.col("kind") == "DIRECTORY").select("id", "name")
        return dirs.join(links.select(F.col("child").alias("id"), "parent"), "id")
    return apply


def root_path(same_session: DataFrame) -> DataFrame:
    """The first level: the root directory's (id, path), in the session of `same_session`."""
    return same_session.sparkSession.createDataFrame([(ROOT_INODE_ID, "/")],
                                                     "id bigint, path string")


def directory_level(directories: DataFrame) -> Transform:
    """(id, path) of one level of directories -> (id, path) of the directories under them."""
    def apply(level: DataFrame) -> DataFrame:
        above = level.select(F.col("id").alias("parent"), F.col("path").alias("above"))
        return (directories.join(above, "parent")
                .select("id", child_path(F.col("above"), F.col("name")).alias("path")))
    return apply


def child_path(above: Column, name: Column) -> Column:
    return F.when(above == "/", F.concat(F.lit("/"), name)).otherwise(
        F.concat(above, F.lit("/"), name))


def inventory_rows(links: DataFrame, directory_paths: DataFrame, image_txid: int) -> Transform:
    """inodes -> the inventory's rows (INVENTORY_FILE_COLUMNS): the root, and every inode whose
    parent directory has a path."""
    def apply(inodes: DataFrame) -> DataFrame:
        above = directory_paths.select(F.col("id").alias("parent"), F.col("path").alias("above"))
        # The links meet their parents' paths first (narrow rows; the paths are the directories
        # only), so the inodes' wide rows are shuffled once, by id, not a second time by parent.
        placed = links.select(F.col("child").alias("id"), "parent").join(above, "parent")
        under = (inodes.join(placed, "id")
                 .withColumn("path", child_path(F.col("above"), F.col("name"))))
        root = inodes.where(F.col("id") == ROOT_INODE_ID).withColumn("path", F.lit("/"))
        return (under.select(*_row_columns(image_txid))
                .unionByName(root.select(*_row_columns(image_txid))))
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
