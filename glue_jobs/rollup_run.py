"""One run of the activity rollups job: the days to roll up chosen (glue_jobs.rollup_days: the
days compaction runs marked, or a range given by hand), their curated events read at the
catalog's current locations with the owner facts of every earlier day, the pure transforms of
glue_jobs.rollups applied, each output written by day. The entry script
(glue_jobs/activity_rollups.py) parses the arguments, builds the session and calls roll_up().

Writes curated/activity_daily/dt=<d>/, curated/mass_deletes/dt=<d>/ and curated/gaps_daily/dt=<d>/
(edits purged before the agent read them: how far activity_daily undercounts), replacing only
the dts it computed (dynamic partition overwrite), so re-running a day gives the same rows; then
clears the marks it rolled up. GAP and SNAPSHOT records (the live agent's) are never activity;
SNAPSHOTs still name owners.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from glue_jobs import rollup_days, rollups
from glue_jobs.catalog import PartitionCatalog
from glue_jobs.curated_io import read_curated
from glue_jobs.layout import ACTIVITY_PREFIX, GAPS_PREFIX, MASS_DELETE_PREFIX
from glue_jobs.storage import LakeStore


@dataclass(frozen=True, slots=True)
class RollupSettings:
    # Either one given: that range of days (by hand); neither: the days compaction marked.
    from_dt: str = ""
    to_dt: str = ""
    prefix_depth: int = 2
    small_file_bytes: int = 1_048_576
    window_minutes: int = 10
    threshold: int = 1000

    @property
    def by_hand(self) -> bool:
        return bool(self.from_dt or self.to_dt)


@dataclass(frozen=True, slots=True)
class RollupFrames:
    activity: DataFrame
    mass_deletes: DataFrame
    gaps: DataFrame
    plan: rollup_days.DayPlan
    events: DataFrame  # persisted: the attributed events all three outputs read


@dataclass(frozen=True, slots=True)
class RollupReport:
    days: tuple[str, ...] = ()
    mass_delete_days: tuple[str, ...] = ()
    history_days: int = 0  # earlier days whose owner facts were read
    mass_delete_windows: int = 0
    gaps: int = 0
    lost_txids: int = 0
    marks_cleared: int = 0  # compaction runs' documents of days rolled up


def roll_up(spark: SparkSession, source: LakeStore, catalog: PartitionCatalog,
            target: LakeStore, settings: RollupSettings) -> RollupReport:
    """Rolls up the days the settings select (by hand) or the compaction runs marked in
    `source`, writes them, and only then clears those marks: a run that fails leaves them."""
    marked = None if settings.by_hand else rollup_days.pending(source)
    frames = rollup_frames(spark, catalog, settings, marked.days if marked else frozenset())
    try:
        report = _write(frames, target) if frames.plan.days else RollupReport()
    finally:
        frames.events.unpersist()
    # Marks of days no longer in the catalog have nothing to roll up: cleared as well.
    return replace(report, marks_cleared=rollup_days.clear(source, marked) if marked else 0)


def _write(frames: RollupFrames, target: LakeStore) -> RollupReport:
    write_by_day(frames.activity, target.root_uri + ACTIVITY_PREFIX)
    write_by_day(frames.mass_deletes, target.root_uri + MASS_DELETE_PREFIX)
    write_by_day(frames.gaps, target.root_uri + GAPS_PREFIX)
    gaps, lost = frames.gaps.agg(F.sum("gaps"), F.sum("lost_txids")).first() or (None, None)
    return RollupReport(days=frames.plan.days, mass_delete_days=frames.plan.mass_delete_days,
                        history_days=len(frames.plan.history_days),
                        mass_delete_windows=frames.mass_deletes.count(), gaps=int(gaps or 0),
                        lost_txids=int(lost or 0))


def rollup_frames(spark: SparkSession, catalog: PartitionCatalog, s: RollupSettings,
                  pending_days: frozenset[str] = frozenset()) -> RollupFrames:
    locations = catalog.locations()
    plan = rollup_days.plan(sorted({dt for _, dt in locations}), pending_days=pending_days,
                            from_dt=s.from_dt, to_dt=s.to_dt, window_minutes=s.window_minutes)
    recent = read_curated(spark, locations, plan.read_days).select(*rollups.INPUT_COLUMNS)
    # Owners come from CREATEs (and SNAPSHOTs, OWNER changes, RENAMEs) of any earlier day too:
    # of those days only these rows are read. Their scan still grows with the lake's age;
    # everything after it (the semi-join in attribute_owners on) follows the days rolled up.
    earlier = read_curated(spark, locations, plan.history_days).select(*rollups.INPUT_COLUMNS) \
        .transform(rollups.owner_history)
    events = (recent.transform(rollups.hadoop_events)
              .transform(rollups.attribute_owners(recent.unionByName(earlier)))
              .transform(rollups.with_prefix(s.prefix_depth))
              .persist(StorageLevel.MEMORY_AND_DISK))
    return RollupFrames(
        activity=events.where(F.col("dt").isin(*plan.days))
        .transform(rollups.daily_activity(s.small_file_bytes)),
        mass_deletes=events.transform(rollups.mass_deletes(s.window_minutes, s.threshold))
        .where(F.col("dt").isin(*plan.mass_delete_days)),
        gaps=recent.where(F.col("dt").isin(*plan.days)).transform(rollups.daily_gaps),
        plan=plan,
        events=events,
    )


def write_by_day(df: DataFrame, uri: str) -> None:
    # Dynamic overwrite replaces only the dt partitions present in df.
    (df.write.mode("overwrite").option("partitionOverwriteMode", "dynamic")
     .partitionBy("dt").option("compression", "zstd").parquet(uri))
