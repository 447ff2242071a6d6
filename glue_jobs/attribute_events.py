"""Glue job: who made each change. Joins the curated events to the curated audit records and
replaces the attribution table's days whose events or audit records changed since its last run.

    python -m glue_jobs.attribute_events --source file:///lake --target file:///lake

The entry script: parses the arguments, builds the session and runs
glue_jobs.attribution_run.attribute (what one run does is told there). Prints a JSON report.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import asdict
from datetime import timedelta

from pyspark.sql import SparkSession

from glue_jobs.attribution import DEFAULT_WINDOW_MS
from glue_jobs.attribution_run import AttributionSettings, attribute
from glue_jobs.catalog import GlueCatalog, JsonFileCatalog, PartitionCatalog, catalog_for
from glue_jobs.compact_audit import audit_catalog
from glue_jobs.layout import ATTRIBUTION_LOCAL_CATALOG_KEY
from glue_jobs.runtime import Arg, job_session, resolve_args
from glue_jobs.storage import LakeStore, store_for
from hdfs_events.lake_layout import ATTRIBUTION_TABLE, AUDIT_TABLE, EVENTS_TABLE

JOB_NAME = "attribute_events"
SPEC = (
    Arg("source", "lake URI whose curated events and audit tables are joined (file:///path or "
        "s3://bucket[/prefix])"),
    Arg("target", "lake URI for curated/attribution/ and the job's inputs document"),
    Arg("window_ms", "how long after its edit an audit line may be written", str(DEFAULT_WINDOW_MS)),
    Arg("retain_hours", "superseded run prefixes are deleted after this grace period", "24"),
    Arg("catalog_database", "Glue database of the three tables; empty: JSON catalogs in the lake",
        ""),
    Arg("events_table", "Glue table of the curated events", EVENTS_TABLE),
    Arg("audit_table", "Glue table of the curated audit records", AUDIT_TABLE),
    Arg("attribution_table", "Glue table of the attribution rows", ATTRIBUTION_TABLE),
    Arg("log_group", "CloudWatch Logs group for one JSON line per changed attribution, read by "
        "the saved Logs Insights queries; empty: no lines", ""),
)


def settings_from(args: dict[str, str]) -> AttributionSettings:
    try:
        window = int(args["window_ms"])
        retain = timedelta(hours=float(args["retain_hours"]))
    except ValueError as exc:
        raise SystemExit(f"{JOB_NAME}: bad numeric argument: {exc}") from None
    if window < 0:
        raise SystemExit(f"{JOB_NAME}: --window_ms must be 0 or more, got {window}")
    return AttributionSettings(window_ms=window, retain=retain, log_group=args["log_group"])


def attribution_catalog(database: str, table: str, lake: LakeStore) -> PartitionCatalog:
    if database:
        import boto3  # on Glue; local runs use the JSON catalog and need no AWS library

        return GlueCatalog(boto3.client("glue"), database, table)
    return JsonFileCatalog(lake, ATTRIBUTION_LOCAL_CATALOG_KEY, ATTRIBUTION_TABLE)


def main(argv: Sequence[str] | None = None, spark: SparkSession | None = None) -> int:
    args = resolve_args(sys.argv[1:] if argv is None else argv, SPEC, prog=JOB_NAME)
    settings = settings_from(args)
    source, target = store_for(args["source"]), store_for(args["target"])
    db = args["catalog_database"]
    events = catalog_for(db, args["events_table"], source)
    audit = audit_catalog(db, args["audit_table"], source)
    catalog = attribution_catalog(db, args["attribution_table"], target)
    with job_session(JOB_NAME, args, spark, uris=(source.root_uri, target.root_uri)) as session:
        report = attribute(session, target, events, audit, catalog, settings)
    print(json.dumps({"job": JOB_NAME, **asdict(report)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
