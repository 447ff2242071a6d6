"""Pure transforms of the audit compaction (glue_jobs/audit_compaction.py runs them): raw audit
lines in, table rows and quarantined lines out, and the exactly-once step on the line identity.

A line's reason names the field and the rule it breaks; a line with a reason never reaches the
table and never holds back the other lines of its object.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from glue_jobs.audit_schema import AUDIT_COLUMNS, AUDIT_KEY_COLUMNS, AUDIT_RAW_LINE_SCHEMA
from glue_jobs.compaction import curated_dt
from glue_jobs.schema import CORRUPT_RECORD

# Raw lines arrive with: object (the raw-audit/ key), raw_cluster and raw_dt (from the key's
# partition directories), value (the line).
AUDIT_LINE_COLUMNS = ("object", "raw_cluster", "raw_dt", "value")
NOT_A_RECORD = ("line: not a JSON object of the audit record's fields and types "
                "(hdfs_events.audit.AuditRecord)")


def parse_audit_lines(lines: DataFrame) -> DataFrame:
    """(object, raw_cluster, raw_dt, value) -> the same plus `record` (the parsed struct) and
    `reason` (null: the line is a table row). Blank lines carry nothing and are dropped."""
    record = F.from_json("value", AUDIT_RAW_LINE_SCHEMA, {
        "mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT_RECORD})
    return (lines.where(F.trim("value") != "")
            .withColumn("record", record)
            .withColumn("reason", _reason(F.col("record"), F.col("raw_cluster"))))


def _reason(r: Column, raw_cluster: Column) -> Column:
    """The first rule the line breaks, or null."""
    def missing(name: str, why: str) -> tuple[Column, Column]:
        return r[name].isNull(), F.lit(f"{name}: null ({why})")

    rules: list[tuple[Column, Column]] = [
        # A non-object line (an array, a number) parses to a null struct.
        (r.isNull() | r[CORRUPT_RECORD].isNotNull(), F.lit(NOT_A_RECORD)),
        *(missing(n, "part of the line's identity (cluster, host, file_id, offset)")
          for n in AUDIT_KEY_COLUMNS),
        (r["offset"] < 0, F.format_string(
            "offset: %d is negative (a byte offset in the audit log file)", r["offset"])),
        # The agent's principal may write only its own cluster's prefix: a record naming another
        # cluster is that principal speaking for a cluster it does not own.
        (r["cluster"] != raw_cluster, F.format_string(
            "cluster: %s in an object under raw-audit/cluster=%s/ (a cluster's records are "
            "accepted only from its own prefix)", r["cluster"], raw_cluster)),
        (r["reason"].isNotNull(), F.concat(F.lit("line not parsed by the agent: "),
                                           r["reason"])),
        missing("time", "a parsed line has its time; the table files it by its UTC day"),
        missing("allowed", "a parsed line says whether the NameNode allowed it"),
        missing("cmd", "a parsed line names its command"),
    ]
    reason = F.when(*rules[0])
    for condition, why in rules[1:]:
        reason = reason.when(condition, why)
    return reason


def audit_rows(parsed: DataFrame) -> DataFrame:
    """The table's rows of the lines without a reason: AUDIT_COLUMNS, dt (the UTC day of time)
    and object (the raw key, for a stable choice among copies)."""
    return (parsed.where(F.col("reason").isNull())
            .select("object", "raw_dt", *[F.col("record")[n].alias(n) for n in AUDIT_COLUMNS])
            .withColumn("dt", curated_dt(F.col("time")))
            .drop("raw_dt"))


def quarantined_lines(parsed: DataFrame) -> DataFrame:
    """(object, reason, line) of each line with a reason."""
    return parsed.where(F.col("reason").isNotNull()).select(
        "object", "reason", F.col("value").alias("line"))


def first_copies(rows: DataFrame) -> DataFrame:
    """One row per identity: a re-sent object or a line read twice after a crash repeats its
    identity with the same content; the copy kept is the one of the smallest object key."""
    rest = [c for c in rows.columns if c not in AUDIT_KEY_COLUMNS and c != "object"]
    return (rows.groupBy(*AUDIT_KEY_COLUMNS)
            .agg(F.min(F.struct("object", *rest)).alias("_first"))
            .select(*AUDIT_KEY_COLUMNS, "_first.*")
            .select(*rows.columns))


def not_published(published: DataFrame) -> Callable[[DataFrame], DataFrame]:
    """Rows whose identity is not among `published`'s (the table's rows near them)."""
    keys = published.select(*AUDIT_KEY_COLUMNS)
    return lambda rows: rows.join(keys, on=list(AUDIT_KEY_COLUMNS), how="left_anti")
