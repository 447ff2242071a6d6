"""The activity rollups' file figures in Spark: each cluster's events replayed in (txid, index)
order over the live files the path state holds (glue_jobs.file_tree says what each event
counts), in one task per cluster, and those per-event measures joined to the events.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from glue_jobs import file_tree

# The trash of HDFS's TrashPolicyDefault: /user/<name>/.Trash/Current/<original path> for each
# `-rm` (its checkpoints /user/<name>/.Trash/<yyMMddHHmmss>/ beside it). A job argument.
DEFAULT_TRASH_PATTERN = r"^/user/[^/]+/\.Trash(/|$)"
# The live files: the path state's FILES rows (glue_jobs.rollups) and live_files' output.
FILES_SCHEMA = T.StructType([
    T.StructField("cluster", T.StringType()), T.StructField("path", T.StringType()),
    T.StructField("txid", T.LongType()), T.StructField("index", T.LongType()),
    T.StructField("size", T.LongType()), T.StructField("fresh", T.BooleanType())])
MEASURES_SCHEMA = T.StructType([
    T.StructField("cluster", T.StringType()), T.StructField("txid", T.LongType()),
    T.StructField("index", T.LongType()),
    *[T.StructField(f, T.BooleanType() if f in ("closes_new_file", "deletes", "trash_move")
                    else T.LongType()) for f in file_tree.MEASURES]])
# Per-event measures measure_events adds, summed by glue_jobs.rollups.daily_activity.
MEASURE_COLUMNS = ("files_created", "files_overwritten", "bytes_replaced", "files_deleted",
                   "bytes_deleted", "bytes_written", "bytes_truncated", "closes_new_file",
                   "file_delta", "deletes", "trash_move")


def _replay_input(history: DataFrame, files: DataFrame | None) -> DataFrame:
    """The rows file_tree replays: `files` first (each older than every event of `history`),
    then the events that change files, one partition per cluster, in (txid, index) order."""
    rows = history.where(F.col("type").isin(*file_tree.CHANGES)).select(
        "cluster", "txid", "index", "type", "path", "dst_path", "size", "inode_type",
        "overwrite", F.lit(None).cast("boolean").alias("fresh"))
    if files is not None:
        rows = rows.unionByName(files.select(
            "cluster", "txid", "index", F.lit(file_tree.STATE_FILE).alias("type"), "path",
            F.lit(None).cast("string").alias("dst_path"), "size",
            F.lit("FILE").alias("inode_type"), F.lit(None).cast("boolean").alias("overwrite"),
            "fresh"))
    return rows.repartition("cluster").sortWithinPartitions("cluster", "txid", "index")


def replayed(history: DataFrame, files: DataFrame | None, trash_pattern: str) -> DataFrame:
    """MEASURES_SCHEMA: what each event of `history` (the events after `files`, the live files
    before them; None: `history` starts with the lake) did to the files, for the events that
    did something."""
    rows = _replay_input(history, files).rdd.mapPartitions(
        partial(file_tree.replay_measures, trash_pattern=trash_pattern))
    return history.sparkSession.createDataFrame(rows, MEASURES_SCHEMA)


def live_files(history: DataFrame, files: DataFrame | None, trash_pattern: str) -> DataFrame:
    """FILES_SCHEMA: the files live after `files` and then `history`, with their sizes."""
    rows = _replay_input(history, files).rdd.mapPartitions(
        partial(file_tree.replay_files, trash_pattern=trash_pattern))
    return history.sparkSession.createDataFrame(rows, FILES_SCHEMA)


def measure_events(measures: DataFrame) -> Callable[[DataFrame], DataFrame]:
    """Attributed events (with known_inode_type) -> the same events with MEASURE_COLUMNS, from
    `measures` (replayed over the same events):
    - files_created: CREATE of a FILE that replaced no live file;
    - files_overwritten, bytes_replaced: CREATE with the overwrite flag of a live file, or a
      RENAME onto one (its former size; 0 when unknown);
    - files_deleted, bytes_deleted (deletes): an UNLINK outside the trash, or a RENAME into
      it: the live files at or below its path; a path the lake knows nothing under counts as
      one file of unknown size unless its owner facts say it is a directory;
    - bytes_written: a CLOSE's size less the size before it (0 after its CREATE); a CLOSE
      after a concat (-1) or of a file the lake never saw sized writes no known bytes;
    - bytes_truncated: a TRUNCATE's cut;
    - closes_new_file: the first CLOSE after a CREATE (with its size: small files);
    - file_delta: what the event changed the number of files by;
    - trash_move: a RENAME into, out of or within the trash (no user's rename)."""
    def transform(events: DataFrame) -> DataFrame:
        out = events.join(measures, ["cluster", "txid", "index"], "left")

        def zero(column: str) -> F.Column:
            return F.coalesce(F.col(column), F.lit(0)).cast("long")

        def no(column: str) -> F.Column:
            return F.coalesce(F.col(column), F.lit(False))

        deleted = (F.when(~no("deletes"), F.lit(0)).when(F.col("files_deleted").isNotNull(),
                                                         F.col("files_deleted"))
                   .when(F.col("known_inode_type") == "DIRECTORY", 0).otherwise(1)
                   .cast("long"))
        renamed_over = (F.col("type") == "RENAME") & (zero("files_overwritten") > 0)
        return out.select(
            *events.columns, zero("files_created").alias("files_created"),
            zero("files_overwritten").alias("files_overwritten"),
            zero("bytes_replaced").alias("bytes_replaced"), deleted.alias("files_deleted"),
            zero("bytes_deleted").alias("bytes_deleted"),
            zero("bytes_written").alias("bytes_written"),
            zero("bytes_truncated").alias("bytes_truncated"),
            no("closes_new_file").alias("closes_new_file"),
            (zero("files_created") - deleted - renamed_over.cast("long")).alias("file_delta"),
            no("deletes").alias("deletes"), no("trash_move").alias("trash_move"))
    return transform
