"""Pure transforms of what the lake knows of each file: whether it exists and its size, at any
(txid, index), from the path state after an earlier day and the events since. The activity
rollups measure each event against it (glue_jobs.rollups.measure_events):

- a CLOSE writes its size less the size before it (an append's CLOSE reports the whole file);
- a TRUNCATE sets the size: what it cut is counted apart, never as negative writes;
- a CREATE of a live path (with Hadoop's overwrite flag) replaces that file, and so does a
  RENAME onto one;
- an UNLINK removes every live file at or below its path: `hdfs dfs -rm -r` is one UNLINK of a
  directory, whatever it held;
- a RENAME into a trash directory (TrashPolicyDefault's /user/<name>/.Trash/Current/...) is a
  delete of what it moved; the later expunge (UNLINK of a checkpoint under .Trash) is then not
  counted again, else every `-rm` would count twice and every trash interval
  (fs.trash.interval) would raise a mass delete of files nobody deleted that day.

Size facts: CREATE of a FILE (0), CLOSE (its size; -1 after a concat: unknown), TRUNCATE (its
new length), SNAPSHOT of a FILE (FileStatus's length), and the files a RENAME moved (their
sizes at the move, under the new names). Removals: every UNLINK and RENAME source; a file is
live at a moment when its latest size fact is later than every removal of its path or of a
directory above it. A rename's moves are found from the facts before the run's other moves, in
MOVE_PASSES rounds: a file moved more often than that within one run is not known under its
last name until the next run (the path state carries every move of the days before).
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

# The trash of HDFS's TrashPolicyDefault: /user/<name>/.Trash/Current/<original path> for each
# `-rm` (its checkpoints /user/<name>/.Trash/<yyMMddHHmmss>/ beside it). A job argument.
DEFAULT_TRASH_PATTERN = r"^/user/[^/]+/\.Trash(/|$)"
# `hdfs dfs -put` then `-mv` in one run is two moves of one file.
MOVE_PASSES = 2
SIZE_FACT_COLUMNS = ("cluster", "path", "txid", "index", "size", "opens")


def ancestors_or_self(path: Column) -> Column:
    """"/a/b/c" -> ["/a", "/a/b", "/a/b/c"]."""
    parts = F.slice(F.split(path, "/"), 2, 1 << 20)  # "/a/b/c" -> ["a", "b", "c"]
    return F.transform(F.sequence(F.lit(1), F.size(parts)),
                       lambda n: F.concat(F.lit("/"), F.array_join(F.slice(parts, 1, n), "/")))


def _before(a_txid: Column, a_index: Column, b_txid: Column, b_index: Column) -> Column:
    return (a_txid < b_txid) | ((a_txid == b_txid) & (a_index < b_index))


def in_trash(pattern: str) -> Column:
    """A RENAME into the trash (a delete), given the trash pattern."""
    return ((F.col("type") == "RENAME") & F.coalesce(F.col("dst_path").rlike(pattern), F.lit(False))
            & ~F.col("path").rlike(pattern))


def size_facts(events: DataFrame) -> DataFrame:
    """Events -> their size facts (SIZE_FACT_COLUMNS; `opens`: a CREATE, after which the first
    CLOSE is a new file's)."""
    t, file = F.col("type"), F.col("inode_type") == "FILE"
    size = (F.when(t == "CREATE", F.lit(0)).when(F.col("size") >= 0, F.col("size"))
            .cast("long"))
    return (events.where(((t == "CREATE") & file) | t.isin("CLOSE", "TRUNCATE")
                         | ((t == "SNAPSHOT") & file))
            .select("cluster", "path", "txid", "index", size.alias("size"),
                    (t == "CREATE").alias("opens")))


def removals(events: DataFrame) -> DataFrame:
    """(cluster, path, txid, index) of every UNLINK and RENAME source."""
    return (events.where(F.col("type").isin("UNLINK", "RENAME"))
            .select("cluster", "path", "txid", "index"))


def live_files(roots: DataFrame, facts: DataFrame, removed: DataFrame, *,
               self_only: bool = False) -> DataFrame:
    """roots (cluster, txid, index, root) -> (cluster, txid, index, path, size): the files live
    at or below each root (only the root itself with `self_only`) just before the root's
    (txid, index). `facts`: size facts; `removed`: removals."""
    r = roots.select("cluster", F.col("txid").alias("r_txid"), F.col("index").alias("r_index"),
                     "root")
    f = facts.select("cluster", "path", "txid", "index", "size", "opens")
    if self_only:
        candidates = f.join(r, (f["cluster"] == r["cluster"]) & (f["path"] == r["root"])) \
            .drop(r["cluster"])
    else:
        candidates = f.withColumn("root", F.explode(ancestors_or_self(F.col("path")))) \
            .join(r, ["cluster", "root"])
    keys = ["cluster", "r_txid", "r_index", "path"]
    latest = (candidates.where(_before(F.col("txid"), F.col("index"), F.col("r_txid"),
                                       F.col("r_index")))
              .groupBy(*keys).agg(F.max(F.struct("txid", "index", "size")).alias("f")))
    k = removed.select("cluster", F.col("path").alias("anc"), F.col("txid").alias("k_txid"),
                       F.col("index").alias("k_index"))
    # One left join and one aggregation, not an anti-join against itself: the plan holds
    # `facts` once (the rollups nest this transform, and Catalyst's optimizer time grows with
    # every copy).
    kills = (_before(F.col("f.txid"), F.col("f.index"), F.col("k_txid"), F.col("k_index"))
             & _before(F.col("k_txid"), F.col("k_index"), F.col("r_txid"), F.col("r_index")))
    return (latest.withColumn("anc", F.explode(ancestors_or_self(F.col("path"))))
            .join(k, ["cluster", "anc"], "left")
            .groupBy(*keys, "f").agg(F.max(F.coalesce(kills, F.lit(False))).alias("_killed"))
            .where(~F.col("_killed"))
            .select("cluster", F.col("r_txid").alias("txid"), F.col("r_index").alias("index"),
                    "path", F.col("f.size").alias("size")))


def moved_facts(events: DataFrame, facts: DataFrame, trash_pattern: str) -> DataFrame:
    """The size facts of the files each RENAME moved, under their new names (none into or out
    of the trash: what sits there is already counted deleted)."""
    renames = events.where((F.col("type") == "RENAME") & ~F.col("path").rlike(trash_pattern)
                           & ~F.col("dst_path").rlike(trash_pattern))
    roots = renames.select("cluster", "txid", "index", F.col("path").alias("root"))
    removed = removals(events)
    known = facts
    moved = None
    for _ in range(MOVE_PASSES):
        live = live_files(roots, known, removed)
        moved = (live.join(renames.select("cluster", "txid", "index", "dst_path",
                                          F.col("path").alias("src")),
                           ["cluster", "txid", "index"])
                 .select("cluster",
                         F.concat(F.col("dst_path"),
                                  F.expr("substring(path, length(src) + 1)")).alias("path"),
                         "txid", "index", "size", F.lit(False).alias("opens")))
        known = facts.unionByName(moved)
    assert moved is not None
    return moved


def _not_removed(facts: DataFrame, removed: DataFrame) -> DataFrame:
    """Facts no later removal of their path or of a directory above it undid."""
    k = removed.select("cluster", F.col("path").alias("anc"), F.col("txid").alias("k_txid"),
                       F.col("index").alias("k_index"))
    kills = _before(F.col("txid"), F.col("index"), F.col("k_txid"), F.col("k_index"))
    return (facts.withColumn("anc", F.explode(ancestors_or_self(F.col("path"))))
            .join(k, ["cluster", "anc"], "left")
            .groupBy(*facts.columns).agg(F.max(F.coalesce(kills, F.lit(False))).alias("_k"))
            .where(~F.col("_k")).drop("_k"))


def live_file_state(facts: DataFrame, removed: DataFrame) -> DataFrame:
    """The files live after every fact and removal given: per path its latest size fact, when
    nothing removed it since (SIZE_FACT_COLUMNS; size null: unknown)."""
    latest = (facts.groupBy("cluster", "path")
              .agg(F.max(F.struct("txid", "index", "size", "opens")).alias("f"))
              .select("cluster", "path", "f.txid", "f.index", "f.size", "f.opens"))
    return _not_removed(latest, removed)


# Per-event measures measure_events adds, summed by glue_jobs.rollups.daily_activity.
MEASURE_COLUMNS = ("files_created", "files_overwritten", "bytes_replaced", "files_deleted",
                   "bytes_deleted", "bytes_written", "bytes_truncated", "closes_new_file",
                   "file_delta", "deletes", "trash_move")


def _sized(roots: DataFrame, facts: DataFrame, removed: DataFrame, prefix: str, *,
           self_only: bool = False) -> DataFrame:
    return (live_files(roots, facts, removed, self_only=self_only)
            .groupBy("cluster", "txid", "index")
            .agg(F.count(F.lit(1)).alias(f"{prefix}_files"),
                 F.sum("size").cast("long").alias(f"{prefix}_bytes")))


def measure_events(facts: DataFrame, removed: DataFrame, trash_pattern: str
                   ) -> Callable[[DataFrame], DataFrame]:
    """Attributed events (with known_inode_type) -> the same events with MEASURE_COLUMNS.

    `facts`: size facts of the path state, the earlier days read and these events, with the
    moves among them (size_facts, moved_facts); `removed`: removals of the same events.
    - files_created: CREATE of a FILE that replaced no live file;
    - files_overwritten, bytes_replaced: CREATE with the overwrite flag of a live file, or a
      RENAME onto one (its former size; 0 when unknown);
    - files_deleted, bytes_deleted (deletes = 1): an UNLINK outside the trash, or a RENAME into
      it: the live files at or below its path; a path the lake has no live file under counts as
      one file of unknown size unless known to be a directory (created before the lake);
    - bytes_written: a CLOSE's size less the size before it (0 after its CREATE); a CLOSE
      after a concat (-1) or after an append to a file of unknown size writes no known bytes;
    - bytes_truncated: a TRUNCATE's cut;
    - closes_new_file: the first CLOSE after a CREATE (with its size: small files);
    - file_delta: what the event changed the number of files by;
    - trash_move: a RENAME into, out of or within the trash (no user's rename)."""
    def transform(events: DataFrame) -> DataFrame:
        t, keys = F.col("type"), ["cluster", "txid", "index"]
        trashed = F.col("path").rlike(trash_pattern)
        deleting = ((t == "UNLINK") & ~trashed) | in_trash(trash_pattern)
        deleted = _sized(events.where(deleting).select(*keys, F.col("path").alias("root")),
                         facts, removed, "del")
        replacing = (((t == "CREATE") & (F.col("inode_type") == "FILE"))
                     | ((t == "RENAME") & ~trashed & ~F.col("dst_path").rlike(trash_pattern)))
        replaced = _sized(events.where(replacing).select(
            *keys, F.when(t == "CREATE", F.col("path")).otherwise(F.col("dst_path")).alias("root")),
            facts, removed, "old", self_only=True)
        # The size before each CLOSE and TRUNCATE: the previous size fact of its own path.
        sized = events.where(t.isin("CLOSE", "TRUNCATE")).select("cluster", "path")
        prior = Window.partitionBy("cluster", "path").orderBy("txid", "index")
        before = (facts.join(sized, ["cluster", "path"], "left_semi")
                  .select(*keys, "path", F.lag("size").over(prior).alias("prev_size"),
                          F.lag("opens").over(prior).alias("prev_opens")))
        out = (events.join(deleted, keys, "left").join(replaced, keys, "left")
               .join(before, [*keys, "path"], "left"))
        size, prev = F.col("size"), F.col("prev_size")
        overwrites = ((t == "CREATE") & F.coalesce(F.col("overwrite"), F.lit(False))
                      | (t == "RENAME")) & F.coalesce(F.col("old_files") > 0, F.lit(False))
        created = (t == "CREATE") & (F.col("inode_type") == "FILE") & ~overwrites
        files_deleted = (F.when(~deleting, 0).when(F.col("del_files") > 0, F.col("del_files"))
                         .when(F.col("known_inode_type") == "DIRECTORY", 0).otherwise(1))
        renamed_over = (t == "RENAME") & overwrites
        return (out.select(
            *events.columns,
            created.cast("long").alias("files_created"),
            overwrites.cast("long").alias("files_overwritten"),
            F.when(overwrites, F.coalesce(F.col("old_bytes"), F.lit(0))).otherwise(0)
            .cast("long").alias("bytes_replaced"),
            files_deleted.cast("long").alias("files_deleted"),
            F.when(deleting, F.coalesce(F.col("del_bytes"), F.lit(0))).otherwise(0)
            .cast("long").alias("bytes_deleted"),
            F.when((t == "CLOSE") & (size >= 0) & prev.isNotNull(),
                   F.greatest(size - prev, F.lit(0))).otherwise(0).cast("long")
            .alias("bytes_written"),
            F.when((t == "TRUNCATE") & prev.isNotNull(), F.greatest(prev - size, F.lit(0)))
            .otherwise(0).cast("long").alias("bytes_truncated"),
            ((t == "CLOSE") & (size >= 0) & F.coalesce(F.col("prev_opens"), F.lit(False)))
            .alias("closes_new_file"),
            (created.cast("long") - files_deleted - renamed_over.cast("long"))
            .cast("long").alias("file_delta"),
            deleting.alias("deletes"),
            ((t == "RENAME") & (trashed | F.coalesce(F.col("dst_path").rlike(trash_pattern),
                                                     F.lit(False)))).alias("trash_move")))
    return transform
