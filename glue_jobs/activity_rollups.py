"""Glue job: daily activity per directory prefix and owner, and mass-delete windows, from the
curated events table (read only at its catalog's current locations).

    python -m glue_jobs.activity_rollups --source file:///lake --target file:///lake

Without --from_dt/--to_dt (the scheduled run) it rolls up the days compaction and attribution
runs marked since the last rollups run (glue_jobs.rollup_days); with either, that range of days,
marks untouched. Mass deletes name their users from the attribution table
(glue_jobs/attribute_events.py) of the same lake.
The entry script: parses the arguments, builds the session and runs
glue_jobs.rollup_run.roll_up (what it writes is told there). Prints a JSON report.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from dataclasses import asdict

from pyspark.sql import SparkSession

from glue_jobs.attribute_events import attribution_catalog
from glue_jobs.catalog import catalog_for
from glue_jobs.file_sizes import DEFAULT_TRASH_PATTERN
from glue_jobs.rollup_run import RollupSettings, roll_up
from glue_jobs.runtime import Arg, job_session, resolve_args
from glue_jobs.storage import store_for
from hdfs_events.lake_layout import ATTRIBUTION_TABLE

JOB_NAME = "activity_rollups"
SPEC = (
    Arg("source", "lake URI whose curated events table is rolled up"),
    Arg("target", "lake URI for curated/activity_daily/, mass_deletes/ and gaps_daily/"),
    # Neither given (the scheduled run): the days compaction runs marked, and the later ones.
    Arg("from_dt", "first day to roll up by hand, YYYY-MM-DD; empty with to_dt given: the "
        "first in the catalog; both empty: the days compaction marked", ""),
    Arg("to_dt", "last day to roll up by hand, YYYY-MM-DD; empty with from_dt given: the last "
        "in the catalog", ""),
    Arg("prefix_depth", "directory components that make a prefix", "2"),
    Arg("small_file_bytes", "a CLOSE under this size is a small file", "1048576"),
    Arg("mass_delete_window_minutes", "tumbling window of the mass-delete detector", "10"),
    Arg("mass_delete_threshold", "files removed (by UNLINKs and moves into the trash) per owner "
        "or prefix per window that raise a flag", "1000"),
    Arg("mass_delete_bytes_threshold", "bytes removed per owner or prefix per window that "
        "raise a flag", str(1 << 40)),
    Arg("trash_pattern", "regular expression of the paths in a trash: a RENAME into one is a "
        "delete", DEFAULT_TRASH_PATTERN),
    Arg("catalog_database", "Glue database of the events table; empty: the lake's JSON catalog",
        ""),
    Arg("catalog_table", "Glue table of the curated events", "events"),
    Arg("attribution_table", "Glue table of who made each event (in --catalog_database; "
        "without one, the lake's JSON catalog): the users of each mass delete",
        ATTRIBUTION_TABLE),
)


def settings_from(args: dict[str, str]) -> RollupSettings:
    try:
        return RollupSettings(
            from_dt=args["from_dt"], to_dt=args["to_dt"],
            prefix_depth=int(args["prefix_depth"]),
            small_file_bytes=int(args["small_file_bytes"]),
            window_minutes=int(args["mass_delete_window_minutes"]),
            threshold=int(args["mass_delete_threshold"]),
            bytes_threshold=int(args["mass_delete_bytes_threshold"]),
            trash_pattern=_pattern(args["trash_pattern"]),
        )
    except ValueError as exc:
        raise SystemExit(f"{JOB_NAME}: bad numeric argument: {exc}") from None


def _pattern(text: str) -> str:
    try:
        re.compile(text)
    except re.error as exc:
        raise SystemExit(f"{JOB_NAME}: --trash_pattern must be a regular expression: {exc}") \
            from None
    return text


def main(argv: Sequence[str] | None = None, spark: SparkSession | None = None) -> int:
    args = resolve_args(sys.argv[1:] if argv is None else argv, SPEC, prog=JOB_NAME)
    settings = settings_from(args)
    source, target = store_for(args["source"]), store_for(args["target"])
    catalog = catalog_for(args["catalog_database"], args["catalog_table"], source)
    who = attribution_catalog(args["catalog_database"], args["attribution_table"], source)
    with job_session(JOB_NAME, args, spark, uris=(source.root_uri, target.root_uri)) as session:
        report = roll_up(session, source, catalog, target, settings, who)
    print(json.dumps({"job": JOB_NAME, **asdict(report)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
