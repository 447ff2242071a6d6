"""One run of the attribution job: the days whose events or audit records changed since the last
run (glue_jobs.attribution_days), recomputed whole from the curated events and audit tables at
their catalogs' current locations (glue_jobs.attribution.attribute_events), each written to a
fresh run prefix curated/attribution/cluster=<c>/dt=<d>/run=<id>/ and switched in the
attribution table's catalog; then the inputs document; then superseded runs deleted after their
grace period. A reader sees a day's whole old attribution or its whole new one. With a log
group, the attributions that changed against the replaced rows are logged for Logs Insights
(glue_jobs/attribution_log.py) before the switch: a run that fails after logging logs the same
lines again on its retry, which the saved queries count once (logged after the switch, a run
failing between the two would lose them: its retry compares against the new rows). The entry
script (glue_jobs/attribute_events.py) parses the arguments, builds the session and calls
attribute().
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from glue_jobs import attribution_days, attribution_log, rollup_days
from glue_jobs.attribution import ATTRIBUTION_COLUMNS, DEFAULT_WINDOW_MS, attribute_events
from glue_jobs.audit_io import read_audit
from glue_jobs.catalog import PartitionCatalog, PartitionKey
from glue_jobs.curated_io import read_published, remove_superseded_runs
from glue_jobs.storage import LakeStore
from hdfs_events.lake_layout import ATTRIBUTION_PREFIX, new_run_id, run_prefix


@dataclass(frozen=True, slots=True)
class AttributionSettings:
    window_ms: int = DEFAULT_WINDOW_MS
    retain: timedelta = timedelta(hours=24)
    compression: str = "zstd"
    log_group: str = ""  # CloudWatch Logs group of the attribution lines; "": none logged


@dataclass(frozen=True, slots=True)
class AttributionReport:
    run_id: str = ""
    days: tuple[str, ...] = ()  # "<cluster>/<dt>" recomputed
    events_read: int = 0
    rows_written: int = 0
    lines_logged: int = 0
    runs_removed: int = 0


def attribute(spark: SparkSession, lake: LakeStore, events: PartitionCatalog,
              audit: PartitionCatalog, catalog: PartitionCatalog,
              settings: AttributionSettings) -> AttributionReport:
    """`lake`: where the attribution table, its run prefixes and the inputs document live;
    the events and audit tables are read wherever their catalogs point."""
    now = attribution_days.Inputs(events.locations(), audit.locations())
    replaced = catalog.locations()
    day_plan = attribution_days.plan(now, attribution_days.load_inputs(lake))
    if not day_plan.write:
        attribution_days.save_inputs(lake, now)
        return AttributionReport()
    read = set(day_plan.read)
    event_rows = read_published(spark, [loc for k, loc in now.events.items() if k in read])
    audit_rows = read_audit(spark, [loc for k, loc in now.audit.items() if k in read])
    days = spark.createDataFrame(list(day_plan.write), "cluster string, dt string")
    rows = (attribute_events(event_rows, audit_rows, settings.window_ms)
            .join(event_rows.select("cluster", "txid", "index", "dt"),
                  ["cluster", "txid", "index"])
            .join(F.broadcast(days), ["cluster", "dt"])
            .select(*ATTRIBUTION_COLUMNS, "dt"))
    run_id = new_run_id()
    rows = rows.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        written = {(r["cluster"], r["dt"]): r["n"] for r in rows.groupBy("cluster", "dt")
                   .agg(F.count(F.lit(1)).alias("n")).collect()}
        (rows.withColumn("run", F.lit(run_id)).repartition("cluster", "dt")
         .write.mode("append").partitionBy("cluster", "dt", "run")
         .option("compression", settings.compression)
         .parquet(lake.root_uri + ATTRIBUTION_PREFIX))
        logged = (_log_changes(spark, rows, event_rows,
                               [loc for k, loc in replaced.items() if k in written],
                               settings.log_group, run_id)
                  if settings.log_group else 0)
    finally:
        rows.unpersist()
    # A day left with no attributed event keeps its old location: Spark writes no folder for
    # an empty partition, and a catalog location must hold files for Spark to read it.
    catalog.publish({k: lake.root_uri + run_prefix(ATTRIBUTION_PREFIX, *k, run_id)
                     for k in written})
    _mark_for_rollups(lake, run_id, written)
    attribution_days.save_inputs(lake, now)
    removed = remove_superseded_runs(lake, written, catalog.locations(), datetime.now(UTC),
                                     settings.retain, ATTRIBUTION_PREFIX)
    return AttributionReport(run_id=run_id, days=tuple(f"{c}/{d}" for c, d in day_plan.write),
                             events_read=event_rows.count(), rows_written=sum(written.values()),
                             lines_logged=logged, runs_removed=removed)


def _mark_for_rollups(lake: LakeStore, run_id: str, written: Iterable[PartitionKey]) -> None:
    """The rewritten days owe the rollups a run (their mass deletes' users), marked as the
    compaction marks its days (glue_jobs.rollup_days): after the switch and before the inputs
    document, so a crash in between recomputes and marks them again, and no rewritten day goes
    unmarked."""
    rollup_days.mark(lake, f"{run_id}-attribution", written)


def _log_changes(spark: SparkSession, rows: DataFrame, events: DataFrame,
                 replaced: list[str], group: str, run_id: str) -> int:
    """Logs the attributions of `rows` that differ from the rows at `replaced` (the
    locations the run's catalog switch supersedes); the number of lines."""
    previous = attribution_log.read_attribution(spark, replaced)
    lines = attribution_log.log_lines(rows, previous, events).persist(
        StorageLevel.MEMORY_AND_DISK)
    try:
        if lines.isEmpty():  # no stream for a run that changed no answer
            return 0
        return attribution_log.send(lines, group, attribution_log.open_stream(group, run_id))
    finally:
        lines.unpersist()
