"""Who made each change, as a Spark transform: curated events x curated audit records ->
attribution rows, one per event whose user is certain, keyed (cluster, txid, index). An event
without a row is unattributed (a reader's LEFT JOIN gives null user).

The rules are glue_jobs/attribution_match.py's (docs/glue.md, "Who made each change"): events
and allowed audit lines are grouped by what both carry (command class, path, rename's
destination), each group matched in order within the time window, and a user kept only where no
other reading gives another. Then:
- every event of a txid takes its txid's attribution (a concat's UNLINKs and CLOSE are one call);
- a CLOSE takes its writer's: the `complete` RPC is not audited, so a CLOSE takes the user of
  the CREATE, APPEND or TRUNCATE just before it on its path (txid order), and none when a
  RENAME or UNLINK of the path came between.
"""

from __future__ import annotations

from itertools import chain

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from glue_jobs.attribution_match import (
    AUDIT_CLASSES,
    CREATE_CLASSES,
    METADATA_CLASSES,
    OTHER_CLASSES,
    EventSide,
    LineSide,
    match_group,
)
from glue_jobs.schema import AGENT_RECORD_TYPES

# The line is written a few ms after its edit is synced; seconds leave room for a slow sync.
DEFAULT_WINDOW_MS = 5_000
EVENT_INPUT_COLUMNS = ("cluster", "txid", "index", "type", "path", "dst_path", "timestamp",
                       "inode_type", "owner", "group", "perms", "metadata_type",
                       "xattrs_removed")
AUDIT_INPUT_COLUMNS = ("cluster", "host", "file_id", "offset", "time", "allowed", "user", "auth",
                       "real_user", "ip", "cmd", "src", "dst", "perm", "caller_context")
WHO_COLUMNS = ("user", "auth", "real_user", "client_ip", "caller_context", "audit_host",
               "audit_file_id", "audit_offset")
ATTRIBUTION_COLUMNS = ("cluster", "txid", "index", *WHO_COLUMNS)
ATTRIBUTION_SCHEMA = T.StructType(
    [T.StructField("cluster", T.StringType(), False), T.StructField("txid", T.LongType(), False),
     T.StructField("index", T.LongType(), False)]
    + [T.StructField(c, T.StringType(), True) for c in WHO_COLUMNS[:-1]]
    + [T.StructField("audit_offset", T.LongType(), True)])
_KEYS = ("cluster", "cls", "key_path", "key_dst")
_MATCH_SCHEMA = T.ArrayType(T.StructType(
    [T.StructField("txid", T.LongType(), False), *ATTRIBUTION_SCHEMA.fields[3:]]))


def _lookup(mapping: dict[str, str], key: Column) -> Column:
    return F.create_map(*(F.lit(x) for x in chain.from_iterable(mapping.items())))[key]


def _event_class() -> Column:
    """attribution_match.event_class as a column."""
    t = F.col("type")
    return (F.when(t == "CREATE", _lookup(CREATE_CLASSES, F.col("inode_type")))
            .when(t == "APPEND", F.when(F.col("in_concat"), "concat").otherwise("append"))
            .when((t == "METADATA") & (F.col("metadata_type") == "XATTRS"),
                  F.when(F.col("xattrs_removed"), "removeXAttr").otherwise("setXAttr"))
            .when(t == "METADATA", _lookup(METADATA_CLASSES, F.col("metadata_type")))
            .otherwise(_lookup(OTHER_CLASSES, t)))


def _match_udf(window_ms: int) -> Column:
    def match(cls: str, events: list[T.Row], lines: list[T.Row]) -> list[tuple[object, ...]]:
        found = match_group(cls, [EventSide(**e.asDict()) for e in events],
                            [LineSide(**x.asDict()) for x in lines], window_ms)
        return [(txid, x.user, x.auth, x.real_user, x.ip, x.caller_context, x.host, x.file_id,
                 x.offset) for txid, x in found.items()]
    return F.udf(match, _MATCH_SCHEMA)


def event_bounds(events: DataFrame) -> DataFrame:
    """Events (agent records left out) with lo/hi, the bounds of their NameNode time: their own
    timestamp, else the nearest ones around them in txid order (edits are timestamped under
    the write lock that orders txids, so timestamps never go back along txids)."""
    order = Window.partitionBy("cluster").orderBy("txid", "index")
    # Both bounds as running frames (unbounded preceding to the row): Spark recomputes a frame
    # running to unbounded following for every row, quadratic in a cluster's events.
    backwards = Window.partitionBy("cluster").orderBy(F.desc("txid"), F.desc("index"))
    return (events.select(*EVENT_INPUT_COLUMNS)
            .where(~F.col("type").isin(*AGENT_RECORD_TYPES))
            .withColumn("lo", F.last("timestamp", ignorenulls=True).over(
                order.rowsBetween(Window.unboundedPreceding, 0)))
            .withColumn("hi", F.last("timestamp", ignorenulls=True).over(
                backwards.rowsBetween(Window.unboundedPreceding, 0)))
            # Only a concat's batch holds more than one event (its APPEND first).
            .withColumn("in_concat", F.coalesce(F.lead("txid").over(order) == F.col("txid"),
                                                F.lit(False))))


def attributed_txids(events: DataFrame, audit: DataFrame,
                     window_ms: int = DEFAULT_WINDOW_MS) -> DataFrame:
    """(cluster, txid, WHO_COLUMNS) for each txid whose call's user is certain; `events` as
    event_bounds gives them."""
    # A concat's line names its sources as Arrays.toString(srcs) ("[/a, /b]"); its batch has
    # one UNLINK per source, in that order.
    sources = (events.where(F.col("in_concat") & (F.col("type") == "UNLINK"))
               .groupBy("cluster", "txid")
               .agg(F.sort_array(F.collect_list(F.struct("index", "path"))).alias("s"))
               .select("cluster", "txid", F.concat(F.lit("["), F.concat_ws(", ", "s.path"),
                                                   F.lit("]")).alias("sources")))
    anchors = (events.where(F.col("index") == 0).withColumn("cls", _event_class())
               .where(F.col("cls").isNotNull() & (F.col("type") != "CLOSE"))
               .join(sources, ["cluster", "txid"], "left")
               .withColumn("key_path", F.col("path"))
               .withColumn("key_dst", F.when(F.col("cls") == "rename", F.col("dst_path"))
                           .when(F.col("cls") == "concat", F.col("sources"))
                           .otherwise(F.lit(""))))
    lines = (audit.select(*AUDIT_INPUT_COLUMNS)
             .where(F.col("allowed") & F.col("time").isNotNull())
             .withColumn("cls", _lookup(AUDIT_CLASSES, F.col("cmd")))
             .where(F.col("cls").isNotNull())
             .withColumn("key_path", F.when(F.col("cls") == "concat", F.col("dst"))
                         .otherwise(F.col("src")))
             .withColumn("key_dst", F.when(F.col("cls") == "rename", F.col("dst"))
                         .when(F.col("cls") == "concat", F.col("src"))
                         .otherwise(F.lit(""))))
    event_groups = anchors.groupBy(*_KEYS).agg(F.collect_list(F.struct(
        "txid", "lo", "hi", "owner", "group", "perms")).alias("events"))
    line_groups = lines.groupBy(*_KEYS).agg(F.collect_list(F.struct(
        "time", "host", "file_id", "offset", "user", "auth", "real_user", "ip",
        "caller_context", "perm")).alias("lines"))
    found = _match_udf(window_ms)("cls", "events", "lines")
    return (event_groups.join(line_groups, list(_KEYS))
            .select("cluster", F.explode(found).alias("m"))
            .select("cluster", "m.*"))


def attribute_events(events: DataFrame, audit: DataFrame,
                     window_ms: int = DEFAULT_WINDOW_MS) -> DataFrame:
    """ATTRIBUTION_COLUMNS for each event of `events` (curated columns) whose user is certain
    from `audit` (curated audit columns)."""
    bounded = event_bounds(events)
    by_txid = attributed_txids(bounded, audit, window_ms)
    calls = (bounded.where(F.col("type") != "CLOSE").select("cluster", "txid", "index")
             .join(by_txid, ["cluster", "txid"]))
    return calls.unionByName(_closes(bounded, calls)).select(*ATTRIBUTION_COLUMNS)


def _closes(events: DataFrame, calls: DataFrame) -> DataFrame:
    writes = (F.col("type").isin("APPEND", "TRUNCATE", "CLOSE", "UNLINK", "RENAME")
              | ((F.col("type") == "CREATE") & (F.col("inode_type") == "FILE")))
    on_path = events.where(writes).select("cluster", "path", "txid", "index", "type")
    renamed_to = (events.where(F.col("type") == "RENAME")
                  .select("cluster", F.col("dst_path").alias("path"), "txid", "index", "type"))
    order = Window.partitionBy("cluster", "path").orderBy("txid", "index")
    before = F.lag(F.struct("txid", "index", "type")).over(order)
    closes = (on_path.unionByName(renamed_to).withColumn("before", before)
              .where((F.col("type") == "CLOSE")
                     & F.col("before.type").isin("CREATE", "APPEND", "TRUNCATE"))
              .select("cluster", "txid", "index", F.col("before.txid").alias("w_txid"),
                      F.col("before.index").alias("w_index")))
    writers = calls.select("cluster", F.col("txid").alias("w_txid"),
                           F.col("index").alias("w_index"), *WHO_COLUMNS)
    return closes.join(writers, ["cluster", "w_txid", "w_index"]).drop("w_txid", "w_index")
