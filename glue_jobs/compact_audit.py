"""Glue job: compacts new audit objects (raw-audit/) into the curated audit table, exactly once
per audit line.

    python -m glue_jobs.compact_audit --source file:///lake --target file:///lake

The entry script: parses the arguments, builds the session and runs
glue_jobs.audit_compaction.compact_audit (what one run does is told there). Prints a JSON report.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import asdict
from datetime import timedelta

from pyspark.sql import SparkSession

from glue_jobs.audit_compaction import AuditCompactionSettings, compact_audit
from glue_jobs.catalog import GlueCatalog, JsonFileCatalog, PartitionCatalog
from glue_jobs.layout import AUDIT_LOCAL_CATALOG_KEY
from glue_jobs.runtime import Arg, job_session, resolve_args
from glue_jobs.storage import LakeStore, store_for
from hdfs_events.lake_layout import AUDIT_TABLE

JOB_NAME = "compact_audit"
SPEC = (
    Arg("source", "lake URI that holds raw-audit/ (file:///path or s3://bucket[/prefix])"),
    Arg("target", "lake URI for curated/, quarantine/ and the watermark"),
    Arg("lookback_days", "a line already published this many days either side is not added "
        "again", "1"),
    Arg("retain_hours", "superseded run prefixes are deleted after this grace period", "24"),
    Arg("compression", "Parquet codec: zstd or snappy", "zstd"),
    Arg("catalog_database", "Glue database of the table; empty: a JSON catalog in the target",
        ""),
    Arg("catalog_table", "Glue table of the curated audit records", AUDIT_TABLE),
)


def settings_from(args: dict[str, str]) -> AuditCompactionSettings:
    try:
        lookback = int(args["lookback_days"])
        retain = timedelta(hours=float(args["retain_hours"]))
    except ValueError as exc:
        raise SystemExit(f"{JOB_NAME}: bad numeric argument: {exc}") from None
    if lookback < 0:
        raise SystemExit(f"{JOB_NAME}: --lookback_days must be 0 or more, got {lookback}")
    if args["compression"] not in ("zstd", "snappy"):
        raise SystemExit(f"{JOB_NAME}: --compression must be zstd or snappy, "
                         f"got {args['compression']!r}")
    return AuditCompactionSettings(lookback_days=lookback, retain=retain,
                                   compression=args["compression"])


def audit_catalog(database: str, table: str, lake: LakeStore) -> PartitionCatalog:
    """The Glue table `database`.`table` when a database is named, else the lake's JSON
    catalog of the audit table."""
    if database:
        import boto3  # on Glue; local runs use the JSON catalog and need no AWS library

        return GlueCatalog(boto3.client("glue"), database, table)
    return JsonFileCatalog(lake, AUDIT_LOCAL_CATALOG_KEY, AUDIT_TABLE)


def main(argv: Sequence[str] | None = None, spark: SparkSession | None = None) -> int:
    args = resolve_args(sys.argv[1:] if argv is None else argv, SPEC, prog=JOB_NAME)
    settings = settings_from(args)
    source, target = store_for(args["source"]), store_for(args["target"])
    catalog = audit_catalog(args["catalog_database"], args["catalog_table"], target)
    with job_session(JOB_NAME, args, spark, uris=(source.root_uri, target.root_uri)) as session:
        report = compact_audit(session, source, target, catalog, settings)
    print(json.dumps({"job": JOB_NAME, **asdict(report)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
