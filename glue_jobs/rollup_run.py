"""One run of the activity rollups job: the curated events table read at its catalog's current
locations, the pure transforms of glue_jobs.rollups applied, each output written by day. The
entry script (glue_jobs/activity_rollups.py) parses the arguments, builds the session and calls
roll_up().

Writes curated/activity_daily/dt=<d>/, curated/mass_deletes/dt=<d>/ and curated/gaps_daily/dt=<d>/
(edits purged before the agent read them: how far activity_daily undercounts), replacing only
the dts it computed (dynamic partition overwrite), so re-running a day gives the same rows.
GAP and SNAPSHOT records (the live agent's) are never activity; SNAPSHOTs still name owners.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from glue_jobs import rollups
from glue_jobs.catalog import PartitionCatalog
from glue_jobs.curated_io import read_curated
from glue_jobs.layout import ACTIVITY_PREFIX, GAPS_PREFIX, MASS_DELETE_PREFIX
from glue_jobs.storage import LakeStore


@dataclass(frozen=True, slots=True)
class RollupSettings:
    from_dt: str = ""
    to_dt: str = ""
    prefix_depth: int = 2
    small_file_bytes: int = 1_048_576
    window_minutes: int = 10
    threshold: int = 1000


@dataclass(frozen=True, slots=True)
class RollupFrames:
    activity: DataFrame
    mass_deletes: DataFrame
    gaps: DataFrame
    days: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RollupReport:
    days: tuple[str, ...] = ()
    mass_delete_windows: int = 0
    gaps: int = 0
    lost_txids: int = 0


def roll_up(spark: SparkSession, catalog: PartitionCatalog, target: LakeStore,
            settings: RollupSettings) -> RollupReport:
    """Computes the rollups of the days the settings and the catalog select and writes them."""
    frames = rollup_frames(spark, catalog, settings)
    if not frames.days:
        return RollupReport()
    write_by_day(frames.activity, target.root_uri + ACTIVITY_PREFIX)
    write_by_day(frames.mass_deletes, target.root_uri + MASS_DELETE_PREFIX)
    write_by_day(frames.gaps, target.root_uri + GAPS_PREFIX)
    gaps, lost = frames.gaps.agg(F.sum("gaps"), F.sum("lost_txids")).first() or (None, None)
    return RollupReport(days=frames.days, mass_delete_windows=frames.mass_deletes.count(),
                        gaps=int(gaps or 0), lost_txids=int(lost or 0))


def rollup_frames(spark: SparkSession, catalog: PartitionCatalog, s: RollupSettings
                  ) -> RollupFrames:
    locations = catalog.locations()
    all_days = sorted({dt for _, dt in locations})
    days = tuple(d for d in all_days
                 if (not s.from_dt or d >= s.from_dt) and (not s.to_dt or d <= s.to_dt))
    # Owners come from CREATEs of any earlier day too: the history runs up to the last day.
    history = read_curated(spark, locations, [d for d in all_days if d <= (days or ("",))[-1]]) \
        .select(*rollups.INPUT_COLUMNS)
    in_days = history.where(F.col("dt").isin(*days))
    events = (in_days.transform(rollups.hadoop_events)
              .transform(rollups.attribute_owners(history))
              .transform(rollups.with_prefix(s.prefix_depth)))
    return RollupFrames(
        activity=events.transform(rollups.daily_activity(s.small_file_bytes)),
        mass_deletes=events.transform(rollups.mass_deletes(s.window_minutes, s.threshold))
        .where(F.col("dt").isin(*days)),
        gaps=in_days.transform(rollups.daily_gaps),
        days=days,
    )


def write_by_day(df: DataFrame, uri: str) -> None:
    # Dynamic overwrite replaces only the dt partitions present in df.
    (df.write.mode("overwrite").option("partitionOverwriteMode", "dynamic")
     .partitionBy("dt").option("compression", "zstd").parquet(uri))
