"""Glue job: compacts new raw event objects into the curated events table, exactly once.

    python -m glue_jobs.compact_events --source file:///lake --target file:///lake

The entry script: parses the arguments, builds the session and runs
glue_jobs.compaction_run.compact (what one run does is told there). Prints a JSON report.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import asdict
from datetime import timedelta

from pyspark.sql import SparkSession

from glue_jobs.catalog import catalog_for
from glue_jobs.compaction_run import CompactionSettings, compact
from glue_jobs.runtime import Arg, job_session, resolve_args
from glue_jobs.storage import store_for

JOB_NAME = "compact_events"
SPEC = (
    Arg("source", "lake URI that holds raw/ (file:///path or s3://bucket[/prefix])"),
    Arg("target", "lake URI for curated/, quarantine/ and the watermark"),
    Arg("lookback_days", "a key already curated this many days either side is not added again",
        "1"),
    Arg("target_file_mb", "aim for Parquet files of about this size", "128"),
    Arg("bytes_per_row", "Parquet bytes per event assumed before a partition exists", "60"),
    Arg("retain_hours", "superseded run prefixes are deleted after this grace period", "24"),
    Arg("compression", "Parquet codec: zstd or snappy", "zstd"),
    Arg("catalog_database", "Glue database of the table; empty: a JSON catalog in the target",
        ""),
    Arg("catalog_table", "Glue table of the curated events", "events"),
)


def settings_from(args: dict[str, str]) -> CompactionSettings:
    try:
        return CompactionSettings(
            lookback_days=int(args["lookback_days"]),
            target_file_bytes=int(float(args["target_file_mb"]) * 1_048_576),
            bytes_per_row=float(args["bytes_per_row"]),
            retain=timedelta(hours=float(args["retain_hours"])),
            compression=args["compression"],
        )
    except ValueError as exc:
        raise SystemExit(f"{JOB_NAME}: bad numeric argument: {exc}") from None


def main(argv: Sequence[str] | None = None, spark: SparkSession | None = None) -> int:
    args = resolve_args(sys.argv[1:] if argv is None else argv, SPEC, prog=JOB_NAME)
    settings = settings_from(args)
    source, target = store_for(args["source"]), store_for(args["target"])
    catalog = catalog_for(args["catalog_database"], args["catalog_table"], target)
    with job_session(JOB_NAME, args, spark, uris=(source.root_uri, target.root_uri)) as session:
        report = compact(session, source, target, catalog, settings)
    print(json.dumps({"job": JOB_NAME, **asdict(report)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
