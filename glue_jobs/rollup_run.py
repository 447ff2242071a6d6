"""One run of the activity rollups job: the days to roll up chosen (glue_jobs.rollup_days: the
days compaction runs marked, or a range given by hand), their curated events read at the
catalog's current locations with the owner state after an earlier day and the owner facts of the
days between (by hand, or with no state: of every earlier day), the pure transforms of
glue_jobs.rollups applied, each output written by day, then the owner state the next run reads.
The entry script (glue_jobs/activity_rollups.py) parses the arguments, builds the session and
calls roll_up().

Writes curated/activity_daily/dt=<d>/, curated/mass_deletes/dt=<d>/ and curated/gaps_daily/dt=<d>/
(edits purged before the agent read them: how far activity_daily undercounts), replacing only
the dts it computed (dynamic partition overwrite), so re-running a day gives the same rows; then
the owner state (glue_jobs.rollup_days: curated/_state/activity_rollups/owners/); then clears the
marks it rolled up. GAP and SNAPSHOT records (the live agent's) are never activity;
SNAPSHOTs still name owners. Who made each mass delete comes from the attribution table's rows
of the days read (at its catalog's current locations): an attribution run that rewrote a day
marks it as a compaction does, so the next run redoes that day's mass deletes with the users.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from glue_jobs import file_sizes, rollup_days, rollups
from glue_jobs.attribution_log import read_attribution
from glue_jobs.catalog import PartitionCatalog
from glue_jobs.curated_io import read_curated
from glue_jobs.storage import LakeStore
from hdfs_events.lake_layout import ACTIVITY_PREFIX, GAPS_PREFIX, MASS_DELETES_PREFIX, new_run_id


@dataclass(frozen=True, slots=True)
class RollupSettings:
    # Either one given: that range of days (by hand); neither: the days compaction marked.
    from_dt: str = ""
    to_dt: str = ""
    prefix_depth: int = 2
    small_file_bytes: int = 1_048_576
    window_minutes: int = 10
    threshold: int = 1000  # files removed per owner or prefix per window
    bytes_threshold: int = 1 << 40  # or bytes removed (1 TiB)
    trash_pattern: str = file_sizes.DEFAULT_TRASH_PATTERN

    @property
    def by_hand(self) -> bool:
        return bool(self.from_dt or self.to_dt)


@dataclass(frozen=True, slots=True)
class RollupFrames:
    activity: DataFrame
    mass_deletes: DataFrame
    gaps: DataFrame
    plan: rollup_days.DayPlan
    owner_state: DataFrame | None  # after plan.write_state, when the plan writes one


@dataclass(frozen=True, slots=True)
class RollupReport:
    days: tuple[str, ...] = ()
    mass_delete_days: tuple[str, ...] = ()
    history_days: int = 0  # earlier days whose owner facts were read
    owner_state: str = ""  # the owner state read: after this day ("": none)
    owner_state_written: str = ""
    owner_states_dropped: tuple[str, ...] = ()  # stale (a day before them rolled up) or old
    mass_delete_windows: int = 0
    gaps: int = 0
    lost_txids: int = 0
    marks_cleared: int = 0  # compaction runs' documents of days rolled up


def roll_up(spark: SparkSession, source: LakeStore, catalog: PartitionCatalog,
            target: LakeStore, settings: RollupSettings,
            attribution: PartitionCatalog | None = None) -> RollupReport:
    """Rolls up the days the settings select (by hand) or the compaction and attribution
    runs marked in `source`, writes them, then the owner state, and only then clears those
    marks: a run that fails leaves them. The owner states live beside the marks, in `source`;
    a run by hand neither reads nor writes one (its range may start anywhere: it reads every
    earlier day). `attribution`: the attribution table's catalog (None: no mass delete names
    a user)."""
    marked = None if settings.by_hand else rollup_days.pending(source)
    states = () if settings.by_hand else rollup_days.owner_states(source)
    frames = rollup_frames(spark, catalog, settings, marked.days if marked else frozenset(),
                           states=states, state_root=source.root_uri, attribution=attribution)
    plan = frames.plan
    # Before any write: a state after a day rolled up again misses that day's new facts.
    dropped = (rollup_days.drop_owner_states(source, from_day=plan.drop_states_from)
               if plan.drop_states_from else ())
    report = _write(frames, target) if plan.days else RollupReport()
    if frames.owner_state is not None:
        dropped += _write_owner_state(frames.owner_state, source, plan.write_state)
    # Marks of days no longer in the catalog have nothing to roll up: cleared as well.
    return replace(report, owner_states_dropped=dropped,
                   marks_cleared=rollup_days.clear(source, marked) if marked else 0)


def _write(frames: RollupFrames, target: LakeStore) -> RollupReport:
    # Written, then counted for the report: computed once (each action plans and runs the
    # whole lineage again; the mass deletes' is two aggregations over the attributed events).
    write_by_day(frames.activity, target.root_uri + ACTIVITY_PREFIX)
    mass_deletes = rollups.materialised(frames.mass_deletes)
    gaps_daily = rollups.materialised(frames.gaps)
    write_by_day(mass_deletes, target.root_uri + MASS_DELETES_PREFIX)
    write_by_day(gaps_daily, target.root_uri + GAPS_PREFIX)
    gaps, lost = gaps_daily.agg(F.sum("gaps"), F.sum("lost_txids")).first() or (None, None)
    return RollupReport(days=frames.plan.days, mass_delete_days=frames.plan.mass_delete_days,
                        history_days=len(frames.plan.history_days),
                        owner_state=frames.plan.owner_state,
                        owner_state_written=frames.plan.write_state,
                        mass_delete_windows=mass_deletes.count(), gaps=int(gaps or 0),
                        lost_txids=int(lost or 0))


def _write_owner_state(state: DataFrame, store: LakeStore, through: str) -> tuple[str, ...]:
    """Spark's files, then the commit mark (one PUT): a crash in between leaves a state no
    run reads. Then the states too old to be worth keeping go."""
    (state.write.mode("overwrite").option("compression", "zstd")
     .parquet(store.root_uri + rollup_days.owner_state_data(through)))
    rollup_days.commit_owner_state(store, through, new_run_id())
    return rollup_days.drop_owner_states(store, before=rollup_days.keep_states_after(through))


def rollup_frames(spark: SparkSession, catalog: PartitionCatalog, s: RollupSettings,
                  pending_days: frozenset[str] = frozenset(), *, states: Sequence[str] = (),
                  state_root: str = "", attribution: PartitionCatalog | None = None
                  ) -> RollupFrames:
    locations = catalog.locations()
    plan = rollup_days.plan(sorted({dt for _, dt in locations}), pending_days=pending_days,
                            from_dt=s.from_dt, to_dt=s.to_dt, window_minutes=s.window_minutes,
                            owner_states=states)
    recent = read_curated(spark, locations, plan.read_days).select(*rollups.INPUT_COLUMNS)
    # Owners come from CREATEs (and SNAPSHOTs, OWNER changes, RENAMEs) of any earlier day too,
    # and sizes from their CLOSEs, TRUNCATEs, RENAMEs and UNLINKs: the path state after an
    # earlier day holds them up to that day, so of the days between it and the first read only
    # those rows are read (of every earlier day without a state). The state's size is the
    # number of paths, not of events or days; it is read once, with its schema (a state written
    # before it held files reads as one without them).
    state = (spark.read.schema(rollups.STATE_SCHEMA)
             .parquet(state_root + rollup_days.owner_state_data(plan.owner_state))
             if plan.owner_state else None)
    earlier = read_curated(spark, locations, plan.history_days).select(*rollups.INPUT_COLUMNS) \
        .transform(rollups.path_history)
    known = recent.unionByName(earlier)
    measures = file_sizes.replayed(known, rollups.state_files(state), s.trash_pattern)
    # Computed once: the three outputs read it (rollups.materialised).
    events = rollups.materialised(recent.transform(rollups.hadoop_events)
                                  .transform(rollups.attribute_owners(known, state))
                                  .transform(rollups.with_prefix(s.prefix_depth))
                                  .transform(file_sizes.measure_events(measures)))
    after = plan.write_state
    # The attribution partitions are the events' own (cluster, dt): those of the days read.
    read = set(plan.read_days)
    who = None if attribution is None else read_attribution(
        spark, [loc for (_, dt), loc in attribution.locations().items() if dt in read])
    return RollupFrames(
        activity=events.where(F.col("dt").isin(*plan.days))
        .transform(rollups.daily_activity(s.small_file_bytes)),
        mass_deletes=events.transform(rollups.mass_deletes(s.window_minutes, s.threshold,
                                                           s.bytes_threshold, who))
        .where(F.col("dt").isin(*plan.mass_delete_days)),
        gaps=recent.where(F.col("dt").isin(*plan.days)).transform(rollups.daily_gaps),
        plan=plan,
        owner_state=rollups.path_state(
            recent.where(F.col("dt") <= after).transform(rollups.path_history)
            .unionByName(earlier), state, s.trash_pattern) if after else None,
    )


def write_by_day(df: DataFrame, uri: str) -> None:
    # Dynamic overwrite replaces only the dt partitions present in df.
    (df.write.mode("overwrite").option("partitionOverwriteMode", "dynamic")
     .partitionBy("dt").option("compression", "zstd").parquet(uri))
