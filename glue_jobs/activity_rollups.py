"""Glue job: daily activity per directory prefix and owner, and mass-delete windows, from the
curated events table (read only at its catalog's current locations).

    python -m glue_jobs.activity_rollups --source file:///lake --target file:///lake

Writes curated/activity_daily/dt=<d>/, curated/mass_deletes/dt=<d>/ and curated/gaps_daily/dt=<d>/
(edits purged before the agent read them: how far activity_daily undercounts), replacing only
the dts it computed (dynamic partition overwrite), so re-running a day gives the same rows.
GAP and SNAPSHOT records (the live agent's) are never activity; SNAPSHOTs still name owners.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from glue_jobs import rollups as R
from glue_jobs.catalog import PartitionCatalog
from glue_jobs.compact_events import catalog_for
from glue_jobs.curated_io import read_curated
from glue_jobs.layout import ACTIVITY_PREFIX, GAPS_PREFIX, MASS_DELETE_PREFIX
from glue_jobs.runtime import Arg, job_session, resolve_args
from glue_jobs.storage import store_for

JOB_NAME = "activity_rollups"
SPEC = (
    Arg("source", "lake URI whose curated events table is rolled up"),
    Arg("target", "lake URI for curated/activity_daily/, mass_deletes/ and gaps_daily/"),
    Arg("from_dt", "first day to roll up, YYYY-MM-DD; empty: the first in the catalog", ""),
    Arg("to_dt", "last day to roll up, YYYY-MM-DD; empty: the last in the catalog", ""),
    Arg("prefix_depth", "directory components that make a prefix", "2"),
    Arg("small_file_bytes", "a CLOSE under this size is a small file", "1048576"),
    Arg("mass_delete_window_minutes", "tumbling window of the mass-delete detector", "10"),
    Arg("mass_delete_threshold", "UNLINKs per owner or prefix per window that raise a flag",
        "1000"),
    Arg("catalog_database", "Glue database of the events table; empty: the lake's JSON catalog",
        ""),
    Arg("catalog_table", "Glue table of the curated events", "events"),
)


@dataclass(frozen=True, slots=True)
class RollupSettings:
    from_dt: str = ""
    to_dt: str = ""
    prefix_depth: int = 2
    small_file_bytes: int = 1_048_576
    window_minutes: int = 10
    threshold: int = 1000


@dataclass(frozen=True, slots=True)
class Rollups:
    activity: DataFrame
    mass_deletes: DataFrame
    gaps: DataFrame
    days: tuple[str, ...]


def rollups(spark: SparkSession, catalog: PartitionCatalog, s: RollupSettings) -> Rollups:
    locations = catalog.locations()
    all_days = sorted({dt for _, dt in locations})
    days = tuple(d for d in all_days
                 if (not s.from_dt or d >= s.from_dt) and (not s.to_dt or d <= s.to_dt))
    # Owners come from CREATEs of any earlier day too: the history runs up to the last day.
    history = read_curated(spark, locations, [d for d in all_days if d <= (days or ("",))[-1]]) \
        .select(*R.INPUT_COLUMNS)
    in_days = history.where(F.col("dt").isin(*days))
    events = (in_days.transform(R.hadoop_events)
              .transform(R.attribute_owners(history))
              .transform(R.with_prefix(s.prefix_depth)))
    return Rollups(
        activity=events.transform(R.daily_activity(s.small_file_bytes)),
        mass_deletes=events.transform(R.mass_deletes(s.window_minutes, s.threshold))
        .where(F.col("dt").isin(*days)),
        gaps=in_days.transform(R.daily_gaps),
        days=days,
    )


def write_by_day(df: DataFrame, uri: str) -> None:
    # Dynamic overwrite replaces only the dt partitions present in df.
    (df.write.mode("overwrite").option("partitionOverwriteMode", "dynamic")
     .partitionBy("dt").option("compression", "zstd").parquet(uri))


def settings_from(args: dict[str, str]) -> RollupSettings:
    try:
        return RollupSettings(
            from_dt=args["from_dt"], to_dt=args["to_dt"],
            prefix_depth=int(args["prefix_depth"]),
            small_file_bytes=int(args["small_file_bytes"]),
            window_minutes=int(args["mass_delete_window_minutes"]),
            threshold=int(args["mass_delete_threshold"]),
        )
    except ValueError as exc:
        raise SystemExit(f"{JOB_NAME}: bad numeric argument: {exc}") from None


def main(argv: Sequence[str] | None = None, spark: SparkSession | None = None) -> int:
    args = resolve_args(sys.argv[1:] if argv is None else argv, SPEC, prog=JOB_NAME)
    settings = settings_from(args)
    source, target = store_for(args["source"]), store_for(args["target"])
    with job_session(JOB_NAME, args, spark, uris=(source.root_uri, target.root_uri)) as session:
        result = rollups(session, catalog_for(args, source), settings)
        if result.days:
            write_by_day(result.activity, target.root_uri + ACTIVITY_PREFIX)
            write_by_day(result.mass_deletes, target.root_uri + MASS_DELETE_PREFIX)
            write_by_day(result.gaps, target.root_uri + GAPS_PREFIX)
        flagged = result.mass_deletes.count() if result.days else 0
        gaps = result.gaps.agg(F.sum("gaps"), F.sum("lost_txids")).first() \
            if result.days else None
    print(json.dumps({"job": JOB_NAME, "days": list(result.days),
                      "mass_delete_windows": flagged,
                      "gaps": int((gaps and gaps[0]) or 0),
                      "lost_txids": int((gaps and gaps[1]) or 0)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
