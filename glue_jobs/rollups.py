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
                 "inode_type", "owner", "metadata_type", "size", "gap_end_txid", "dt")
ACTIVITY_COLUMNS = ("cluster", "prefix", "owner", "files_created", "files_deleted",
                    "files_renamed", "bytes_written", "small_files_created",
                    "net_file_count_change", "dt")
MASS_DELETE_COLUMNS = ("cluster", "scope", "subject", "window_start", "window_end", "unlinks",
                       "first_txid", "last_txid", "dt")
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


def owner_history(events: DataFrame) -> DataFrame:
    """The rows attribute_owners reads from `history`: owner facts and RENAMEs. Of the days
    before those rolled up, only these are needed."""
    return events.where(_owner_fact().isNotNull() | (F.col("type") == "RENAME"))


# The owner state (glue_jobs.rollup_days, "owner state"): per path and per kind of fact, the
# latest fact of each column, with its (txid, index). Three kinds because attribution reads
# three streams of facts: a rename hop takes the source's owner from DIRECT and UPLOADED facts
# only (one hop: a MOVED fact must not be followed again), and an upload's end from DIRECT only.
DIRECT, UPLOADED, MOVED = 0, 1, 2
STATE_COLUMNS = ("cluster", "path", "kind", "txid", "index", "fact_owner", "fact_inode_type")


def _facts_of(df: DataFrame) -> DataFrame:
    return (df.where(_owner_fact().isNotNull())
            .select("cluster", "path", "txid", "index", _owner_fact().alias("fact_owner"),
                    F.col("inode_type").alias("fact_inode_type")))


def _state_facts(state: DataFrame | None, kind: int) -> DataFrame | None:
    return None if state is None else state.where(F.col("kind") == kind).drop("kind")


def _union(facts: DataFrame, more: DataFrame | None) -> DataFrame:
    return facts if more is None else facts.unionByName(more)


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
    renames = _only(history.where(F.col("type") == "RENAME")
                    .select("cluster", "path", "txid", "index", "dst_path"), wanted, "dst_path")
    needed = None if wanted is None else wanted.unionByName(renames.select("cluster", "path"))
    # An upload's end makes its owner a fact of the file's own name, before any hop.
    uploads = _only(history.where(ends_upload())
                    .select("cluster", "path", "txid", "index", "dst_path"), needed, "dst_path")
    every_direct = _union(_facts_of(history), _state_facts(state, DIRECT))
    uploaded = _union(_hop_facts(uploads, every_direct), _state_facts(state, UPLOADED))
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
        direct, uploaded, moved = _fact_streams(history, state,
                                                events.select("cluster", "path").distinct())
        attributed = _as_of(events.drop("owner"),
                            direct.unionByName(uploaded).unionByName(moved))
        return attributed.withColumn("owner", F.coalesce("known_owner", F.lit(UNKNOWN_OWNER))) \
            .drop("known_owner")
    return transform


def owner_state(history: DataFrame, state: DataFrame | None = None) -> DataFrame:
    """The owner state after `history` (owner_history of the days after `state`'s, or of every
    day when None): per (cluster, path, kind), the latest owner and the latest inode type, each
    at its own (txid, index), as one row or two. Attributing later events against it gives what
    attributing them against every earlier fact gives, as long as those events' txids follow
    (a NameNode's txids follow its clock, and a day is its events' NameNode date)."""
    streams = _fact_streams(history, state, None)

    def latest(facts: DataFrame, kind: int, column: str) -> DataFrame:
        top = F.max(F.when(F.col(column).isNotNull(), F.struct("txid", "index", column)))
        return (facts.groupBy("cluster", "path").agg(top.alias("_top"))
                .where(F.col("_top").isNotNull())
                .select("cluster", "path", F.lit(kind).alias("kind"), "_top.txid", "_top.index",
                        *[(F.col(f"_top.{c}") if c == column else F.lit(None).cast("string"))
                          .alias(c) for c in ("fact_owner", "fact_inode_type")]))

    parts = [latest(facts, kind, column) for kind, facts in enumerate(streams)
             for column in ("fact_owner", "fact_inode_type")]
    out = parts[0]
    for part in parts[1:]:
        out = out.unionByName(part)
    return out.select(*STATE_COLUMNS)


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
    """Attributed, prefixed events -> one row per (dt, cluster, prefix, owner):

    - files_created: CREATE of a FILE
    - files_deleted: UNLINK of a path not known to be a directory (inotify's UNLINK carries no
      inode type, so an UNLINK of a path created before the lake counts as a file)
    - files_renamed: RENAME, counted at the source prefix, but for one that ends an upload
      (ends_upload: `x._COPYING_` -> `x`, DistCp's temporary file): its CREATE and CLOSE
      already count it
    - bytes_written: sum of CLOSE sizes; a CLOSE after a concat reports -1 and is left out
    - small_files_created: CLOSE with 0 <= size < small_file_bytes
    - net_file_count_change: files_created - files_deleted
    """
    def transform(events: DataFrame) -> DataFrame:
        t, size = F.col("type"), F.col("size")
        close_sized = (t == "CLOSE") & (size >= 0)

        def count_if(cond: Column) -> Column:
            return F.sum(F.when(cond, 1).otherwise(0)).cast("long")

        created = count_if((t == "CREATE") & (F.col("inode_type") == "FILE"))
        deleted = count_if((t == "UNLINK")
                           & ~F.coalesce(F.col("known_inode_type") == "DIRECTORY", F.lit(False)))
        return (events.groupBy("dt", "cluster", "prefix", "owner").agg(
            created.alias("files_created"),
            deleted.alias("files_deleted"),
            count_if((t == "RENAME") & ~ends_upload()).alias("files_renamed"),
            F.coalesce(F.sum(F.when(close_sized, size)), F.lit(0)).cast("long")
            .alias("bytes_written"),
            count_if(close_sized & (size < small_file_bytes)).alias("small_files_created"))
            .withColumn("net_file_count_change", F.col("files_created") - F.col("files_deleted"))
            # Groups of only METADATA or APPEND events have nothing to report.
            .where((F.col("files_created") + F.col("files_deleted") + F.col("files_renamed")
                    + F.col("bytes_written") + F.col("small_files_created")) > 0)
            .select(*ACTIVITY_COLUMNS))
    return transform


def mass_deletes(window_minutes: int, threshold: int) -> Callable[[DataFrame], DataFrame]:
    """Attributed, prefixed events -> one row per (scope, subject, window) with at least
    `threshold` UNLINKs in a tumbling window of `window_minutes` (NameNode time, UTC); scope
    "owner" (subject: the owner) or "prefix" (subject: the directory prefix)."""
    def transform(events: DataFrame) -> DataFrame:
        unlinks = (events.where((F.col("type") == "UNLINK") & F.col("timestamp").isNotNull())
                   .withColumn("_w", F.window(F.timestamp_millis("timestamp"),
                                              f"{window_minutes} minutes")))
        per_scope = [
            unlinks.select(F.lit(scope).alias("scope"), F.col(col).alias("subject"), "cluster",
                           "_w", "txid")
            for scope, col in (("owner", "owner"), ("prefix", "prefix"))
        ]
        both = per_scope[0].unionByName(per_scope[1])
        return (both.groupBy("cluster", "scope", "subject", "_w").agg(
            F.count(F.lit(1)).alias("unlinks"), F.min("txid").alias("first_txid"),
            F.max("txid").alias("last_txid"))
            .where(F.col("unlinks") >= threshold)
            .select("cluster", "scope", "subject",
                    F.col("_w.start").alias("window_start"), F.col("_w.end").alias("window_end"),
                    "unlinks", "first_txid", "last_txid",
                    F.date_format(F.col("_w.start"), "yyyy-MM-dd").alias("dt")))
    return transform
