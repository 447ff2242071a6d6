"""Pure transforms of the activity rollups: daily aggregates per directory prefix and owner, and
the mass-delete detector. Input: curated events (the event fields plus dt).

Owner attribution. Hadoop's inotify puts an owner only on CREATE (and on METADATA OWNER
changes); CLOSE, RENAME, UNLINK, TRUNCATE carry none. Each event gets the owner of the latest
CREATE or METADATA OWNER of its path at or before its (txid, index), following one RENAME: the
destination of a rename inherits the owner its source had. The end of an upload (ends_upload:
`x._COPYING_` -> `x`) is no hop: `x` starts with its upload's owner, so a file put and then
moved is still known. Longer rename chains, and paths whose CREATE predates the lake, keep
UNKNOWN_OWNER, so their figures still count, under that name.

Records the live agent adds (docs/contract.md, "GAP and SNAPSHOT") are never activity: a
snapshot of a million paths is the state of a million paths, not a million creates, and a GAP
is the absence of events. A SNAPSHOT is an owner fact, though (owner and inode type of its path
at its txid): after purged edits it is the only record naming the owner of a file whose CREATE
was lost. GAPs go to their own small output, gaps_daily (see daily_gaps).
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from glue_jobs import file_sizes
from glue_jobs.schema import AGENT_RECORD_TYPES

UNKNOWN_OWNER = "(unknown)"
# Temporary names Hadoop's copy tools write and then rename into place. The agent ships all
# their events: the CREATE names the owner, the CLOSE the size; the rename is no user's doing.
# - `hdfs dfs -put` / -copyFromLocal / -cp: x._COPYING_ in x's own directory, renamed to x
#   (CommandWithDestination), so the upload counts under x's prefix;
# - DistCp without -direct: <target root>/.distcp.tmp.<task attempt>.<ms>, renamed to its file
#   anywhere below that root (RetriableFileCopyCommand), so it counts at the root's prefix.
UPLOAD_SUFFIX = "._COPYING_"
DISTCP_TEMPORARY = ".distcp.tmp."
# Columns the rollups read from the curated table: Parquet reads only these.
INPUT_COLUMNS = ("cluster", "txid", "index", "type", "path", "dst_path", "timestamp",
                 "inode_type", "owner", "metadata_type", "size", "overwrite", "gap_end_txid",
                 "dt")
ACTIVITY_COLUMNS = ("cluster", "prefix", "owner", "files_created", "files_deleted",
                    "files_renamed", "bytes_written", "small_files_created",
                    "net_file_count_change", "files_overwritten", "bytes_replaced",
                    "bytes_deleted", "bytes_truncated", "dt")
# `user`, `unattributed_deletes`: who removed, from the attribution table (see mass_deletes).
MASS_DELETE_COLUMNS = ("cluster", "scope", "subject", "window_start", "window_end", "unlinks",
                       "first_txid", "last_txid", "trash_moves", "files_removed",
                       "bytes_removed", "root_path", "user", "unattributed_deletes", "dt")
# Columns mass_deletes reads from the attribution table (glue_jobs.attribution).
WHO_COLUMNS = ("cluster", "txid", "index", "user")
GAP_COLUMNS = ("cluster", "gaps", "lost_txids", "first_lost_txid", "last_lost_txid",
               "snapshot_records", "dt")


def _owner_fact() -> Column:
    is_owner_change = (F.col("type") == "METADATA") & (F.col("metadata_type") == "OWNER")
    states_owner = F.col("type").isin("CREATE", "SNAPSHOT")
    return F.when(states_owner | is_owner_change, F.col("owner"))


def _as_of(events: DataFrame, facts: DataFrame) -> DataFrame:
    """events + (known_owner, known_inode_type): the latest fact of the same path at or before
    each event. Facts sort before events of the same (txid, index)."""
    rows = (events.withColumn("_fact", F.lit(0))
            .unionByName(facts.withColumn("_fact", F.lit(1)), allowMissingColumns=True))
    history = (Window.partitionBy("cluster", "path").orderBy("txid", "index", F.desc("_fact"))
               .rowsBetween(Window.unboundedPreceding, Window.currentRow))
    return (rows.withColumn("known_owner", F.last("fact_owner", ignorenulls=True).over(history))
            .withColumn("known_inode_type",
                        F.last("fact_inode_type", ignorenulls=True).over(history))
            .where(F.col("_fact") == 0).drop("_fact", "fact_owner", "fact_inode_type"))


def path_history(events: DataFrame) -> DataFrame:
    """The rows attribute_owners and the file replay (glue_jobs.file_sizes) read from `history`:
    owner facts, RENAMEs and the other changes to files (CLOSE, TRUNCATE, UNLINK). Of the days
    before those rolled up, only these are needed."""
    return events.where(_owner_fact().isNotNull()
                        | F.col("type").isin("RENAME", "CLOSE", "TRUNCATE", "UNLINK"))


# The path state (glue_jobs.rollup_days, "owner state"): per path and per kind of fact, the
# latest fact of each column, with its (txid, index). Three kinds of owner facts because
# attribution reads three streams of them: a rename hop takes the source's owner from DIRECT and
# UPLOADED facts only (one hop: a MOVED fact must not be followed again), and an upload's end
# from DIRECT only. FILES: the live files and their sizes (glue_jobs.file_sizes), one row each.
DIRECT, UPLOADED, MOVED, FILES = 0, 1, 2, 3
STATE_COLUMNS = ("cluster", "path", "kind", "txid", "index", "fact_owner", "fact_inode_type",
                 "fact_size", "fact_opens")
STATE_SCHEMA = T.StructType([
    T.StructField("cluster", T.StringType()), T.StructField("path", T.StringType()),
    T.StructField("kind", T.IntegerType()), T.StructField("txid", T.LongType()),
    T.StructField("index", T.LongType()), T.StructField("fact_owner", T.StringType()),
    T.StructField("fact_inode_type", T.StringType()), T.StructField("fact_size", T.LongType()),
    T.StructField("fact_opens", T.BooleanType())])


def _facts_of(df: DataFrame) -> DataFrame:
    return (df.where(_owner_fact().isNotNull())
            .select("cluster", "path", "txid", "index", _owner_fact().alias("fact_owner"),
                    F.col("inode_type").alias("fact_inode_type")))


def _state_facts(state: DataFrame | None, kind: int) -> DataFrame | None:
    if state is None:
        return None
    return state.where(F.col("kind") == kind).drop("kind", "fact_size", "fact_opens")


def _union(facts: DataFrame, more: DataFrame | None) -> DataFrame:
    return facts if more is None else facts.unionByName(more)


def materialised(df: DataFrame) -> DataFrame:
    """`df` computed once, as a leaf of the plans that read it. Spark analyses and optimises a
    DataFrame's whole lineage on every join, union and action built on it, and cache() does
    not cut that lineage: the fact streams reuse one another several times over, so a run of
    200 events spent ~13 CPU s of its ~32 building plans. A local checkpoint keeps its blocks
    on the executors at MEMORY_AND_DISK (spilling, not failing, at millions of rows); losing
    an executor fails the run instead of recomputing, and the next run redoes its days."""
    return df.localCheckpoint(eager=True)


def _only(df: DataFrame, paths: DataFrame | None, column: str = "path") -> DataFrame:
    if paths is None:
        return df
    return df.join(paths.withColumnRenamed("path", column), ["cluster", column], "left_semi")


def _hop_facts(hops: DataFrame, facts: DataFrame) -> DataFrame:
    """Facts of each hop's destination: its source's owner and inode type at the hop."""
    return (_as_of(hops, facts.join(hops.select("cluster", "path"), ["cluster", "path"],
                                    "left_semi"))
            .where(F.col("known_owner").isNotNull())
            .select("cluster", F.col("dst_path").alias("path"), "txid", "index",
                    F.col("known_owner").alias("fact_owner"),
                    F.col("known_inode_type").alias("fact_inode_type")))


def _fact_streams(history: DataFrame, state: DataFrame | None, wanted: DataFrame | None
                  ) -> tuple[DataFrame, DataFrame, DataFrame]:
    """(DIRECT, UPLOADED, MOVED) facts of `history` and `state`; of the paths of `wanted` and of
    the sources renamed onto them only, when given (None: every path, for the owner state)."""
    renames = materialised(_only(history.where(F.col("type") == "RENAME")
                                 .select("cluster", "path", "txid", "index", "dst_path"),
                                 wanted, "dst_path"))
    needed = None if wanted is None else wanted.unionByName(renames.select("cluster", "path"))
    # An upload's end makes its owner a fact of the file's own name, before any hop.
    uploads = _only(history.where(ends_upload())
                    .select("cluster", "path", "txid", "index", "dst_path"), needed, "dst_path")
    every_direct = materialised(_union(_facts_of(history), _state_facts(state, DIRECT)))
    uploaded = materialised(_union(_hop_facts(uploads, every_direct),
                                   _state_facts(state, UPLOADED)))
    direct = _only(every_direct, needed)
    # One hop: the destination of a rename gets the owner its source had at that moment.
    moved = _union(_hop_facts(renames, direct.unionByName(uploaded)), _state_facts(state, MOVED))
    return direct, _only(uploaded, needed), _only(moved, wanted)


def attribute_owners(history: DataFrame, state: DataFrame | None = None
                     ) -> Callable[[DataFrame], DataFrame]:
    """events -> events with `owner` (UNKNOWN_OWNER where nothing says) and `known_inode_type`.

    `history`: the curated events up to the last day rolled up (CREATEs of earlier days name the
    owners of today's CLOSEs and UNLINKs); owner_history of it is enough. `state`: owner_state
    of the days before `history` (None: `history` starts with the lake)."""
    def transform(events: DataFrame) -> DataFrame:
        # Only the facts of the events' paths and of the sources renamed onto them count: the
        # rest of history is dropped before its sort by path (a semi-join against the events'
        # paths, which adaptive execution broadcasts), so that sort follows the days rolled
        # up, not the lake's age.
        direct, uploaded, moved = _fact_streams(
            history, state, materialised(events.select("cluster", "path").distinct()))
        attributed = _as_of(events.drop("owner"),
                            direct.unionByName(uploaded).unionByName(moved))
        return attributed.withColumn("owner", F.coalesce("known_owner", F.lit(UNKNOWN_OWNER))) \
            .drop("known_owner")
    return transform


def state_files(state: DataFrame | None) -> DataFrame | None:
    """The live files of the path state (file_sizes.FILES_SCHEMA), None without a state."""
    if state is None:
        return None
    return state.where(F.col("kind") == FILES).select(
        "cluster", "path", "txid", "index", F.col("fact_size").alias("size"),
        F.coalesce(F.col("fact_opens"), F.lit(False)).alias("fresh"))


def path_state(history: DataFrame, state: DataFrame | None = None,
               trash_pattern: str = file_sizes.DEFAULT_TRASH_PATTERN) -> DataFrame:
    """The path state after `history` (path_history of the days after `state`'s, or of every
    day when None): per (cluster, path, kind), the latest owner and the latest inode type, each
    at its own (txid, index), as one row or two; and per live file its size (kind FILES).
    Attributing and measuring later events against it gives what doing so against every earlier
    fact gives, as long as those events' txids follow (a NameNode's txids follow its clock, and
    a day is its events' NameNode date)."""
    direct, uploaded, moved = _fact_streams(history, state, None)
    streams = [direct, uploaded, materialised(moved)]  # the first two are leaves already

    def latest(facts: DataFrame, kind: int, column: str) -> DataFrame:
        top = F.max(F.when(F.col(column).isNotNull(), F.struct("txid", "index", column)))
        return (facts.groupBy("cluster", "path").agg(top.alias("_top"))
                .where(F.col("_top").isNotNull())
                .select("cluster", "path", F.lit(kind).alias("kind"), "_top.txid", "_top.index",
                        *[(F.col(f"_top.{c}") if c == column else F.lit(None).cast("string"))
                          .alias(c) for c in ("fact_owner", "fact_inode_type")]))

    parts = [latest(facts, kind, column) for kind, facts in enumerate(streams)
             for column in ("fact_owner", "fact_inode_type")]
    files = file_sizes.live_files(history, state_files(state), trash_pattern).select(
        "cluster", "path", F.lit(FILES).alias("kind"), "txid", "index",
        F.lit(None).cast("string").alias("fact_owner"), F.lit("FILE").alias("fact_inode_type"),
        F.col("size").alias("fact_size"), F.col("fresh").alias("fact_opens"))
    out = files
    for part in parts:
        out = out.unionByName(part, allowMissingColumns=True)
    return out.select(*[F.col(f.name).cast(f.dataType) for f in STATE_SCHEMA.fields])


def hadoop_events(events: DataFrame) -> DataFrame:
    """The events Hadoop's inotify reports: without the GAP and SNAPSHOT records of the agent."""
    return events.where(~F.col("type").isin(*AGENT_RECORD_TYPES))


def daily_gaps(events: DataFrame) -> DataFrame:
    """Curated events -> one row per (dt, cluster) with GAP or SNAPSHOT records that day: the
    gaps, the txids lost and their range, and the SNAPSHOT records that followed (none on a gap's
    row: the agent's policy was `stop`, or its listing began after midnight; a day of only
    SNAPSHOT records has 0 gaps and null txid range).

    dt is the day the agent found the gap (its `timestamp`); the lost edits happened before,
    on days nobody can name any more, so activity_daily of that cluster up to dt undercounts by
    at most lost_txids transactions. A table of its own, not columns of activity_daily: a gap
    belongs to a whole cluster, and repeated on every (prefix, owner) row it would be summed
    many times over by the first GROUP BY that touches it."""
    gap, snap = F.col("type") == "GAP", F.col("type") == "SNAPSHOT"
    lost = F.col("gap_end_txid") - F.col("txid")
    return (events.where(gap | snap).groupBy("dt", "cluster").agg(
        F.sum(F.when(gap, 1).otherwise(0)).cast("long").alias("gaps"),
        F.coalesce(F.sum(F.when(gap, lost)), F.lit(0)).cast("long").alias("lost_txids"),
        F.min(F.when(gap, F.col("txid"))).alias("first_lost_txid"),
        F.max(F.when(gap, F.col("gap_end_txid") - 1)).alias("last_lost_txid"),
        F.sum(F.when(snap, 1).otherwise(0)).cast("long").alias("snapshot_records"))
        .select(*GAP_COLUMNS))


def with_prefix(depth: int) -> Callable[[DataFrame], DataFrame]:
    """Adds `prefix`: the first `depth` components of the event's parent directory ("/a/b" for
    /a/b/c/file at depth 2; "/a" for /a/file; "/" for /file). RENAME counts at its source."""
    if depth < 1:
        raise ValueError(f"prefix depth must be >= 1, got {depth}")

    def transform(events: DataFrame) -> DataFrame:
        parts = F.split(F.col("path"), "/")  # "/a/b/c" -> ["", "a", "b", "c"]
        dirs = F.slice(parts, 2, F.greatest(F.size(parts) - 2, F.lit(0)))
        head = F.slice(dirs, 1, depth)
        return events.withColumn("prefix", F.concat(F.lit("/"), F.array_join(head, "/")))
    return transform


def ends_upload() -> Column:
    """A RENAME of a copy tool's temporary file into place (see UPLOAD_SUFFIX)."""
    name = F.substring_index(F.col("path"), "/", -1)
    copying = F.col("path") == F.concat(F.col("dst_path"), F.lit(UPLOAD_SUFFIX))
    return (F.col("type") == "RENAME") & (F.coalesce(copying, F.lit(False))
                                          | name.startswith(DISTCP_TEMPORARY))


def daily_activity(small_file_bytes: int) -> Callable[[DataFrame], DataFrame]:
    """Attributed, prefixed, measured events (glue_jobs.file_sizes.measure_events) -> one row per
    (dt, cluster, prefix, owner), the sums of the events' measures and:

    - files_renamed: RENAME, counted at the source prefix, but for one that ends an upload
      (ends_upload: `x._COPYING_` -> `x`, DistCp's temporary file): its CREATE and CLOSE
      already count it; and for moves into, out of or within the trash (deletes, restores,
      checkpoints)
    - small_files_created: a new file's first CLOSE under small_file_bytes
    - net_file_count_change: the sum of each event's change to the number of files (a CREATE
      that overwrites changes nothing; a RENAME onto a live file removes one)
    """
    def transform(events: DataFrame) -> DataFrame:
        t = F.col("type")

        def count_if(cond: Column) -> Column:
            return F.sum(F.when(cond, 1).otherwise(0)).cast("long")

        def total(column: str) -> Column:
            return F.coalesce(F.sum(column), F.lit(0)).cast("long").alias(column)

        moves = (t == "RENAME") & ~ends_upload() & ~F.col("trash_move")
        small = F.col("closes_new_file") & (F.col("size") < small_file_bytes)
        figures = ("files_created", "files_deleted", "files_renamed", "bytes_written",
                   "small_files_created", "files_overwritten", "bytes_replaced",
                   "bytes_deleted", "bytes_truncated")
        return (events.groupBy("dt", "cluster", "prefix", "owner").agg(
            total("files_created"), total("files_deleted"),
            count_if(moves).alias("files_renamed"),
            total("bytes_written"), count_if(small).alias("small_files_created"),
            total("file_delta").alias("net_file_count_change"),
            total("files_overwritten"), total("bytes_replaced"), total("bytes_deleted"),
            total("bytes_truncated"))
            # Groups of only METADATA or APPEND events have nothing to report.
            .where(sum((F.col(c) for c in figures), F.lit(0)) > 0)
            .select(*ACTIVITY_COLUMNS))
    return transform


def mass_deletes(window_minutes: int, threshold: int, bytes_threshold: int,
                 who: DataFrame | None = None) -> Callable[[DataFrame], DataFrame]:
    """Attributed, prefixed, measured events -> one row per (scope, subject, window) whose
    deletes (UNLINKs outside the trash and moves into it) removed at least `threshold` files or
    `bytes_threshold` bytes in a tumbling window of `window_minutes` (NameNode time, UTC);
    scope "owner" (subject: the owner) or "prefix" (subject: the directory prefix). root_path:
    the path of the delete that removed the most files (the earliest of equals).

    `who`: the attribution rows (WHO_COLUMNS) of the events' days; None: no delete has a user.
    `user` names every user who removed files in the window, the most files first (ties by
    name), joined by ", ", and is null when none of its deletes has a user; a window is one
    incident, and a cleanup job run by one account and finished by hand by another is both
    users' doing, so one name would hide the other. `unattributed_deletes`: its deletes (of
    unlinks + trash_moves) without a user, so a reader sees how much of the window the names
    cover (an `rm -r` is one delete however many files it removed)."""
    def transform(events: DataFrame) -> DataFrame:
        deletes = (events.where(F.col("deletes") & F.col("timestamp").isNotNull())
                   .withColumn("_w", F.window(F.timestamp_millis("timestamp"),
                                              f"{window_minutes} minutes")))
        deletes = (deletes.withColumn("user", F.lit(None).cast("string")) if who is None else
                   deletes.join(who.select(*WHO_COLUMNS), ["cluster", "txid", "index"], "left"))
        per_scope = [
            deletes.select(F.lit(scope).alias("scope"), F.col(col).alias("subject"), "cluster",
                           "_w", "txid", "type", "path", "files_deleted", "bytes_deleted",
                           "user")
            for scope, col in (("owner", "owner"), ("prefix", "prefix"))
        ]
        keys = ("cluster", "scope", "subject", "_w")

        def count_if(cond: Column) -> Column:
            return F.sum(F.when(cond, 1).otherwise(0)).cast("long")

        # Per user first (null: the unattributed deletes), then per window: the users' order
        # needs each one's files removed.
        by_user = per_scope[0].unionByName(per_scope[1]).groupBy(*keys, "user").agg(
            count_if(F.col("type") == "UNLINK").alias("unlinks"),
            count_if(F.col("type") == "RENAME").alias("trash_moves"),
            F.min("txid").alias("first_txid"), F.max("txid").alias("last_txid"),
            F.sum("files_deleted").cast("long").alias("files_removed"),
            F.sum("bytes_deleted").cast("long").alias("bytes_removed"),
            F.max(F.struct("files_deleted", F.negate("txid").alias("_t"), "path"))
            .alias("_root"))
        named = F.when(F.col("user").isNotNull(),
                       F.struct(F.negate("files_removed").alias("_most"), "user"))
        users = F.transform(F.sort_array(F.collect_list(named)), lambda u: u["user"])
        return (by_user.groupBy(*keys).agg(
            F.sum("unlinks").cast("long").alias("unlinks"),
            F.min("first_txid").alias("first_txid"), F.max("last_txid").alias("last_txid"),
            F.sum("trash_moves").cast("long").alias("trash_moves"),
            F.sum("files_removed").cast("long").alias("files_removed"),
            F.sum("bytes_removed").cast("long").alias("bytes_removed"),
            F.max("_root").alias("_root"),
            F.when(F.size(users) > 0, F.array_join(users, ", ")).alias("user"),
            F.sum(F.when(F.col("user").isNull(), F.col("unlinks") + F.col("trash_moves"))
                  .otherwise(0)).cast("long").alias("unattributed_deletes"))
            .where((F.col("files_removed") >= threshold)
                   | (F.col("bytes_removed") >= bytes_threshold))
            .select("cluster", "scope", "subject",
                    F.col("_w.start").alias("window_start"), F.col("_w.end").alias("window_end"),
                    "unlinks", "first_txid", "last_txid", "trash_moves", "files_removed",
                    "bytes_removed", F.col("_root.path").alias("root_path"), "user",
                    "unattributed_deletes",
                    F.date_format(F.col("_w.start"), "yyyy-MM-dd").alias("dt")))
    return transform
